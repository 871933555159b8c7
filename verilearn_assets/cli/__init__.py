"""`verilearn`: a thin command line over the same code the assets call.

Each subcommand lives in its own module exposing `register(subparsers)`; the handler it
sets returns an exit code. A family adds its own subcommands with a `cli.py` beside its
`family.py` (`verilearn dafny …`); those are found without editing this file. Bad input raises `CliError` (or a ValueError/OSError), which
is printed as one clear line on stderr with exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

SUBCOMMAND_MODULES = ("demo", "report", "gate", "sandbox", "questions")


class CliError(Exception):
    """Bad input or a failed precondition: printed without a traceback."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="verilearn", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMAND_MODULES:
        module = importlib.import_module(f"verilearn_assets.cli.{name}")
        module.register(sub)
    for name in family_cli_modules():
        importlib.import_module(name).register(sub)
    return parser


def family_cli_modules() -> list[str]:
    """`verilearn_assets.<family>.cli` for every family package that has one."""
    import verilearn_assets

    root = Path(verilearn_assets.__path__[0])
    return [
        f"verilearn_assets.{info.name}.cli"
        for info in sorted(pkgutil.iter_modules([str(root)]), key=lambda i: i.name)
        if info.ispkg
        and (root / info.name / "family.py").is_file()
        and (root / info.name / "cli.py").is_file()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (CliError, ValueError, OSError) as exc:
        print(f"verilearn {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
