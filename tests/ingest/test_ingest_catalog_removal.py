"""A dataset that leaves the catalog stops feeding generation, though its tables stay.

The lake keeps the tables of a dataset removed from datasets.yaml (questions made from
them still verify against them); `catalog_table_records`, what question generation reads,
leaves them out and counts them, for a removed entry and for `enabled: false` alike.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.partition import ingest_raw, ingest_tables
from verilearn_assets.core.ingest.tables import catalog_table_records, load_table_records
from verilearn_assets.core.records import SPLITS

LONGLEY = {"name": "longley", "kind": "bundled", "package": "statsmodels", "loader": "longley"}
IRIS = {"name": "iris", "kind": "bundled", "package": "sklearn", "loader": "iris"}


def write_catalog(conf: Path, *entries: dict):
    conf.mkdir(exist_ok=True)
    (conf / "datasets.yaml").write_text(yaml.safe_dump({"datasets": list(entries)}))
    return load_datasets_config(conf)


def drawn(cfg, home: Path) -> tuple[set[str], dict[str, int]]:
    datasets: set[str] = set()
    left_out: dict[str, int] = {}
    for split in SPLITS:
        kept, out = catalog_table_records(cfg, home, split)
        datasets |= {t.dataset for t in kept}
        for name, n in out.items():
            left_out[name] = left_out.get(name, 0) + n
    return datasets, left_out


def test_removed_or_disabled_dataset_is_left_out_of_generation(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cfg = write_catalog(tmp_path / "both", LONGLEY, IRIS)
    for name in ("longley", "iris"):
        ingest_raw(cfg, home, name)
        ingest_tables(cfg, home, name)
    assert drawn(cfg, home) == ({"longley", "iris"}, {})
    iris_tables = sum(t.dataset == "iris" for t in load_table_records(home))
    assert iris_tables >= 1

    removed = write_catalog(tmp_path / "removed", LONGLEY)
    assert drawn(removed, home) == ({"longley"}, {"iris": iris_tables})
    disabled = write_catalog(tmp_path / "disabled", LONGLEY, {**IRIS, "enabled": False})
    assert drawn(disabled, home) == ({"longley"}, {"iris": iris_tables})
    # the lake itself keeps them: earlier questions still find their tables
    assert sum(t.dataset == "iris" for t in load_table_records(home)) == iris_tables
