"""The catalog: the shipped one is valid and offline; bad ones name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from verilearn_assets.core.config import ConfigError
from verilearn_assets.core.ingest.bundled import (
    BundledDatasetError,
    available_loaders,
    load_bundled,
)
from verilearn_assets.core.ingest.catalog import BundledDataset, UrlDataset, load_datasets_config

GOOD_ENTRY = "  - {name: longley, kind: bundled, package: statsmodels, loader: longley}\n"


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "datasets.yaml").write_text(text)
    return tmp_path


def test_default_catalog_is_offline_and_complete() -> None:
    cfg = load_datasets_config()
    enabled = cfg.enabled()
    assert all(isinstance(d, BundledDataset) for d in enabled)  # the demo needs no network
    assert 25 <= len(enabled) <= 35
    urls = [d for d in cfg.datasets if isinstance(d, UrlDataset)]
    assert urls and not any(d.enabled for d in urls)
    assert cfg.download.allowed_schemes == ["https"] and not cfg.download.allow_loopback
    for entry in enabled:  # every loader named in the catalog exists in its package
        assert entry.loader in available_loaders(entry.package), entry.name
    statsmodels = {d.loader for d in enabled if d.package == "statsmodels"}
    sklearn = {d.loader for d in enabled if d.package == "sklearn"}
    assert statsmodels == set(available_loaders("statsmodels"))
    assert sklearn == {"iris", "wine", "breast_cancer", "diabetes", "linnerud"}


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"datasets\.yaml: config file not found"):
        load_datasets_config(tmp_path)


def test_unknown_key_names_file_and_field(tmp_path: Path) -> None:
    _write(tmp_path, "datasetz: []\ndatasets:\n" + GOOD_ENTRY)
    with pytest.raises(ConfigError) as info:
        load_datasets_config(tmp_path)
    assert str(tmp_path / "datasets.yaml") in str(info.value)
    assert "field 'datasetz': Extra inputs are not permitted" in str(info.value)


def test_unknown_key_inside_an_entry(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "datasets:\n  - {name: x, kind: bundled, package: statsmodels, "
        "loader: longley, lodaer: nile}\n",
    )
    with pytest.raises(ConfigError, match=r"field 'datasets\.0\.bundled\.lodaer'"):
        load_datasets_config(tmp_path)


def test_wrong_type_names_the_field(tmp_path: Path) -> None:
    _write(tmp_path, "limits: {max_rows: lots}\ndatasets:\n" + GOOD_ENTRY)
    with pytest.raises(
        ConfigError,
        match=r"datasets\.yaml: field 'limits\.max_rows': "
        r"Input should be a valid integer",
    ):
        load_datasets_config(tmp_path)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("splits: {train: 0.9, dev: 0.2, test: 0.1}\ndatasets:\n" + GOOD_ENTRY, "splits"),
        ("datasets:\n" + GOOD_ENTRY + GOOD_ENTRY, "datasets"),
        (
            "datasets:\n  - {name: u, kind: url, url: 'https://example.org/a.csv', sha256: abc, "
            "format: csv}\n",
            r"datasets\.0\.url\.sha256",
        ),
        (
            "datasets:\n  - {name: u, kind: url, url: 'not a url', sha256: '" + "a" * 64 + "', "
            "format: csv}\n",
            r"datasets\.0\.url\.url",
        ),
        (
            "datasets:\n  - {name: Bad Name, kind: bundled, package: sklearn, loader: iris}\n",
            r"datasets\.0\.bundled\.name",
        ),
        (
            "datasets:\n  - {name: x, kind: bundled, package: numpy, loader: iris}\n",
            r"datasets\.0\.bundled\.package",
        ),
        (
            "download: {allowed_schemes: [https, ftp]}\ndatasets:\n" + GOOD_ENTRY,
            r"download\.allowed_schemes\.1",
        ),
    ],
)
def test_invalid_values_name_the_field(tmp_path: Path, text: str, field: str) -> None:
    _write(tmp_path, text)
    with pytest.raises(ConfigError, match=rf"datasets\.yaml: field '{field}'"):
        load_datasets_config(tmp_path)


def test_failing_bundled_dataset_raises_with_its_name() -> None:
    entry = BundledDataset(
        name="ghost", kind="bundled", package="statsmodels", loader="no_such_table"
    )
    with pytest.raises(
        BundledDatasetError,
        match=r"bundled dataset 'ghost' "
        r"\(statsmodels\.no_such_table\): no such",
    ):
        load_bundled(entry)


def test_corpora_are_not_table_partitions_nor_drawn_into_splits(tmp_path: Path) -> None:
    """`corpora:` lives in the same file but is no dataset: the partitions platform/defs
    builds and the salted split draw cover `datasets:` only."""
    from verilearn_assets.core.ingest.catalog import dataset_partition_keys
    from verilearn_assets.core.ingest.splits import catalog_splits
    from verilearn_assets.core.partitions import DATASET

    shipped = load_datasets_config()
    assert shipped.corpora, "the shipped catalog lists the refactor corpora"
    partitions = DATASET.get_partition_keys()
    assert partitions == dataset_partition_keys()
    assert not set(shipped.corpora) & set(partitions)
    _write(
        tmp_path,
        "datasets:\n"
        "  - {name: remote, kind: url, url: 'https://example.org/r.csv', format: csv,\n"
        f"     sha256: {'a' * 64}}}\n"
        "corpora:\n"
        "  mycode: {split: test, licence: MIT, path: code}\n"
        f"  packed: {{split: train, licence: MIT, archive: {{path: p.tgz, sha256: {'b' * 64}}}}}\n",
    )
    cfg = load_datasets_config(tmp_path)
    assert sorted(cfg.corpora) == ["mycode", "packed"]
    assert dataset_partition_keys(tmp_path) == ["remote"]
    assert [d.name for d in cfg.enabled()] == ["remote"]
    assert set(catalog_splits(cfg, tmp_path / "home")) == {"remote"}


@pytest.mark.parametrize(
    ("programs", "field"),
    [
        ("  mine: {licence: MIT, path: x}\n", r"programs\.mine\.family"),
        ("  mine: {family: dafny, licence: MIT}\n", r"programs\.mine"),
        ("  mine: {family: dafny, licence: MIT, path: x, bundled: y}\n", r"programs\.mine\.path"),
        (
            "  mine: {family: dafny, licence: MIT, path: x, split: train}\n",
            r"programs\.mine\.split",
        ),
    ],
)
def test_program_corpora_are_checked_and_carry_no_split(
    tmp_path: Path, programs: str, field: str
) -> None:
    """`programs:` (a family's program collections) share the origins of `corpora:` but
    have no split of their own: the family splits per program."""
    _write(tmp_path, "datasets:\n" + GOOD_ENTRY + "programs:\n" + programs)
    with pytest.raises(ConfigError, match=rf"datasets\.yaml: field '{field}"):
        load_datasets_config(tmp_path)


def test_program_corpora_join_from_an_untracked_local_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from verilearn_assets.core.ingest.catalog import program_corpora

    _write(
        tmp_path,
        "datasets:\n" + GOOD_ENTRY + "programs:\n"
        "  shipped: {family: dafny, licence: MIT, bundled: corpus}\n"
        "  disabled: {family: dafny, licence: MIT, path: gone, enabled: false}\n",
    )
    local = tmp_path / "local" / "mine.yaml"
    local.parent.mkdir()
    local.write_text("programs:\n  mine: {family: dafny, licence: MIT, path: ../code}\n")
    monkeypatch.setenv("VERILEARN_LOCAL_CATALOG", str(local))
    found = program_corpora("dafny", tmp_path)
    assert {n: f for n, (_, f) in found.items()} == {
        "shipped": tmp_path / "datasets.yaml",
        "mine": local,
    }
    assert program_corpora("lean", tmp_path) == {}
    # the same folder under two names would load its programs twice
    local.write_text(
        "programs:\n  mine: {family: dafny, licence: MIT, path: ../code}\n"
        f"  again: {{family: dafny, licence: MIT, path: {tmp_path / 'code'}}}\n"
    )
    with pytest.raises(ConfigError, match=r"programs\.again: the same corpus as programs\.mine"):
        program_corpora("dafny", tmp_path)
    local.write_text("programs:\n  mine: {family: dafny, licence: MIT, pth: x}\n")
    with pytest.raises(ConfigError, match=r"mine\.yaml: field 'programs\.mine\.pth'"):
        program_corpora("dafny", tmp_path)
