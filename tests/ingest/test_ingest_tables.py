"""build_tables end to end on real bundled datasets, a URL source served on loopback, and
the Dagster assets materialized against a private home."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pandas as pd
import pytest
from dagster import materialize
from ingest_servers import LoopbackServer, Route

from resources.home import HomeResource
from verilearn_assets.core.ingest.archive import file_sha256
from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.download import DownloadError
from verilearn_assets.core.ingest.outcomes import DatasetFailure, load_outcome
from verilearn_assets.core.ingest.splits import catalog_splits
from verilearn_assets.core.ingest.tables import (
    build_tables,
    load_table_records,
    split_stats,
    write_dataset_tables,
    write_table_records,
)
from verilearn_assets.ingest.assets import INGEST_ASSETS

CATALOG = """
seed: 3
splits: {train: 0.5, dev: 0.25, test: 0.25}
limits: {max_rows: 500}
datasets:
  - {name: longley, kind: bundled, package: statsmodels, loader: longley}
  - {name: co2, kind: bundled, package: statsmodels, loader: co2}
  - {name: fair, kind: bundled, package: statsmodels, loader: fair}
  - {name: iris, kind: bundled, package: sklearn, loader: iris}
  - {name: linnerud, kind: bundled, package: sklearn, loader: linnerud}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    conf = tmp_path_factory.mktemp("conf")
    (conf / "datasets.yaml").write_text(CATALOG)
    cfg = load_datasets_config(conf)
    home = tmp_path_factory.mktemp("home")
    return cfg, home, build_tables(cfg, home)


def test_records_point_at_typed_parquet(built) -> None:
    _cfg, home, records = built
    assert sorted((r.dataset, r.name) for r in records) == [
        ("co2", "co2"),
        ("fair", "fair"),
        ("iris", "iris"),
        ("linnerud", "exercise"),
        ("linnerud", "physiological"),
        ("longley", "longley"),
    ]
    for r in records:
        path = Path(r.path)
        assert path == home / "tables" / r.dataset / f"{r.name}.parquet"
        frame = pd.read_parquet(path)
        assert frame.shape == (r.n_rows, r.n_columns)
        assert file_sha256(path) == r.sha256
        assert [c.name for c in r.columns] == list(frame.columns)
    assert (home / "raw" / "longley" / "longley.csv").is_file()
    assert len({r.id for r in records}) == len(records)


def test_types_and_profiles_survive(built) -> None:
    records = {r.name: r for r in built[2]}
    co2 = {c.name: c for c in records["co2"].columns}
    assert co2["date"].kind == "datetime" and co2["co2"].kind == "numeric"
    assert co2["co2"].missing_pct > 0  # the weekly series has gaps, kept as missing
    iris = {c.name: c for c in records["iris"].columns}
    assert iris["target"].kind == "categorical"
    assert sorted(iris["target"].top_values) == ["setosa", "versicolor", "virginica"]
    longley = {c.name: c for c in records["longley"].columns}
    assert longley["YEAR"].kind == "integer" and longley["YEAR"].id_like
    assert longley["GNP"].mean == pytest.approx(
        pd.read_parquet(records["longley"].path)["GNP"].mean()
    )


def test_row_cap_is_a_deterministic_ordered_sample(built, tmp_path: Path) -> None:
    cfg, _home, records = built
    fair = next(r for r in records if r.name == "fair")
    assert fair.n_rows == 500
    again = build_tables(cfg, tmp_path / "again")
    assert sorted(r.id for r in again) == sorted(r.id for r in records)
    fair_again = next(r for r in again if r.name == "fair")
    pd.testing.assert_frame_equal(pd.read_parquet(fair.path), pd.read_parquet(fair_again.path))
    assert {r.dataset: r.split for r in again} == {r.dataset: r.split for r in records}


def test_splits_are_per_dataset(built) -> None:
    records = built[2]
    by_dataset: dict[str, set[str]] = {}
    for r in records:
        by_dataset.setdefault(r.dataset, set()).add(r.split)
    assert all(len(s) == 1 for s in by_dataset.values())  # linnerud's two tables together
    stats = split_stats(records)
    assert {s: v["datasets"] for s, v in stats.items()} == {"train": 3, "dev": 1, "test": 1}
    assert sum(v["rows"] for v in stats.values()) == sum(r.n_rows for r in records)


def test_lake_round_trip(built) -> None:
    _cfg, home, records = built
    write_table_records(home, records)
    assert sorted(load_table_records(home), key=lambda r: r.id) == sorted(
        records, key=lambda r: r.id
    )
    for split in ("train", "dev", "test"):
        assert (home / "lake" / "tables" / f"split={split}").is_dir()
        got = load_table_records(home, split)
        assert got and all(r.split == split for r in got)
    with pytest.raises(ValueError, match="unknown split 'val'"):
        load_table_records(home, "val")


def _tarball() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in (
            ("pkg/readings.tsv", b"site\tday\tok\n1\t2024-01-01\tyes\n2\t2024-01-02\tno\n"),
            ("pkg/README.md", b"not a table"),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _url_catalog(tmp_path: Path, url: str, sha: str) -> Path:
    conf = tmp_path / "conf"
    conf.mkdir(exist_ok=True)
    (conf / "datasets.yaml").write_text(
        "download: {allowed_schemes: [http], allow_loopback: true}\n"
        "datasets:\n"
        f"  - {{name: readings, kind: url, url: '{url}', sha256: '{sha}', format: tar.gz}}\n"
        "  - {name: stackloss, kind: bundled, package: statsmodels, loader: stackloss}\n"
    )
    return conf


def test_url_dataset_from_a_loopback_server(http_server: LoopbackServer, tmp_path: Path) -> None:
    body = _tarball()
    url = http_server.add("/readings.tar.gz", Route(body=body))
    cfg = load_datasets_config(_url_catalog(tmp_path, url, hashlib.sha256(body).hexdigest()))
    home = tmp_path / "home"
    records = {r.dataset: r for r in build_tables(cfg, home)}
    readings = records["readings"]
    assert readings.name == "pkg_readings" and (readings.n_rows, readings.n_columns) == (2, 3)
    assert [c.kind for c in readings.columns] == ["integer", "datetime", "boolean"]
    build_tables(cfg, home)  # second run: served from the sha-checked cache
    assert len(http_server.hosts_seen) == 1


def test_url_dataset_with_wrong_pin_stops_the_build(
    http_server: LoopbackServer, tmp_path: Path
) -> None:
    url = http_server.add("/readings.tar.gz", Route(body=_tarball()))
    cfg = load_datasets_config(_url_catalog(tmp_path, url, "1" * 64))
    home = tmp_path / "home"
    with pytest.raises(DatasetFailure, match="download failed: sha256 mismatch") as err:
        build_tables(cfg, home)
    assert isinstance(err.value.__cause__, DownloadError)
    assert "\n" not in str(err.value) and str(err.value).startswith(f"dataset 'readings' ({url})")
    assert not (home / "raw" / "readings").exists()
    assert not list((home / "downloads").iterdir())


def test_dagster_assets_materialize_one_partition_per_dataset(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "datasets.yaml").write_text(CATALOG)
    monkeypatch.setenv("VERILEARN_CONFIG_DIR", str(conf))
    cfg = load_datasets_config(conf)
    splits = catalog_splits(cfg, home)
    for name in ("linnerud", "co2"):  # partition keys come from the shipped catalog
        result = materialize(INGEST_ASSETS, partition_key=name, resources={"home": HomeResource()})
        assert result.success
        (mat,) = result.asset_materializations_for_node("tables")
        mine = [r for r in load_table_records(home) if r.dataset == name]
        assert mat.metadata["tables"].value == len(mine) > 0
        assert mat.metadata["split"].value == splits[name] == mine[0].split
        (raw,) = result.asset_materializations_for_node("raw_datasets")
        assert raw.metadata["dataset"].value == name
        assert load_outcome(home, name).status == "ok"
    # each partition wrote only its own dataset's part
    assert {r.dataset for r in load_table_records(home)} == {"linnerud", "co2"}


def test_a_dataset_moving_splits_never_breaks_a_reader_of_the_split(built, tmp_path: Path) -> None:
    """One thread moves a dataset between two splits (the catalog changed) while another
    reads the first split: every read succeeds and lists the dataset at most once; the
    move takes each split's partition lock, as the lake's own writers do."""
    import threading

    _cfg, _home, records = built
    mover = records[0]
    splits = [mover.split, next(s for s in ("train", "dev", "test") if s != mover.split)]
    home = tmp_path / "home"
    write_table_records(home, [r for r in records if r.dataset != mover.dataset])
    done, first_read, errors, reads = threading.Event(), threading.Event(), [], [0]

    def move() -> None:
        try:
            first_read.wait(30)  # the moves overlap reads even on a loaded machine
            for i in range(150):
                split = splits[i % 2]
                write_dataset_tables(
                    home, mover.dataset, split, [mover.model_copy(update={"split": split})]
                )
        except Exception as exc:
            errors.append(f"writer: {exc!r}")
        finally:
            done.set()

    def read() -> None:
        while not done.is_set():
            try:
                got = [r.dataset for r in load_table_records(home, splits[0])]
            except Exception as exc:
                errors.append(f"reader: {exc!r}")
                return
            if got.count(mover.dataset) > 1:
                errors.append(f"reader saw {mover.dataset} {got.count(mover.dataset)} times")
                return
            reads[0] += 1
            first_read.set()

    threads = [threading.Thread(target=move), threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert reads[0] > 0
    assert [r.dataset for r in load_table_records(home, splits[1])].count(mover.dataset) == 1
