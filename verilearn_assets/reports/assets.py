"""Report assets: every `dbt_like_sql/**/*.sql` file, every family's `sql/*.sql` (and each
view generated from the family registry) becomes a Dagster asset, plus `report`.

The SQL parsing, dependency discovery and building live in `core/warehouse.py` and the
rendering in `core/report.py` (both pure); this module turns them into assets (group
"reports"). Dependencies come from the SQL, so adding a file adds an asset with the right
edges and nothing else has to change. A lake dependency `analysis/questions` is the asset
key `["analysis", "questions"]`.
"""

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableSchema,
    asset,
)

from resources.warehouse import WarehouseResource
from verilearn_assets.core.report import (
    CHART_FILE,
    MAX_ROWS,
    PREVIEW_ROWS,
    TableData,
    fetch,
    markdown_table,
    pass_rate_chart,
    report_markdown,
)
from verilearn_assets.core.warehouse import (
    SQL_DIR,
    SqlModel,
    build_model,
    discover_sql_models,
    relation_rows,
)

GROUP = "reports"
REPORT_ASSET = "report"


def _key(name: str) -> AssetKey:
    return AssetKey(name.split("/"))


def _description(model: SqlModel) -> str:
    lines = [ln.strip()[2:].strip() for ln in model.sql.splitlines() if ln.strip().startswith("--")]
    head = " ".join(lines) or f"{model.relation.lower()} {model.name}"
    rel = model.path.relative_to(model.path.parent.parent.parent)
    if not model.path.exists():
        return f"{head}\n\nGenerated from the family registry as a DuckDB view."
    return f"{head}\n\nBuilt from `{rel}` as a DuckDB {model.relation.lower()}."


# Dagster compiles a record's checked `__new__` (TableSchema, TableColumn, MaterializeResult…)
# on its first call, from the caller's locals, and keeps them for the life of the process.
# A frame that builds one must hold no DuckDB object: a connection kept that way outlives
# the interpreter's last collection and DuckDB's binding reports it at exit as
# `nanobind: leaked … DuckDBPyConnection`. So the warehouse is read in the helpers below,
# which return plain data, and the assets build Dagster's objects from that.
def _build_and_read(
    warehouse: WarehouseResource, model: SqlModel, limit: int
) -> tuple[int, TableData, list[tuple[str, str]]]:
    """Build the model; its row count, first `limit + 1` rows and (name, type) columns."""
    with warehouse.writer() as con:
        build_model(con, model, warehouse.lake_root())
        n_rows = relation_rows(con, model.name)
        preview = fetch(con, f'SELECT * FROM "{model.name}" LIMIT {limit + 1}')
        columns = [(r[0], r[1]) for r in con.execute(f'DESCRIBE "{model.name}"').fetchall()]
    return n_rows, preview, columns


def _chart_and_tables(warehouse: WarehouseResource, chart: Path) -> dict[str, str]:
    """Write the pass-rate chart; the report tables as markdown."""
    with warehouse.reader() as con:
        pass_rate_chart(con, chart)
        return report_markdown(con)


def _model_asset(model: SqlModel) -> AssetsDefinition:
    deps = [_key(d) for d in (*model.lake_deps, *model.model_deps)]

    @asset(
        name=model.name,
        group_name=GROUP,
        deps=deps,
        description=_description(model),
        kinds={"duckdb", "sql"},
        metadata={"sql_file": str(model.path)},
    )
    def _build(context: AssetExecutionContext, warehouse: WarehouseResource) -> MaterializeResult:
        limit = PREVIEW_ROWS if model.kind == "staging" else MAX_ROWS
        n_rows, preview, columns = _build_and_read(warehouse, model, limit)
        schema = TableSchema(columns=[TableColumn(name, kind) for name, kind in columns])
        context.log.info(f"{model.relation.lower()} {model.name}: {n_rows} rows")
        shown = TableData(preview.columns, preview.rows[:limit])
        note = f"\n\n_first {limit} of {n_rows} rows_" if n_rows > limit else ""
        return MaterializeResult(
            metadata={
                "dagster/row_count": MetadataValue.int(n_rows),
                "dagster/column_schema": schema,
                "preview": MetadataValue.md(markdown_table(shown, limit) + note),
                "sql": MetadataValue.md(f"```sql\n{model.sql.strip()}\n```"),
            }
        )

    return _build


def _report_asset(marts: Sequence[SqlModel]) -> AssetsDefinition:
    @asset(
        name=REPORT_ASSET,
        group_name=GROUP,
        deps=[AssetKey(m.name) for m in marts],
        kinds={"duckdb", "matplotlib"},
        description="The pass-rate chart and the main report tables over the marts.",
    )
    def _report(context: AssetExecutionContext, warehouse: WarehouseResource) -> MaterializeResult:
        chart = warehouse.home_dir() / CHART_FILE
        tables = _chart_and_tables(warehouse, chart)
        encoded = base64.b64encode(chart.read_bytes()).decode()
        context.log.info(f"pass-rate chart written to {chart}")
        metadata: dict[str, Any] = {
            "pass_rate_chart": MetadataValue.md(
                f"![episode pass rate](data:image/png;base64,{encoded})"
            ),
            "chart_path": MetadataValue.path(str(chart)),
        }
        metadata.update({key: MetadataValue.md(md) for key, md in tables.items()})
        return MaterializeResult(metadata=metadata)

    return _report


def build_report_assets(sql_dir: Path = SQL_DIR) -> list[AssetsDefinition]:
    """One asset per SQL file (deps parsed from the SQL) and the final `report` asset."""
    models = discover_sql_models(sql_dir)
    marts = [m for m in models if m.kind == "mart"]
    return [_model_asset(m) for m in models] + [_report_asset(marts)]


REPORT_ASSETS: list[AssetsDefinition] = build_report_assets()
