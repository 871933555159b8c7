"""`verilearn demo` end to end, the gate's verdicts, and a planted corruption blocking training."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from dagster import AssetCheckKey, DagsterInstance
from dagster._core.event_api import PartitionKeyFilter
from demo_support import DemoHome, Planted, catalog_datasets

from verilearn_assets.analysis.records import Episode, QuestionRecord
from verilearn_assets.core import lake
from verilearn_assets.core.ingest.tables import load_table_records
from verilearn_assets.core.records import SPLITS, TableRecord


def test_demo_materializes_tables_questions_episodes(demo: DemoHome) -> None:
    with demo.environ():
        stored = [t for s in SPLITS for t in lake.read_records("tables", TableRecord, split=s)]
        assert all(not Path(t.path).is_absolute() for t in stored)  # relative to the home
        tables = load_table_records(lake.home())
        assert {t.dataset for t in tables} == catalog_datasets()
        assert all(Path(t.path).is_file() and t.n_rows > 0 and t.columns for t in tables)
        by_split: dict[str, str] = {}
        for t in tables:  # a dataset never spans two splits
            assert by_split.setdefault(t.dataset, t.split) == t.split, t.dataset
        assert set(by_split.values()) == set(SPLITS)
        for source in ("template", "procedural"):
            for split in set(by_split.values()):
                qs = lake.read_records(
                    "analysis/questions", QuestionRecord, source=source, split=split
                )
                accepted = [q for q in qs if q.status == "accepted"]
                assert accepted, f"no accepted {source} questions in {split}"
                assert {q.dataset for q in qs} <= {d for d, s in by_split.items() if s == split}
                eps = lake.read_records("analysis/episodes", Episode, source=source, split=split)
                assert {e.question_id for e in eps} == {q.id for q in accepted}
                # the program teacher replays verified code: it must reach every answer of
                # every verified question on every bundled table
                assert all(e.verified for e in eps), [
                    (e.question_id, e.failure_class) for e in eps if not e.verified
                ]
        sft = pl.concat(
            [lake.read_partition("sft_dataset", split=s) for s in SPLITS], how="diagonal_relaxed"
        )
        assert sft.height > 0
    assert "Episode pass rate" in demo.stdout or "pass rate" in demo.stdout.lower()


def test_every_blocking_check_passed(demo: DemoHome) -> None:
    from verilearn_assets.gate.adapter import all_blocking_check_keys
    from verilearn_assets.training.sft.dataset_assets import smoke_suite_passes

    with demo.environ():
        instance = DagsterInstance.get()
        tables = [t for s in SPLITS for t in lake.read_records("tables", TableRecord, split=s)]
        partitions = [f"{src}|{t.split}" for t in tables for src in ("template", "procedural")]
        seen = 0
        for key in all_blocking_check_keys(["analysis"]):
            for pk in set(partitions):
                rec = instance.event_log_storage.get_latest_asset_check_execution_by_key(
                    [key], partition_filter=PartitionKeyFilter(key=pk)
                ).get(key)
                assert rec is not None, f"{key.name} never ran on {pk}"
                ev = rec.event.dagster_event.event_specific_data
                assert ev.passed, f"{key.name} on {pk}: {ev.description}"
                seen += 1
        smoke: AssetCheckKey = smoke_suite_passes.check_key
        rec = instance.event_log_storage.get_latest_asset_check_execution_by_key([smoke])[smoke]
        assert rec.event.dagster_event.event_specific_data.passed
    assert seen >= 8 * 2


def test_planted_corruption_blocks_gate_and_training(planted: Planted) -> None:
    home, partition, gate = planted.home, planted.partition, planted.gate
    split = partition.split("|")[1]
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "episodes_trace_integrity" in gate.stdout
    assert partition in gate.stdout
    assert "orphan tool output" in gate.stdout or "is not a tool message" in gate.stdout

    from verilearn_assets.cli.orchestrate import instance_for_home, run_job

    with home.environ():
        out = run_job(instance_for_home(home.home), "training_job", split)
    assert not out.success
    message = " ".join(out.failed_steps)
    assert "training gate closed" in message, message
    assert f"episodes_trace_integrity on analysis/episodes [{partition}]: FAILED" in message, (
        message
    )
