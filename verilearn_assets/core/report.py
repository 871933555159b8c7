"""The report: its main tables over the marts, rendered as markdown (Dagster metadata),
rich tables (`verilearn report`), CSV/JSON for scripts, and the pass-rate chart.

Pure: the Dagster assets built from the SQL files live in `reports/assets.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from rich.console import Console
from rich.table import Table

CHART_FILE = Path("reports") / "pass_rate.png"
PREVIEW_ROWS = 20
MAX_ROWS = 40
_RATE_SUFFIXES = ("rate", "share", "precision")


# --- the main tables --------------------------------------------------------------------
@dataclass(frozen=True)
class ReportTable:
    """One table of the report: a title and a SELECT over the marts."""

    key: str
    title: str
    sql: str


REPORT_TABLES: tuple[ReportTable, ...] = (
    ReportTable(
        "family_counts",
        "Tasks and rollouts by family × source × split",
        "SELECT * FROM mart_family_counts",
    ),
    ReportTable(
        "pass_rate",
        "Episode pass rate by source × split × teacher",
        "SELECT source, split, teacher, sum(n_episodes)::BIGINT AS n_episodes, "
        "sum(n_verified)::BIGINT AS n_verified, sum(n_verified) / sum(n_episodes) AS pass_rate "
        "FROM mart_episode_pass_rate GROUP BY ALL ORDER BY ALL",
    ),
    ReportTable(
        "pass_rate_by_template",
        "Episode pass rate by source × split × template × teacher",
        "SELECT * FROM mart_episode_pass_rate ORDER BY source, split, template_family, teacher",
    ),
    ReportTable(
        "teacher_precision",
        "Teacher precision (verified / total)",
        "SELECT * FROM mart_teacher_precision ORDER BY teacher",
    ),
    ReportTable(
        "failure_classes",
        "Failure classes of unverified episodes",
        "SELECT * FROM mart_failure_classes",
    ),
    ReportTable(
        "hook_grounding",
        "Hook grounding rate",
        "SELECT * FROM mart_hook_grounding ORDER BY source, split, teacher",
    ),
    ReportTable(
        "questions",
        "Questions by source × split",
        "SELECT source, split, sum(n_questions)::BIGINT AS n_questions, "
        "sum(n_accepted)::BIGINT AS n_accepted, sum(n_rejected)::BIGINT AS n_rejected "
        "FROM mart_question_counts GROUP BY ALL ORDER BY ALL",
    ),
    ReportTable(
        "question_counts",
        "Questions by source × split × template/operator family × dataset",
        "SELECT * FROM mart_question_counts",
    ),
    ReportTable("rejection_reasons", "Rejection reasons", "SELECT * FROM mart_rejection_reasons"),
    ReportTable(
        "alternatives_rate",
        "Alternatives (ambiguity) rate per template",
        "SELECT * FROM mart_alternatives_rate",
    ),
    ReportTable("dataset_stats", "Per-dataset stats", "SELECT * FROM mart_dataset_stats"),
)


@dataclass(frozen=True)
class TableData:
    columns: list[str]
    rows: list[tuple[Any, ...]]


def fetch(con: duckdb.DuckDBPyConnection, sql: str) -> TableData:
    cur = con.execute(sql)
    return TableData([d[0] for d in cur.description], cur.fetchall())


def format_value(column: str, value: Any) -> str:
    """Rates as percentages, other floats short, NULL as an em dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float):
        if column.endswith(_RATE_SUFFIXES):
            return f"{value:.1%}"
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def markdown_table(data: TableData, max_rows: int = MAX_ROWS) -> str:
    """A GitHub-style markdown table, cut to `max_rows` with a note saying so."""
    if not data.rows:
        return "_no rows_"

    def cell(col: str, value: Any) -> str:
        return format_value(col, value).replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join(data.columns) + " |",
        "| " + " | ".join("---" for _ in data.columns) + " |",
    ]
    for row in data.rows[:max_rows]:
        lines.append(
            "| " + " | ".join(cell(c, v) for c, v in zip(data.columns, row, strict=True)) + " |"
        )
    if len(data.rows) > max_rows:
        lines.append(f"\n_showing {max_rows} of {len(data.rows)} rows_")
    return "\n".join(lines)


def report_tables(con: duckdb.DuckDBPyConnection) -> list[ReportTable]:
    """The main tables, then one per mart they do not read (a family's own marts, the
    context budget…), so a new mart reaches `verilearn report` with no edit here."""
    used = " ".join(rt.sql for rt in REPORT_TABLES)
    marts = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_name LIKE 'mart\\_%' ESCAPE '\\' ORDER BY table_name"
        ).fetchall()
    ]
    extra = [
        ReportTable(m, m.removeprefix("mart_").replace("_", " "), f'SELECT * FROM "{m}"')
        for m in marts
        if m not in used
    ]
    return [*REPORT_TABLES, *extra]


def table_min_width(data: TableData) -> int:
    """Width a rich table needs to show every column name in full."""
    return sum(max(len(c), 3) + 3 for c in data.columns) + 1


def rich_table(title: str, data: TableData, max_rows: int = MAX_ROWS) -> Table:
    """Column names are never cut (values wrap instead); see `render_table` for tables
    too wide for the console."""
    table = Table(title=title, title_justify="left", show_lines=False)
    numeric = [
        bool(data.rows) and all(isinstance(r[i], int | float) or r[i] is None for r in data.rows)
        for i in range(len(data.columns))
    ]
    for col, is_num in zip(data.columns, numeric, strict=True):
        table.add_column(
            col, justify="right" if is_num else "left", min_width=len(col), overflow="fold"
        )
    for row in data.rows[:max_rows]:
        table.add_row(*(format_value(c, v) for c, v in zip(data.columns, row, strict=True)))
    if not data.rows:
        table.caption = "no rows"
    elif len(data.rows) > max_rows:
        table.caption = f"showing {max_rows} of {len(data.rows)} rows"
    return table


def render_table(console: Console, title: str, data: TableData, max_rows: int) -> None:
    """A rich table when every column name fits the console; otherwise one block per row
    (`column: value` lines), so a narrow terminal or an 80-column CI log never shows
    `data…` or `n_ta…`."""
    if table_min_width(data) <= console.width:
        console.print(rich_table(title, data, max_rows))
        return
    console.print(f"[italic]{title}[/italic]")
    if not data.rows:
        console.print(f"  no rows (columns: {', '.join(data.columns)})", markup=False)
    pad = max(len(c) for c in data.columns)
    for i, row in enumerate(data.rows[:max_rows], 1):
        console.print(f"  [dim]row {i}[/dim]")
        for col, value in zip(data.columns, row, strict=True):
            console.print(f"    {col.ljust(pad)}  {format_value(col, value)}", markup=False)
    if len(data.rows) > max_rows:
        console.print(f"  showing {max_rows} of {len(data.rows)} rows")


def render_report(
    console: Console, con: duckdb.DuckDBPyConnection, max_rows: int = MAX_ROWS
) -> None:
    """Print the report tables from the marts (the `verilearn report` view)."""
    for rt in report_tables(con):
        render_table(console, rt.title, fetch(con, rt.sql), max_rows)
        console.print()


def report_markdown(con: duckdb.DuckDBPyConnection, max_rows: int = MAX_ROWS) -> dict[str, str]:
    """The report tables as markdown, keyed by `ReportTable.key`."""
    return {
        rt.key: f"**{rt.title}**\n\n{markdown_table(fetch(con, rt.sql), max_rows)}"
        for rt in report_tables(con)
    }


def report_data(con: duckdb.DuckDBPyConnection) -> list[tuple[ReportTable, TableData]]:
    """Every report table with all its rows (for CSV and JSON output)."""
    return [(rt, fetch(con, rt.sql)) for rt in report_tables(con)]


def json_value(value: Any) -> Any:
    """A DuckDB value as plain JSON (NaN → null, decimals and dates → numbers/strings)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


# --- the chart ----------------------------------------------------------------------------
def pass_rate_chart(con: duckdb.DuckDBPyConnection, path: Path) -> Path:
    """Bar chart of episode pass rate per source/split, one bar per teacher, as a PNG."""
    data = fetch(con, next(rt.sql for rt in REPORT_TABLES if rt.key == "pass_rate"))
    fig = Figure(figsize=(9, 4.5), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if not data.rows:
        ax.text(0.5, 0.5, "no episodes yet", ha="center", va="center", fontsize=14)
        ax.set_axis_off()
    else:
        groups = sorted({(r[0], r[1]) for r in data.rows})
        teachers = sorted({r[2] for r in data.rows})
        by_key = {(r[0], r[1], r[2]): r for r in data.rows}
        width = 0.8 / len(teachers)
        for t_i, teacher in enumerate(teachers):
            xs, ys, labels = [], [], []
            for g_i, (source, split) in enumerate(groups):
                row = by_key.get((source, split, teacher))
                if row is None:
                    continue
                xs.append(g_i - 0.4 + width * (t_i + 0.5))
                ys.append(row[5])
                labels.append(f"{row[4]}/{row[3]}")
            bars = ax.bar(xs, ys, width=width, label=teacher)
            ax.bar_label(bars, labels=labels, fontsize=7, padding=2)
        ax.set_xticks(range(len(groups)), [f"{s}\n{t}" for s, t in groups])
        ax.set_ylim(0, 1.12)
        ax.set_ylabel("pass rate (verified / episodes)")
        ax.legend(title="teacher", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
        ax.grid(axis="y", alpha=0.3)
    ax.set_title("Episode pass rate by source × split × teacher")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path
