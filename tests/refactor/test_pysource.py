"""A repository's own text raises no warning of ours when the host parses or compiles it."""

from __future__ import annotations

import warnings

import pytest

from verilearn_assets.refactor.verify import pysource

OLD_ESCAPE = 'import re\nPATTERN = re.compile("\\s+")\n'  # "\s": invalid escape sequence


def test_parse_and_compile_keep_the_repository_s_warnings_to_themselves() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises((SyntaxError, DeprecationWarning, SyntaxWarning)):
            compile(OLD_ESCAPE, "x.py", "exec", dont_inherit=True)  # the control: it warns
        assert pysource.parse(OLD_ESCAPE).body
        pysource.compile_check(OLD_ESCAPE, "x.py")


def test_a_syntax_error_still_raises() -> None:
    with pytest.raises(SyntaxError):
        pysource.compile_check("def f(:\n", "broken.py")
    with pytest.raises(SyntaxError):
        pysource.parse("def f(:\n")
