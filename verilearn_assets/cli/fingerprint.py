"""`verilearn fingerprint`: the ids and answers of every lake asset, hashed.

Used to show that a change of code (a restructuring, a dependency bump) leaves the records a
run produces unchanged: fingerprint the lake of one demo run, save it, run the demo again
on the changed code and compare.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from verilearn_assets.cli import CliError
from verilearn_assets.core.home import resolve_home
from verilearn_assets.core.lake import lake_root
from verilearn_assets.core.lake_fingerprint import LakePrint, differences, lake_print

EXAMPLES = {"fingerprint": "verilearn fingerprint --compare before.json"}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "fingerprint",
        help="hash the ids and answers of every lake asset; compare with a saved fingerprint",
        description="Print one JSON object: per lake asset the rows, the id/answer columns "
        "hashed and their sha256, and a digest over all assets. Save one with --out before "
        "a change; with --compare, exit 1 naming every asset whose fingerprint differs "
        "from the saved one.",
    )
    p.add_argument("--home", type=Path, default=None, help="default: $VERILEARN_HOME")
    p.add_argument("--out", type=Path, default=None, help="also write the fingerprint here")
    p.add_argument("--compare", type=Path, default=None, help="a fingerprint saved by --out")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        current = lake_print(lake_root(resolve_home(args.home)))  # reads: creates nothing
    except FileNotFoundError as exc:
        raise CliError(f"{exc} (set VERILEARN_HOME or pass --home)") from exc
    text = current.model_dump_json(indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    if args.compare is None:
        sys.stdout.write(text + "\n")
        return 0
    try:
        saved = LakePrint.model_validate(json.loads(args.compare.read_text()))
    except (OSError, ValueError) as exc:
        raise CliError(f"{args.compare}: not a saved fingerprint ({exc})") from exc
    diff = differences(saved, current)
    for line in diff:
        sys.stdout.write(line + "\n")
    verdict = "differs" if diff else "identical"
    sys.stdout.write(f"{len(current.assets)} assets, lake {verdict} ({current.sha256[:16]})\n")
    return 1 if diff else 0
