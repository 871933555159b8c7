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
from pathlib import Path

SUBCOMMAND_MODULES = ("demo", "report", "gate", "inspect", "sandbox", "questions", "train", "eval")


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


INTERNAL_ERROR = 3


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (CliError, ValueError, OSError) as exc:
        print(f"verilearn {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug or a broken dependency: one line here, the trace in a log
        log = crash_log(args.command)
        first = (str(exc).strip().splitlines() or [""])[0]
        print(
            f"verilearn {args.command}: internal error: {type(exc).__name__}: {first} "
            f"(traceback in {log})",
            file=sys.stderr,
        )
        return INTERNAL_ERROR


def crash_log(command: str) -> Path:
    """Write the current exception's traceback under `$VERILEARN_HOME/logs/`; its path."""
    import os
    import time
    import traceback

    home = Path(os.environ.get("VERILEARN_HOME", ".verilearn")).resolve()
    path = home / "logs" / f"{command}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(traceback.format_exc())
    return path


if __name__ == "__main__":
    sys.exit(main())
