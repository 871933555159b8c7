"""The code location loads, with one source × split partitioning shared by the assets."""

from __future__ import annotations

from dagster import AssetKey, MultiPartitionsDefinition

from verilearn_assets.core.partitions import SOURCE_SPLIT
from verilearn_assets.definitions import defs


def test_partition_keys_are_the_nine_pairs() -> None:
    keys = SOURCE_SPLIT.get_partition_keys()
    assert sorted(keys) == sorted(
        f"{src}|{spl}"
        for src in ("template", "procedural", "llm")
        for spl in ("train", "dev", "test")
    )
    assert len(keys) == 9


def test_definitions_load_with_shared_partitioning() -> None:
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {
        "raw_datasets",
        "tables",
        "analysis/questions",
        "analysis/episodes",
        "sft_dataset",
        "report",
        "smoke_suite",
    } <= keys
    for name in ("questions", "episodes"):
        pdef = graph.get(AssetKey(["analysis", name])).partitions_def
        assert isinstance(pdef, MultiPartitionsDefinition)
        assert pdef is SOURCE_SPLIT  # defined once, shared
    checks = {k.name for k in graph.asset_check_keys}
    assert {
        "questions_schema_contract",
        "questions_reproduce",
        "episodes_trace_integrity",
        "episodes_hooks_grounded",
        "smoke_suite_passes",
    } <= checks
    for job in ("platform_job", "smoke_job", "analysis_job", "training_job", "reports_job"):
        assert defs.resolve_job_def(job) is not None
    from verilearn_assets.core.partitions import DATASET

    for name in ("raw_datasets", "tables"):  # one partition per catalog dataset
        assert graph.get(AssetKey(name)).partitions_def is DATASET


def test_report_assets_depend_on_lake_assets_parsed_from_sql() -> None:
    graph = defs.resolve_asset_graph()
    parents = {p.to_user_string() for p in graph.get(AssetKey("stg_episodes")).parent_keys}
    assert "analysis/episodes" in parents
