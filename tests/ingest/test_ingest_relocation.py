"""A home moved, copied or mounted elsewhere still finds its tables: records store paths
relative to the home and are resolved against the home that reads them."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from verilearn_assets.core import lake
from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.partition import ingest_raw, ingest_tables
from verilearn_assets.core.ingest.tables import load_table_records
from verilearn_assets.core.records import SPLITS, TableRecord


def test_copied_home_reads_its_own_tables(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    entry = {"name": "longley", "kind": "bundled", "package": "statsmodels", "loader": "longley"}
    (conf / "datasets.yaml").write_text(yaml.safe_dump({"datasets": [entry]}))
    cfg = load_datasets_config(conf)
    first = tmp_path / "first"
    ingest_raw(cfg, first, "longley")
    ingest_tables(cfg, first, "longley")

    stored = [
        t
        for s in SPLITS
        for t in lake.read_records("tables", TableRecord, lake.lake_root(first), split=s)
    ]
    assert stored and all(not Path(t.path).is_absolute() for t in stored)

    moved = tmp_path / "moved"
    shutil.copytree(first, moved)
    shutil.rmtree(first)
    (table,) = load_table_records(moved)
    assert Path(table.path).is_file()
    assert Path(table.path).is_relative_to(moved.resolve())
