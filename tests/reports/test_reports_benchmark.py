"""The benchmark's synthetic rows obey the record contracts, and the marts sum them right."""

import importlib.util
from pathlib import Path

import polars as pl

from verilearn_assets.analysis.records import Episode, QuestionRecord
from verilearn_assets.core import lake
from verilearn_assets.core.records import TableRecord
from verilearn_assets.core.warehouse import build_all, warehouse_path, writer

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "reports.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_reports", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_synthetic_lake_is_valid_and_marts_add_up(tmp_path: Path) -> None:
    bench = load_bench()
    root = lake.lake_root(tmp_path)
    counts = bench.write_lake(root, 400)
    assert counts["episodes"] == 400 and counts["questions"] == 100

    # every synthetic row round-trips through its pydantic record
    for asset, model in (("questions", QuestionRecord), ("episodes", Episode)):
        frame = pl.read_parquet(root / "analysis" / asset / "**" / "part-*.parquet")
        assert frame.schema == pl.Schema(model.polars_schema())
        for row in frame.iter_rows(named=True):
            model.from_row(row)
    tables = pl.read_parquet(root / "tables" / "**" / "part-*.parquet")
    for row in tables.iter_rows(named=True):
        TableRecord.from_row(row)
    episodes = pl.read_parquet(root / "analysis" / "episodes" / "**" / "part-*.parquet")

    with writer(warehouse_path(tmp_path)) as con:
        build_all(con, root)
        n, verified = con.execute(
            "SELECT sum(n_episodes), sum(n_verified) FROM mart_episode_pass_rate"
        ).fetchone()
        n_q = con.execute("SELECT sum(n_questions) FROM mart_question_counts").fetchone()[0]
    assert (n, verified) == (400, episodes["verified"].sum())
    assert n_q == 100

    timings = bench.time_models(tmp_path, repeat=1)
    assert {"stg_episodes", "mart_episode_pass_rate", "mart_dataset_stats"} <= set(timings)
    assert all(t > 0 for t in timings.values())
