"""`verilearn`: a thin command line over the same code the assets call.

Each subcommand lives in its own module exposing `register(subparsers)`; the handler it
sets returns an exit code. A family adds its own subcommands with a `cli.py` beside its
`family.py` (`verilearn dafny …`); those are found without editing this file. Bad input
raises `CliError` (or a ValueError/OSError), which is printed as one clear line on stderr
with exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

SUBCOMMAND_MODULES = ("demo", "report", "gate", "inspect", "sandbox", "questions")


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
    """`<family package>.cli` for every registered family that has one."""
    from verilearn_assets.core.family import family_modules

    return [f"{m}.cli" for m in family_modules() if importlib.util.find_spec(f"{m}.cli")]


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
