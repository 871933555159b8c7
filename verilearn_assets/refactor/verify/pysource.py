"""A repository's Python read on the host (task mining, the syntax check): parsed and
compiled without the warnings its own text raises. An old `"\\s"` escape in a published
package is the package's business; shown as ours it reads as something wrong here."""

from __future__ import annotations

import ast
import warnings


def parse(source: str | bytes) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(source)


def compile_check(source: str | bytes, filename: str) -> None:
    """Raises SyntaxError (and the recursion/memory errors of a hostile text) as `compile`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        compile(source, filename, "exec", dont_inherit=True)
