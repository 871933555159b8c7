"""`verilearn report`: build the warehouse views and marts, then print the report tables."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

from rich.console import Console

from verilearn_assets.cli import CliError
from verilearn_assets.core.home import resolve_home
from verilearn_assets.core.lake import lake_root
from verilearn_assets.core.report import (
    ReportTable,
    TableData,
    json_value,
    markdown_table,
    render_table,
    report_data,
)
from verilearn_assets.core.warehouse import (
    SQL_DIR,
    WarehouseBusy,
    build_all,
    lake_assets_present,
    reader,
    warehouse_path,
    writer,
)

EXAMPLES = {"report": "verilearn report --format markdown --table family_counts"}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="build the DuckDB views and marts over the lake and print the tables",
        description="Refresh the DuckDB warehouse ($VERILEARN_HOME/warehouse.duckdb, as its "
        "one writer) from the lake: every staging view and mart of dbt_like_sql/ and of each "
        "family's sql/, then print "
        "the report tables (every family's marts) as tables, markdown, csv or json.",
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
        "--format",
        choices=("table", "markdown", "csv", "json"),
        default="table",
        help="table (rich; column names never cut), markdown, csv or json (default: table)",
    )
    parser.add_argument(
        "--table",
        action="append",
        default=None,
        metavar="KEY",
        help="only this report table (repeatable), e.g. family_counts, pass_rate",
    )
    parser.add_argument(
        "--models",
        action="store_true",
        help="only the model evaluations (mart_model_pass_rate: base and trained side by side)",
    )
    parser.add_argument(
        "--lock-timeout",
        type=float,
        default=60.0,
        help="seconds to wait for the warehouse lock (default: 60)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    home = resolve_home(args.home)
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
    db = warehouse_path(home)
    try:
        with writer(db, args.lock_timeout) as con:
            models = build_all(con, lake, SQL_DIR)
        with reader(db, args.lock_timeout) as con:
            keys = [*(args.table or []), *(["mart_model_pass_rate"] if args.models else [])]
            tables = _selected(report_data(con), keys or None)
            if args.format == "table":
                console = Console()
                console.print(
                    f"[bold]verilearn report[/bold] — {db} "
                    f"({len(models)} views/marts refreshed from {lake})\n"
                )
                for rt, data in tables:
                    render_table(console, rt.title, data, args.max_rows)
                    console.print()
            else:
                sys.stdout.write(FORMATTERS[args.format](tables, args.max_rows))
    except WarehouseBusy as exc:
        raise CliError(str(exc)) from exc
    return 0


Tables = list[tuple[ReportTable, TableData]]


def _selected(tables: Tables, keys: list[str] | None) -> Tables:
    if not keys:
        return tables
    known = {rt.key for rt, _ in tables}
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise CliError(f"unknown report table {unknown[0]!r} (known: {', '.join(sorted(known))})")
    return [(rt, d) for rt, d in tables if rt.key in keys]


def _markdown(tables: Tables, max_rows: int) -> str:
    return "\n\n".join(f"## {rt.title}\n\n{markdown_table(d, max_rows)}" for rt, d in tables) + "\n"


def _csv(tables: Tables, max_rows: int) -> str:
    """One CSV block per table, each headed by a `# <key>` line (all rows: for scripts)."""
    out = io.StringIO()
    for i, (rt, d) in enumerate(tables):
        if i:
            out.write("\n")
        out.write(f"# {rt.key}\n")
        w = csv.writer(out, lineterminator="\n")
        w.writerow(d.columns)
        w.writerows([json_value(v) for v in row] for row in d.rows)
    return out.getvalue()


def _json(tables: Tables, max_rows: int) -> str:
    """{key: {title, columns, rows: [{column: value}]}} with every row (for scripts)."""
    doc = {
        rt.key: {
            "title": rt.title,
            "columns": d.columns,
            "rows": [
                {c: json_value(v) for c, v in zip(d.columns, row, strict=True)} for row in d.rows
            ],
        }
        for rt, d in tables
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


FORMATTERS = {"markdown": _markdown, "csv": _csv, "json": _json}
