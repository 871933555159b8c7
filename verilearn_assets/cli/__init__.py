"""`verilearn`: a thin command line over the same code the assets call.

Each subcommand lives in its own module exposing `register(subparsers)`; the handler it
sets returns an exit code. A family adds its own subcommands with a `cli.py` beside its
`family.py` (`verilearn dafny …`); those are found without editing this file. Bad input
raises `CliError` (or a ValueError/OSError), which is printed as one clear line on stderr
with exit code 2.

Every subcommand's `--help` says what it does, lists its flags and ends on one example: a
module gives its examples in `EXAMPLES` (`{"report": "verilearn report --format csv"}`, keyed
by the command path); a command without one gets its usage with the required arguments. A
mistyped command or choice names the closest valid one.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import importlib.util
import sys
from pathlib import Path

from verilearn_assets.core.home import resolve_home

SUBCOMMAND_MODULES = (
    "demo",
    "report",
    "gate",
    "inspect",
    "sandbox",
    "train",
    "eval",
    "experiment",
    "fingerprint",
)

DESCRIPTION = """\
Verified training data for LLM agents, as a Dagster asset graph: materialize it, check the
gate, read the reports, look at the records, train and evaluate a model. Each command runs
the same code the assets run, against the home in $VERILEARN_HOME (default ./.verilearn).
Bad input exits 2 with one line; an unexpected failure exits 3 with its traceback in
$VERILEARN_HOME/logs/.
"""

EXAMPLES_EPILOG = """\
examples:
  verilearn demo                      # materialize the default graph, print the report
  verilearn report --format markdown  # the report tables, from DuckDB
  verilearn inspect questions --split dev --limit 5
  verilearn COMMAND --help            # what a command does, its flags, an example
"""


class CliError(Exception):
    """Bad input or a failed precondition: printed without a traceback."""


class HelpFormatter(argparse.HelpFormatter):
    """Wraps prose like argparse does, but keeps indented lines (examples) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        for block in text.split("\n\n"):
            lines = block.splitlines()
            if any(line.startswith("  ") for line in lines):
                out.append("\n".join(indent + line for line in lines))
            else:
                out.append(super()._fill_text(" ".join(lines), width, indent))
        return "\n\n".join(out)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose invalid choices (a mistyped command, say) name the closest one."""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        if action.choices is None or value in action.choices:
            return
        choices = [str(c) for c in action.choices]
        close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise argparse.ArgumentError(
            action, f"invalid choice: {value!r}{hint} (choose from {', '.join(choices)})"
        )


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="verilearn",
        description=DESCRIPTION,
        epilog=EXAMPLES_EPILOG,
        formatter_class=HelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    examples: dict[str, str] = {}
    modules = [f"verilearn_assets.cli.{name}" for name in SUBCOMMAND_MODULES]
    for name in [*modules, *family_cli_modules()]:
        module = importlib.import_module(name)
        module.register(sub)
        examples.update(getattr(module, "EXAMPLES", {}))
    finish_help(parser, examples)
    return parser


def finish_help(parser: argparse.ArgumentParser, examples: dict[str, str], path: str = "") -> None:
    """Give every subcommand a description (its one-line help when it has none) and one
    example, so `verilearn X --help` always says what X does and how it is called."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help for a in action._choices_actions}
        for name, sub in action.choices.items():
            where = f"{path} {name}".strip()
            sub.formatter_class = HelpFormatter
            if not sub.description:
                sub.description = helps.get(name) or ""
            finish_help(sub, examples, where)
            if not sub.epilog:
                sub.epilog = f"example:\n  {examples.get(where) or _example(sub, where)}"


def _example(parser: argparse.ArgumentParser, where: str) -> str:
    """The first subcommand's example, else `verilearn <where> <its required arguments>`:
    the shortest call that parses."""
    words = ["verilearn", where]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and action.choices:
            first = next(iter(action.choices.values()))
            return (first.epilog or "").removeprefix("example:\n").strip()
        if not action.option_strings and action.nargs != "?":
            words.append(action.metavar or action.dest.upper())
        elif action.required and action.option_strings:
            words += [action.option_strings[0], action.metavar or action.dest.upper()]
    return " ".join(words)


def family_cli_modules() -> list[str]:
    """`<family package>.cli` for every registered family that has one."""
    from verilearn_assets.core.family import family_modules

    return [f"{m}.cli" for m in family_modules() if importlib.util.find_spec(f"{m}.cli")]


INTERNAL_ERROR = 3


def main(argv: list[str] | None = None) -> int:
    from verilearn_assets.core.library_warnings import keep_off_console

    keep_off_console()  # before any command imports the code location
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

    home = resolve_home()
    path = home / "logs" / f"{command}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(traceback.format_exc())
    return path


if __name__ == "__main__":
    sys.exit(main())
