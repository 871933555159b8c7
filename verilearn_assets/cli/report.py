"""`verilearn report`: build the warehouse views and marts, then print the report tables."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console

from verilearn_assets.cli import CliError
from verilearn_assets.core.lake import lake_root
from verilearn_assets.core.warehouse import (
    SQL_DIR,
    WarehouseBusy,
    build_all,
    lake_assets_present,
    reader,
    warehouse_path,
    writer,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="build the DuckDB views and marts over the lake and print the tables",
        description="Refresh the warehouse (as its one writer) from the lake and print the "
        "pass-rate and stats tables.",
    )
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        help="verilearn home (default: $VERILEARN_HOME, else ./.verilearn)",
    )
    parser.add_argument(
        "--max-rows", type=int, default=40, help="rows shown per table (default: 40)"
    )
    parser.add_argument(
        "--lock-timeout",
        type=float,
        default=60.0,
        help="seconds to wait for the warehouse lock (default: 60)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    home = Path(args.home or os.environ.get("VERILEARN_HOME", ".verilearn")).resolve()
    if not home.is_dir():
        raise CliError(f"{home}: verilearn home not found (pass --home or set VERILEARN_HOME)")
    lake = lake_root(home)
    if not lake_assets_present(lake):
        raise CliError(
            f"{lake}: the lake is empty — materialize tables/questions/episodes "
            f"first (e.g. `verilearn demo`)"
        )
    if args.max_rows < 1:
        raise CliError(f"--max-rows must be at least 1, got {args.max_rows}")
    from verilearn_assets.core.report import render_report  # loads Dagster: only when needed

    db = warehouse_path(home)
    try:
        with writer(db, args.lock_timeout) as con:
            models = build_all(con, lake, SQL_DIR)
        console = Console(width=None if sys.stdout.isatty() else 160)
        console.print(
            f"[bold]verilearn report[/bold] — {db} "
            f"({len(models)} views/marts refreshed from {lake})\n"
        )
        with reader(db, args.lock_timeout) as con:
            render_report(console, con, args.max_rows)
    except WarehouseBusy as exc:
        raise CliError(str(exc)) from exc
    return 0
