"""The DuckDB warehouse: views over the Parquet lake and the report marts built from SQL files.

DuckDB lets one process write a database file and refuses every other opener meanwhile, so
the warehouse is guarded by an inter-process readers-writer lock (`fcntl.flock` on a file
beside the database): one writer at a time, any number of read-only readers, and a waiting
party gets a clear `WarehouseBusy` instead of DuckDB's raw lock error.

The SQL lives in `dbt_like_sql/{staging,marts}/*.sql` (what every family shares) and in each
registered family's `sql/*.sql` (its own staging views `stg_*.sql` and marts `mart_*.sql`,
beside its `family` module), one SELECT per file. Staging files read the lake through
`'{{ lake }}/<asset>/...'` paths and become views; marts read staging views and other marts
by name and become tables. Dependencies are parsed from the SQL (sqlglot), never listed by
hand: a `{{ lake }}/<asset>/` path is a dependency on lake asset `<asset>`, a table name is a
dependency on the SQL model of that name. Pure Python: no Dagster here.
"""

from __future__ import annotations

import fcntl
import glob
import importlib
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Literal

import duckdb
import polars as pl
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from verilearn_assets.core.eval_records import EVAL_ASSET, ModelEvalRecord
from verilearn_assets.core.family import SftRow, families, family_modules
from verilearn_assets.core.llm.budget_records import LAKE_ASSET as CONTEXT_BUDGET_ASSET
from verilearn_assets.core.llm.budget_records import ContextBudgetRecord
from verilearn_assets.core.records import Record, TableRecord

WAREHOUSE_FILE = "warehouse.duckdb"
DEFAULT_LOCK_TIMEOUT_S = 120.0
SQL_DIR = Path(__file__).resolve().parents[2] / "dbt_like_sql"

# Platform lake assets the SQL may read, and the record model that gives an absent asset
# its columns; every family's task and rollout assets join them (`lake_models`).
PLATFORM_LAKE_MODELS: dict[str, type[Record]] = {
    "tables": TableRecord,
    "sft_dataset": SftRow,
    CONTEXT_BUDGET_ASSET: ContextBudgetRecord,
    EVAL_ASSET: ModelEvalRecord,
}
FAMILY_UNION_VIEWS = {"stg_family_tasks": "tasks", "stg_family_rollouts": "rollouts"}


def lake_models() -> dict[str, type[Record]]:
    """Lake asset path (`tables`, `analysis/questions`, …) → record model."""
    out = dict(PLATFORM_LAKE_MODELS)
    for fam in families().values():
        out[fam.task_lake] = fam.task_model
        out[fam.rollout_lake] = fam.rollout_model
        out.update(fam.extra.get("lake_models", {}))  # a family's other lake rows
    return out


_LAKE_PLACEHOLDER = re.compile(r"\{\{\s*lake\s*\}\}")
_ANY_PLACEHOLDER = re.compile(r"\{\{.*?\}\}")
_LAKE_REF = re.compile(r"^\{\{\s*lake\s*\}\}/([A-Za-z0-9_\-]+)(?:/([A-Za-z0-9_\-]+))?(/|$)")
_DUCKDB_LINE = re.compile(r"LINE (\d+):")

ModelKind = Literal["staging", "mart"]


def lake_asset_of(path: str) -> str | None:
    """The lake asset a `'{{ lake }}/…'` literal reads: `<family>/<asset>` when those two
    segments name a known family asset, else the first segment (`tables`)."""
    m = _LAKE_REF.match(path)
    if not m:
        return None
    if m.group(2) and f"{m.group(1)}/{m.group(2)}" in lake_models():
        return f"{m.group(1)}/{m.group(2)}"
    return m.group(1)


# --- connections ------------------------------------------------------------------------
class WarehouseBusy(RuntimeError):
    """The warehouse lock could not be taken in time (another writer, or readers, hold it)."""


def warehouse_path(home: Path) -> Path:
    return Path(home) / WAREHOUSE_FILE


def lock_path(db_path: Path) -> Path:
    return Path(f"{db_path}.lock")


@contextmanager
def _flock(db_path: Path, *, exclusive: bool, timeout_s: float) -> Iterator[None]:
    """Hold the warehouse's readers-writer lock; poll until `timeout_s`, then fail clearly."""
    path = lock_path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    role = "writer" if exclusive else "reader"
                    raise WarehouseBusy(
                        f"{db_path}: could not take the warehouse lock as a {role} within "
                        f"{timeout_s:g}s ({_holder_note(fd, exclusive)}); one writer at a "
                        f"time — retry when it has finished"
                    ) from None
                time.sleep(0.05)
        if exclusive:  # leave a note for whoever waits on us
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"writer pid {os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _holder_note(fd: int, exclusive: bool) -> str:
    note = os.pread(fd, 200, 0).decode(errors="replace").strip()
    if exclusive:
        return f"held by readers or a writer; last {note}" if note else "held by another party"
    return f"held by a {note}" if note else "held by a writer"


@contextmanager
def writer(
    db_path: Path, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
) -> Iterator[duckdb.DuckDBPyConnection]:
    """The one read-write connection; other writers and readers wait (up to their timeout)."""
    db_path = Path(db_path)
    with _flock(db_path, exclusive=True, timeout_s=timeout_s):
        con = duckdb.connect(str(db_path))
        try:
            yield con
        finally:
            con.close()


@contextmanager
def reader(
    db_path: Path, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection; readers share the lock, so they run side by side."""
    db_path = Path(db_path)
    if not db_path.is_file():
        raise FileNotFoundError(
            f"{db_path}: warehouse not built yet — run `verilearn report` or materialize "
            f"the 'reports' asset group"
        )
    with _flock(db_path, exclusive=False, timeout_s=timeout_s):
        con = duckdb.connect(str(db_path), read_only=True)
        try:
            yield con
        finally:
            con.close()


# --- the lake as DuckDB relations -------------------------------------------------------
def duckdb_type(dtype: pl.DataType) -> str:
    """DuckDB column type for a Polars type of a record schema."""
    if isinstance(dtype, pl.List):
        return f"{duckdb_type(dtype.inner)}[]"
    simple = {pl.Utf8: "VARCHAR", pl.Int64: "BIGINT", pl.Float64: "DOUBLE", pl.Boolean: "BOOLEAN"}
    for pl_type, name in simple.items():
        if dtype == pl_type:
            return name
    raise TypeError(f"no DuckDB type for Polars type {dtype!r}")


def empty_relation_sql(model: type[Record]) -> str:
    """A zero-row SELECT with the model's columns and types, for an asset not yet in the lake."""
    cols = ", ".join(
        f'CAST(NULL AS {duckdb_type(t)}) AS "{name}"' for name, t in model.polars_schema().items()
    )
    return f"SELECT {cols} WHERE FALSE"


def lake_assets_present(lake_root: Path) -> list[str]:
    """Lake assets that hold at least one Parquet part."""
    lake_root = Path(lake_root)
    if not lake_root.is_dir():
        return []
    return sorted(
        p.name
        for p in lake_root.iterdir()
        if p.is_dir() and next(p.rglob("part-*.parquet"), None) is not None
    )


def create_lake_views(
    con: duckdb.DuckDBPyConnection, lake_root: Path, sql_dir: Path = SQL_DIR
) -> list[str]:
    """Create (or refresh) every staging view over the lake; returns their names."""
    models = [m for m in discover_sql_models(sql_dir) if m.kind == "staging"]
    for model in order_models(models):
        build_model(con, model, lake_root)
    return [m.name for m in models]


# --- SQL models ---------------------------------------------------------------------------
class SqlModelError(ValueError):
    """A SQL file is broken or refers to something unknown; the message names file and line."""

    def __init__(self, path: Path, line: int | None, message: str):
        where = f"{path}:{line}" if line else f"{path}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


@dataclass(frozen=True)
class SqlModel:
    """One SQL file: its name (the file stem), kind, text and parsed dependencies."""

    name: str
    kind: ModelKind
    path: Path
    sql: str
    lake_deps: tuple[str, ...]  # lake assets read through '{{ lake }}/<asset>/...'
    model_deps: tuple[str, ...]  # other SQL models read by name

    @property
    def relation(self) -> str:
        return "VIEW" if self.kind == "staging" else "TABLE"


_KIND_BY_DIR: dict[str, ModelKind] = {"staging": "staging", "marts": "mart"}
FAMILY_SQL_DIR = "sql"  # a family's views and marts: `<family package>/sql/*.sql`
# in a family's flat `sql/`, the file name's prefix says the kind (the shared SQL: its folder)
_KIND_BY_PREFIX: dict[str, ModelKind] = {"stg_": "staging", "mart_": "mart"}


def family_sql_dirs() -> list[Path]:
    """The `sql/` folder of every registered family that has one, in registry order: found
    beside the family's package, so a family's views and marts need no edit outside its
    folder."""
    out = []
    for mod in family_modules():
        for root in importlib.import_module(mod).__path__:
            if (Path(root) / FAMILY_SQL_DIR).is_dir():
                out.append(Path(root) / FAMILY_SQL_DIR)
    return out


def sql_files(sql_dir: Path = SQL_DIR) -> list[tuple[Path, ModelKind]]:
    """Every SQL file with its kind: the shared `staging/` and `marts/` of `sql_dir`, then
    each family's `sql/*.sql` (`stg_*` staging views, `mart_*` marts)."""
    sql_dir = Path(sql_dir)
    if not sql_dir.is_dir():
        raise FileNotFoundError(f"{sql_dir}: SQL directory not found")
    out: list[tuple[Path, ModelKind]] = []
    for path in sorted(sql_dir.rglob("*.sql")):
        rel = path.relative_to(sql_dir)
        if len(rel.parts) != 2 or rel.parts[0] not in _KIND_BY_DIR:
            raise SqlModelError(
                path, None, "SQL files belong in staging/ or marts/ (one level deep)"
            )
        out.append((path, _KIND_BY_DIR[rel.parts[0]]))
    for fam_dir in family_sql_dirs():
        for path in sorted(fam_dir.rglob("*.sql")):
            if path.parent != fam_dir:
                raise SqlModelError(path, None, "a family's SQL files belong in its sql/ (flat)")
            kind = next((k for p, k in _KIND_BY_PREFIX.items() if path.name.startswith(p)), None)
            if kind is None:
                raise SqlModelError(
                    path,
                    None,
                    "a family's SQL file is named stg_*.sql (a staging view over the lake) "
                    "or mart_*.sql (a mart)",
                )
            out.append((path, kind))
    return out


def discover_sql_models(sql_dir: Path = SQL_DIR) -> list[SqlModel]:
    """Parse every shared `staging/*.sql` and `marts/*.sql` and every family's `sql/*.sql`;
    deps come from the SQL itself."""
    seen: dict[str, Path] = {}
    parsed: list[tuple[Path, ModelKind, str, exp.Query]] = []
    for path, kind in sql_files(sql_dir):
        name = path.stem
        if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            raise SqlModelError(
                path,
                None,
                f"file name {name!r} must be a lower-case "
                f"identifier: it names the relation and the asset",
            )
        if name in seen:
            raise SqlModelError(path, None, f"model name {name!r} also used by {seen[name]}")
        seen[name] = path
        text = path.read_text()
        parsed.append((path, kind, text, parse_sql(path, text)))

    for name, which in FAMILY_UNION_VIEWS.items():
        if name in seen:
            raise SqlModelError(seen[name], None, f"model name {name!r} is generated; rename")
        path = Path(sql_dir) / "staging" / f"{name}.sql"
        text = family_union_sql(which)
        seen[name] = path
        parsed.append((path, "staging", text, parse_sql(path, text)))

    names = set(seen)
    models = []
    for path, kind, text, tree in parsed:
        lake_deps, model_deps = _dependencies(path, text, tree, names)
        if kind == "staging" and not lake_deps and not model_deps:
            raise SqlModelError(
                path,
                None,
                "a staging model must read the lake ('{{ lake }}/<asset>/...') or another model",
            )
        models.append(SqlModel(path.stem, kind, path, text, lake_deps, model_deps))
    order_models(models)  # fails on a cycle, naming the files
    return models


def family_union_sql(which: Literal["tasks", "rollouts"]) -> str:
    """One view over every registered family's task (or rollout) asset, with the columns
    the contract guarantees, so counts for any family reach the report with no SQL of its
    own. Generated, not a file: the set of families is known only at load time."""
    verdict = "status" if which == "tasks" else "verified"
    selects = []
    for fam in families().values():
        asset = fam.asset_lake(which)
        selects.append(
            f"SELECT '{fam.name}' AS family, id, source, split, {verdict}\n"
            f"FROM read_parquet('{{{{ lake }}}}/{asset}/*/*/part-*.parquet',\n"
            "    hive_partitioning = true, union_by_name = true)"
        )
    head = f"-- generated from the family registry: the {which} of every family\n"
    return head + "\nUNION ALL\n".join(selects)


def parse_sql(path: Path, text: str) -> exp.Query:
    """One SELECT per file, checked by DuckDB's parser and parsed by sqlglot for deps."""
    for m in _ANY_PLACEHOLDER.finditer(text):
        if not _LAKE_PLACEHOLDER.fullmatch(m.group(0)):
            raise SqlModelError(
                path,
                text.count("\n", 0, m.start()) + 1,
                f"unknown placeholder {m.group(0)!r} (only {{{{ lake }}}})",
            )
    probe = _LAKE_PLACEHOLDER.sub("/lake", text)
    try:
        with duckdb.connect() as con:
            statements = con.extract_statements(probe)
    except duckdb.Error as exc:
        raise SqlModelError(path, _duckdb_line(str(exc)), _first_line(str(exc))) from exc
    if len(statements) != 1:
        raise SqlModelError(
            path, None, f"expected exactly one SELECT, found {len(statements)} statements"
        )
    try:
        trees = [t for t in sqlglot.parse(text, dialect="duckdb") if t is not None]
    except ParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        raise SqlModelError(path, err.get("line"), _first_line(str(exc))) from exc
    except TokenError as exc:
        raise SqlModelError(path, None, _first_line(str(exc))) from exc
    if len(trees) != 1 or not isinstance(trees[0], exp.Query):
        kind = type(trees[0]).__name__ if trees else "nothing"
        raise SqlModelError(path, 1, f"expected one SELECT, found {kind}")
    return trees[0]


def _dependencies(
    path: Path, text: str, tree: exp.Query, names: set[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    lake: set[str] = set()
    for lit in tree.find_all(exp.Literal):
        if lit.is_string and (asset := lake_asset_of(lit.this)):
            lake.add(asset)
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    deps: set[str] = set()
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue  # a table function such as read_parquet(...)
        name = table.name
        if table.db or table.catalog:
            raise SqlModelError(
                path,
                table.this.meta.get("line"),
                f"qualified table {table.sql('duckdb')!r}: models read other models by bare name",
            )
        if name in ctes:
            continue
        if name not in names:
            raise SqlModelError(
                path,
                table.this.meta.get("line"),
                f"unknown table {name!r}: not a CTE and no SQL file "
                f"{name}.sql in staging/, marts/ or a family's sql/",
            )
        if name == path.stem:
            raise SqlModelError(path, table.this.meta.get("line"), "a model reads itself")
        deps.add(name)
    return tuple(sorted(lake)), tuple(sorted(deps))


def order_models(models: list[SqlModel]) -> list[SqlModel]:
    """Models in dependency order (dependencies first)."""
    by_name = {m.name: m for m in models}
    graph = {m.name: {d for d in m.model_deps if d in by_name} for m in models}
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        cycle = exc.args[1]
        files = " -> ".join(str(by_name[n].path) for n in cycle)
        raise SqlModelError(by_name[cycle[0]].path, None, f"dependency cycle: {files}") from exc
    return [by_name[n] for n in order]


def render_sql(model: SqlModel, lake_root: Path) -> str:
    """The model's SELECT with the lake path filled in; an absent lake asset becomes an
    empty relation typed by its record model, so reports work before every asset exists."""
    lake_root = Path(lake_root).resolve()
    missing = [a for a in model.lake_deps if not _has_files(model, lake_root, a)]
    text = model.sql
    if missing:
        tree = parse_sql(model.path, text)
        for lit in list(tree.find_all(exp.Literal)):
            asset = lake_asset_of(lit.this) if lit.is_string else None
            if asset is None or asset not in missing:
                continue
            models = lake_models()
            if asset not in models:
                raise SqlModelError(
                    model.path,
                    lit.meta.get("line"),
                    f"lake asset {asset!r} has no files under {lake_root} "
                    f"and no known record model to type an empty view",
                )
            table = lit.find_ancestor(exp.Table)
            if table is None:
                raise SqlModelError(
                    model.path,
                    lit.meta.get("line"),
                    "a lake path must be the argument of a table function "
                    "in FROM, e.g. read_parquet('{{ lake }}/...')",
                )
            empty = sqlglot.parse_one(empty_relation_sql(models[asset]), dialect="duckdb")
            table.replace(empty.subquery(table.alias or asset.replace("/", "_")))
        text = tree.sql(dialect="duckdb")
    quoted = str(lake_root).replace("'", "''")
    return _LAKE_PLACEHOLDER.sub(lambda _: quoted, text)


def _has_files(model: SqlModel, lake_root: Path, asset: str) -> bool:
    """Whether every lake path of `asset` in the model matches at least one file."""
    tree = sqlglot.parse_one(model.sql, dialect="duckdb")
    patterns = [
        lit.this
        for lit in tree.find_all(exp.Literal)
        if lit.is_string and lake_asset_of(lit.this) == asset
    ]
    return all(
        glob.glob(_LAKE_PLACEHOLDER.sub(lambda _: str(lake_root), p), recursive=True)
        for p in patterns
    )


def build_model(con: duckdb.DuckDBPyConnection, model: SqlModel, lake_root: Path) -> None:
    """Create or replace the model's view (staging) or table (mart) in the warehouse."""
    sql = render_sql(model, lake_root)
    # Same line as the SELECT's first line, so DuckDB's LINE n is the file's line n.
    statement = f'CREATE OR REPLACE {model.relation} "{model.name}" AS {sql}'
    try:
        con.execute(statement)
    except duckdb.Error as exc:
        raise SqlModelError(
            model.path,
            _duckdb_line(str(exc)),
            f"DuckDB could not build {model.relation.lower()} "
            f"{model.name!r}: {_first_line(str(exc))}",
        ) from exc


def build_all(
    con: duckdb.DuckDBPyConnection, lake_root: Path, sql_dir: Path = SQL_DIR
) -> list[SqlModel]:
    """Build every staging view and mart table in dependency order."""
    models = order_models(discover_sql_models(sql_dir))
    for model in models:
        build_model(con, model, lake_root)
    return models


def relation_rows(con: duckdb.DuckDBPyConnection, name: str) -> int:
    return int(con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0])


def _duckdb_line(message: str) -> int | None:
    m = _DUCKDB_LINE.search(message)
    return int(m.group(1)) if m else None


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else message
