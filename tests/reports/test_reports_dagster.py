"""The report assets materialise in Dagster: views, marts, the chart PNG and the metadata."""

from pathlib import Path

import dagster
from matplotlib.image import imread

from resources.home import HomeResource
from resources.warehouse import WarehouseResource
from verilearn_assets.core.warehouse import reader, warehouse_path
from verilearn_assets.reports.assets import REPORT_ASSET, REPORT_ASSETS


def test_report_assets_materialise(small_lake: Path) -> None:
    result = dagster.materialize(
        REPORT_ASSETS,
        resources={"warehouse": WarehouseResource(home=HomeResource(path=str(small_lake)))},
        instance=dagster.DagsterInstance.ephemeral(),
    )
    assert result.success
    events = {
        ev.materialization.asset_key.to_user_string(): ev.materialization.metadata
        for ev in result.get_asset_materialization_events()
    }
    assert set(events) == {a.key.to_user_string() for a in REPORT_ASSETS}

    # every view / mart reports its row count and a markdown preview
    assert events["stg_episodes"]["dagster/row_count"].value == 9
    assert events["mart_teacher_precision"]["dagster/row_count"].value == 2
    preview = events["mart_teacher_precision"]["preview"].value
    assert "| teacher | n_episodes | n_verified | precision | n_questions |" in preview
    assert "| program | 5 | 4 | 80.0% | 5 |" in preview

    # the report: a PNG on disk, embedded as a markdown image, and the main tables
    report = events[REPORT_ASSET]
    chart = small_lake / "reports" / "pass_rate.png"
    assert report["chart_path"].value == str(chart)
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    height, width, _ = imread(chart).shape
    assert width > 400 and height > 200
    assert report["pass_rate_chart"].value.startswith("![episode pass rate](data:image/png;base64,")
    assert "| template | train | program | 3 | 2 | 66.7% |" in report["pass_rate"].value
    assert "| llm-a | 4 | 2 | 50.0% | 4 |" in report["teacher_precision"].value
    assert "| wine | 1 | 178 | test | 2 | 1 | 1 | 2 | 2 | 100.0% |" in report["dataset_stats"].value

    # the marts are tables in the warehouse file, readable by a read-only reader afterwards
    with reader(warehouse_path(small_lake)) as con:
        kinds = dict(
            con.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall()
        )
    assert kinds["stg_questions"] == "VIEW" and kinds["mart_question_counts"] == "BASE TABLE"
