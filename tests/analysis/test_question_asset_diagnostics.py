"""The questions asset through Dagster: its readability metadata, and the search-stage
rejections it writes to the lake, which make the diagnostics mart's counts complete."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from dagster import materialize

from resources.container_pool import ContainerPoolResource
from resources.home import HomeResource
from resources.vllm import VllmResource
from verilearn_assets.analysis.assets import questions
from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.analysis.sources.generation_stats import LAKE, SearchRejectionRecord
from verilearn_assets.core import lake
from verilearn_assets.core.warehouse import build_all, reader, warehouse_path, writer
from verilearn_assets.ingest.assets import INGEST_ASSETS

REPO = Path(__file__).resolve().parents[2]
CATALOG = {  # one bundled table, every split share to dev
    "seed": 0,
    "splits": {"train": 0.0, "dev": 1.0, "test": 0.0},
    "limits": {"max_rows": 100},
    "datasets": [
        {"name": "longley", "kind": "bundled", "package": "statsmodels", "loader": "longley"}
    ],
}


def test_procedural_partition_writes_search_rejections_the_mart_counts(tmp_path, monkeypatch):
    conf = tmp_path / "conf"
    shutil.copytree(REPO / "configs", conf)
    (conf / "datasets.yaml").write_text(yaml.safe_dump(CATALOG))
    qcfg = yaml.safe_load((conf / "questions.yaml").read_text())
    qcfg["procedural"]["max_programs"] = 3
    (conf / "questions.yaml").write_text(yaml.safe_dump(qcfg))
    sandbox = yaml.safe_load((conf / "sandbox.yaml").read_text())
    (conf / "sandbox.yaml").write_text(yaml.safe_dump(sandbox | {"backend": "bwrap", "slots": 2}))
    monkeypatch.setenv("VERILEARN_CONFIG_DIR", str(conf))
    monkeypatch.setenv("VERILEARN_HOME", str(tmp_path / "home"))
    home = {"home": HomeResource()}
    assert materialize(INGEST_ASSETS, partition_key="longley", resources=home).success
    result = materialize(
        [questions],
        partition_key="procedural|dev",
        resources={
            "container_pool": ContainerPoolResource(),
            "vllm": VllmResource(),
            "home": HomeResource(),
        },
    )
    assert result.success
    (mat,) = result.asset_materializations_for_node("analysis__questions")
    meta = {k: v.value for k, v in mat.metadata.items()}
    assert "readability score" in meta["readability"] and "median" in meta["readability"]

    root = lake.lake_root(tmp_path / "home")
    recs = lake.read_records(
        "analysis/questions", QuestionRecord, root, source="procedural", split="dev"
    )
    stats = lake.read_records(LAKE, SearchRejectionRecord, root, source="procedural", split="dev")
    assert stats and {s.dataset for s in stats} == {"longley"}
    searched = sum(s.n for s in stats)
    # every search-only reason is in the metadata's search-stage table with the same count
    for s in stats:
        assert f"| {s.reason} | {s.n} |" in meta["search_rejections"]
    db = warehouse_path(tmp_path / "home")
    with writer(db) as w:
        build_all(w, root)
    with reader(db) as r:
        tried, accepted, rejected, search_stage = r.execute(
            "SELECT candidates_tried, accepted, rejected, rejected_search_stage "
            "FROM mart_generation_diagnostics WHERE dataset = 'longley'"
        ).fetchone()
    n_acc = sum(q.status == "accepted" for q in recs)
    assert (tried, accepted, search_stage) == (len(recs) + searched, n_acc, searched)
    assert tried == accepted + rejected
