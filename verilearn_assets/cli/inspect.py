"""`verilearn inspect`: look at the records in the lake, any family, any home.

`verilearn inspect questions --split dev --template group_mean` lists records (id, source,
split, the family's own columns, status, an excerpt of the answer); `--id ID` (or a filter
that leaves one record) shows the whole record: question, answer, schema, alternatives and
code, or for a rollout every turn with its role, code cell, tool output and hook verdicts.
Reads the Parquet lake through DuckDB, read-only.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verilearn_assets.core.records import SOURCES, SPLITS

EXCERPT = 60
KINDS = ("tasks", "rollouts", "sft")


EXAMPLES = {"inspect": "verilearn inspect questions --split dev --template group_mean --limit 5"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inspect",
        help="list or show records of the lake (questions, episodes, trajectories, sft, …)",
        description="List the lake's records (id, source, split, the family's columns, "
        "status) or show one whole (--id, or filters that leave one). WHAT is `tasks`, "
        "`rollouts`, `sft`, or an asset name of a family (`questions`, `episodes`, "
        "`trajectories`, …). Reads the Parquet lake read-only.",
    )
    p.add_argument("what", help="tasks | rollouts | sft | an asset name (questions, episodes…)")
    p.add_argument("--family", default=None, help="only this family")
    p.add_argument("--source", choices=SOURCES, default=None)
    p.add_argument("--split", choices=SPLITS, default=None)
    p.add_argument("--dataset", default=None)
    p.add_argument("--template", default=None)
    p.add_argument(
        "--status",
        default=None,
        help="accepted | rejected (tasks); verified | unverified (rollouts)",
    )
    p.add_argument("--id", dest="record_id", default=None, help="one record, shown whole")
    p.add_argument("--limit", type=int, default=20, help="rows listed (default: 20)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--home", type=Path, default=None, help="default: $VERILEARN_HOME")
    p.set_defaults(handler=run)


@dataclass(frozen=True)
class Target:
    """One lake asset to read: which family (None for sft) and its lake path."""

    family: str | None
    kind: str
    lake_path: str
    columns: tuple[str, ...]


def targets(what: str, family_name: str | None) -> list[Target]:
    """The lake assets `what` names, through the family registry."""
    from verilearn_assets.cli import CliError
    from verilearn_assets.core.family import families

    known = families()
    if family_name is not None and family_name not in known:
        raise CliError(f"unknown family {family_name!r} (known: {', '.join(known)})")
    if what == "sft":
        return [Target(family_name, "sft", "sft_dataset", ("family", "teacher", "n_messages"))]
    out = []
    for name, fam in known.items():
        if family_name and name != family_name:
            continue
        for kind, asset, cols in (
            ("tasks", fam.task_asset, fam.task_columns),
            ("rollouts", fam.rollout_asset, fam.rollout_columns),
        ):
            if what in (kind, asset):
                out.append(Target(name, kind, fam.asset_lake(kind), cols))  # type: ignore[arg-type]
    if not out:
        names = sorted(
            {*KINDS, *(a for f in known.values() for a in (f.task_asset, f.rollout_asset))}
        )
        raise CliError(f"nothing called {what!r} to inspect (try: {', '.join(names)})")
    return out


def _where(t: Target, args: argparse.Namespace, columns: set[str]) -> tuple[str, list[Any]]:
    from verilearn_assets.cli import CliError

    clauses: list[str] = []
    params: list[Any] = []

    def eq(column: str, value: Any) -> None:
        if value is None:
            return
        if column not in columns:
            raise CliError(f"{t.lake_path} has no column {column!r} to filter on")
        clauses.append(f'"{column}" = ?')
        params.append(value)

    eq("source", args.source)
    eq("split", args.split)
    eq("dataset", args.dataset)
    eq("template", args.template)
    eq("id", args.record_id)
    if t.kind == "sft":
        eq("family", args.family)
    if args.status is not None:
        if t.kind == "tasks":
            if args.status not in ("accepted", "rejected"):
                raise CliError(f"--status for tasks is accepted or rejected, not {args.status!r}")
            eq("status", args.status)
        elif t.kind == "rollouts":
            if args.status not in ("verified", "unverified"):
                raise CliError(
                    f"--status for rollouts is verified or unverified, not {args.status!r}"
                )
            eq("verified", args.status == "verified")
        else:
            raise CliError("--status does not apply to sft rows")
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _read(con: Any, t: Target, root: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    base = root / t.lake_path
    files = sorted(base.rglob("part-*.parquet")) if base.is_dir() else []
    if not files:
        return []
    glob = str(base / "**" / "part-*.parquet").replace("'", "''")
    rel = f"read_parquet('{glob}', hive_partitioning = true, union_by_name = true)"
    columns = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()}
    where, params = _where(t, args, columns)
    order = " ORDER BY " + ", ".join(c for c in ("source", "split", "id") if c in columns)
    cur = con.execute(f"SELECT * FROM {rel}{where}{order} LIMIT {int(args.limit) + 1}", params)
    names = [d[0] for d in cur.description]
    return [{"_family": t.family, **dict(zip(names, row, strict=True))} for row in cur.fetchall()]


def _excerpt(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"


def _verdict(row: dict[str, Any]) -> str:
    if "status" in row:
        return str(row["status"])
    if "verified" in row:
        return "verified" if row["verified"] else f"unverified ({row.get('failure_class')})"
    return ""


def _decoded(value: Any) -> Any:
    """JSON-encoded nested fields back to objects, for the record view."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _print_record(row: dict[str, Any]) -> None:
    fam = row.pop("_family")
    print(f"{fam or 'sft'} record {row.get('id')}")
    messages = _decoded(row.pop("messages", None))
    for key, value in row.items():
        value = _decoded(value)
        if isinstance(value, list | dict):
            print(f"  {key}:")
            for line in json.dumps(value, indent=2, default=str, ensure_ascii=False).splitlines():
                print(f"    {line}")
        elif isinstance(value, str) and "\n" in value:
            print(f"  {key}:")
            for line in value.splitlines():
                print(f"    {line}")
        else:
            print(f"  {key}: {value}")
    if isinstance(messages, list):
        print(f"  messages ({len(messages)} turns):")
        for i, m in enumerate(messages):
            head = f"[{m.get('turn', i)}] {m.get('role')}"
            if m.get("kind"):
                head += f" ({m['kind']})"
            print(f"    {head}")
            for line in str(m.get("content", "")).splitlines() or [""]:
                print(f"      {line}")


def run(args: argparse.Namespace) -> int:
    import duckdb

    from verilearn_assets.cli import CliError
    from verilearn_assets.core import lake

    if args.limit < 1:
        raise CliError(f"--limit must be at least 1, got {args.limit}")
    home = lake.home(args.home)
    root = lake.lake_root(home)
    if not root.is_dir():
        raise CliError(f"{root}: no lake here (set VERILEARN_HOME or pass --home)")
    chosen = targets(args.what, args.family)
    with duckdb.connect() as con:
        rows = [r for t in chosen for r in _read(con, t, root, args)]
    if not rows:
        where = ", ".join(str(root / t.lake_path) for t in chosen)
        print(f"no {args.what} records match (looked in {where})")
        return 1
    more = len(rows) > args.limit
    single = len(rows) == 1  # the filters left one record: show it whole
    rows = rows[: args.limit]
    if args.record_id or single:
        if args.format == "json":
            print(json.dumps({k: _decoded(v) for k, v in rows[0].items()}, indent=2, default=str))
        else:
            _print_record(rows[0])
        return 0
    if args.format == "json":
        print(json.dumps(rows, indent=2, default=str, ensure_ascii=False))
        return 0
    for t in chosen:
        mine = [r for r in rows if (r["_family"] == t.family or t.kind == "sft")]
        if not mine:
            continue
        cols = ["id", "source", "split", *(c for c in t.columns if c in mine[0])]
        print(f"{t.lake_path} ({len(mine)} shown)")
        print("  " + " | ".join([*cols, "status"]))
        for r in mine:
            print("  " + " | ".join([*(_excerpt(r.get(c)) for c in cols), _verdict(r)]))
    if more:
        print(f"… more records match: raise --limit (now {args.limit}) or filter further")
    return 0
