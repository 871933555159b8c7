"""`verilearn gate` as people use it: run again and again, and on a partition with a bad record."""

from __future__ import annotations

import re

import polars as pl
from dagster import AssetCheckKey, AssetKey, DagsterInstance
from demo_support import DemoHome, copy_home

from verilearn_assets.core import lake


def _first_split_with(demo: DemoHome, source: str) -> str:
    with demo.environ():
        for split in ("train", "dev", "test"):
            if lake.partition_dir("analysis/questions", source=source, split=split).exists():
                return split
    raise AssertionError(f"the demo wrote no {source} questions")


def test_gate_runs_twice_and_records_each_run(demo: DemoHome, tmp_path) -> None:
    home = copy_home(demo, tmp_path)
    split = _first_split_with(demo, "procedural")
    args = ("gate", "--family", "analysis", "--sources", "procedural", "--splits", split)
    runs = [home.run(*args) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stdout + run.stderr
        assert "Traceback" not in run.stderr
        assert "questions_reproduce: ok" in run.stdout
    ids = [re.search(r"gate run (gate-[0-9a-f-]+)", r.stdout).group(1) for r in runs]
    assert ids[0] != ids[1]
    with home.environ():
        instance = DagsterInstance.get()
        key = AssetCheckKey(AssetKey(["analysis", "questions"]), "questions_schema_contract")
        history = instance.event_log_storage.get_asset_check_execution_history(key, limit=50)
        gate_runs = {r.run_id for r in history if r.run_id.startswith("gate-")}
    assert set(ids) <= gate_runs  # both invocations are on record, neither replaced the other


def test_legacy_key_fails_its_partition_and_the_gate_goes_on(demo: DemoHome, tmp_path) -> None:
    home = copy_home(demo, tmp_path)
    split = _first_split_with(demo, "template")
    with home.environ():
        pdir = lake.partition_dir("analysis/questions", source="template", split=split)
        part = sorted(pdir.glob("part-*.parquet"))[0]
        frame = pl.read_parquet(part)
        frame.with_columns(pl.lit("42").alias("ground_truth")).write_parquet(part)
    run = home.run("gate", "--family", "analysis", "--splits", split)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr and "error:" not in run.stderr
    failing = run.stdout.split("failing check(s):", 1)[1]
    assert f"questions_schema_contract on analysis/questions [template|{split}]" in failing
    assert "ground_truth" in failing
    # the other source of the same split was still evaluated, and passed
    assert f"gate analysis [procedural|{split}]:" in run.stdout
    assert f"[procedural|{split}]" not in failing
