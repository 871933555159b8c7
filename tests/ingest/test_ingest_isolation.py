"""One dataset's failure is that dataset's one-line failure, recorded for the gate.

Every downloader refusal, an unreadable file and a table over the column cap each fail
only their own dataset with a single line naming the dataset, the URL and the reason; the
outcome is recorded, and `catalog_coverage` names the dataset as missing from its split
(unless it is optional). Real loopback servers, real bundled tables.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

import pytest
import yaml
from ingest_servers import LoopbackServer, Route

from verilearn_assets.core.ingest.catalog import DatasetsConfig, load_datasets_config
from verilearn_assets.core.ingest.coverage import NO_TABLES, catalog_coverage
from verilearn_assets.core.ingest.outcomes import DatasetFailure, load_outcome
from verilearn_assets.core.ingest.partition import ingest_raw, ingest_tables
from verilearn_assets.core.ingest.splits import catalog_splits
from verilearn_assets.core.ingest.tables import load_table_records

BODY = b"site,reading\n1,2.5\n2,3.5\n3,4.0\n"
BODY_SHA = hashlib.sha256(BODY).hexdigest()
BUNDLED = [
    {"name": "longley", "kind": "bundled", "package": "statsmodels", "loader": "longley"},
    {"name": "iris", "kind": "bundled", "package": "sklearn", "loader": "iris"},
]


def catalog(tmp_path: Path, *entries: dict, **policy: object) -> DatasetsConfig:
    conf = tmp_path / "conf"
    conf.mkdir(exist_ok=True)
    doc = {"datasets": [*BUNDLED, *entries]}
    if policy:
        doc["download"] = policy
    (conf / "datasets.yaml").write_text(yaml.safe_dump(doc))
    return load_datasets_config(conf)


def url_entry(url: str, sha: str = BODY_SHA, **extra: object) -> dict:
    return {"name": "remote", "kind": "url", "url": url, "sha256": sha, "format": "csv", **extra}


def fail_raw(cfg: DatasetsConfig, home: Path) -> DatasetFailure:
    with pytest.raises(DatasetFailure) as err:
        ingest_raw(cfg, home, "remote")
    return err.value


def assert_one_line(failure: DatasetFailure, url: str, status: str, *needles: str) -> None:
    text = str(failure)
    assert "\n" not in text, text
    assert text.startswith(f"dataset 'remote' ({url}): "), text
    assert failure.status == status, text
    for needle in needles:
        assert needle in text, (needle, text)
    copy = pickle.loads(pickle.dumps(failure))  # crosses worker processes intact
    assert (str(copy), copy.status) == (text, status)


def assert_recorded_and_missing(cfg: DatasetsConfig, home: Path, failure: DatasetFailure) -> None:
    """The outcome file holds the same line, and coverage names the dataset for its split."""
    outcome = load_outcome(home, "remote")
    assert outcome is not None and outcome.status == failure.status
    assert outcome.message == str(failure)
    split = catalog_splits(cfg, home)["remote"]
    (missing,) = [m for m in catalog_coverage(cfg, home, split) if m.dataset == "remote"]
    assert missing.detail == str(failure)
    assert missing.reason in missing.line() and "remote" in missing.line()


@pytest.mark.parametrize(
    ("url", "needles"),
    [
        ("http://data.example.org/r.csv", ["download failed", "scheme 'http' is not allowed"]),
        ("https://127.0.0.1:9/r.csv", ["download failed", "loopback address"]),
        ("https://localhost:9/r.csv", ["download failed", "'localhost' resolves to", "loopback"]),
        ("https://10.20.30.40/r.csv", ["download failed", "private (non-global) address"]),
        ("https://169.254.169.254/r.csv", ["download failed", "link-local address"]),
        (
            "https://mirror.verilearn.invalid/r.csv",
            ["download failed", "cannot resolve host 'mirror.verilearn.invalid'"],
        ),
    ],
    ids=["scheme", "loopback", "loopback-after-dns", "private", "link-local", "unresolvable"],
)
def test_refused_before_connecting(url: str, needles: list[str], tmp_path: Path) -> None:
    cfg = catalog(tmp_path, url_entry(url))
    home = tmp_path / "home"
    failure = fail_raw(cfg, home)
    assert_one_line(failure, url, "download_failed", *needles)
    assert_recorded_and_missing(cfg, home, failure)


def test_size_cap(http_server: LoopbackServer, tmp_path: Path) -> None:
    url = http_server.add("/big.csv", Route(body=BODY * 50))
    cfg = catalog(
        tmp_path,
        url_entry(url),
        allowed_schemes=["http"],
        allow_loopback=True,
        max_bytes=len(BODY),
    )
    failure = fail_raw(cfg, tmp_path / "home")
    assert_one_line(failure, url, "download_failed", f"exceeds the cap of {len(BODY)} bytes")
    assert_recorded_and_missing(cfg, tmp_path / "home", failure)


def test_time_cap(http_server: LoopbackServer, tmp_path: Path) -> None:
    url = http_server.add("/slow.csv", Route(body=BODY, delay_s=10.0))
    cfg = catalog(
        tmp_path, url_entry(url), allowed_schemes=["http"], allow_loopback=True, read_timeout_s=0.3
    )
    failure = fail_raw(cfg, tmp_path / "home")
    assert_one_line(failure, url, "download_failed", "timed out")
    assert_recorded_and_missing(cfg, tmp_path / "home", failure)


def test_sha256_mismatch(http_server: LoopbackServer, tmp_path: Path) -> None:
    url = http_server.add("/r.csv", Route(body=BODY))
    cfg = catalog(
        tmp_path, url_entry(url, sha="0" * 64), allowed_schemes=["http"], allow_loopback=True
    )
    failure = fail_raw(cfg, tmp_path / "home")
    assert_one_line(failure, url, "download_failed", "sha256 mismatch", f"got {BODY_SHA}")
    assert_recorded_and_missing(cfg, tmp_path / "home", failure)
    assert not (tmp_path / "home" / "raw" / "remote").exists()


def test_unreadable_file_is_a_parse_failure(http_server: LoopbackServer, tmp_path: Path) -> None:
    body = b"only a header\n"
    url = http_server.add("/bad.csv", Route(body=body))
    sha = hashlib.sha256(body).hexdigest()
    cfg = catalog(tmp_path, url_entry(url, sha=sha), allowed_schemes=["http"], allow_loopback=True)
    home = tmp_path / "home"
    ingest_raw(cfg, home, "remote")  # the download is fine
    with pytest.raises(DatasetFailure) as err:
        ingest_tables(cfg, home, "remote")
    assert_one_line(err.value, url, "parse_failed", "parse failed", "no data rows")
    assert_recorded_and_missing(cfg, home, err.value)


def test_too_many_columns_is_excluded_by_limits(
    http_server: LoopbackServer, tmp_path: Path
) -> None:
    url = http_server.add("/wide.csv", Route(body=BODY))
    conf = tmp_path / "conf"
    conf.mkdir()
    doc = {
        "download": {"allowed_schemes": ["http"], "allow_loopback": True},
        "limits": {"max_columns": 1},
        "datasets": [url_entry(url)],
    }
    (conf / "datasets.yaml").write_text(yaml.safe_dump(doc))
    cfg = load_datasets_config(conf)
    home = tmp_path / "home"
    ingest_raw(cfg, home, "remote")
    with pytest.raises(DatasetFailure) as err:
        ingest_tables(cfg, home, "remote")
    assert_one_line(err.value, url, "excluded_by_limits", "excluded by limits", "over the cap")
    assert_recorded_and_missing(cfg, home, err.value)


def test_good_datasets_land_beside_a_failed_one_and_coverage_says_why(tmp_path: Path) -> None:
    url = "https://mirror.verilearn.invalid/r.csv"
    cfg = catalog(tmp_path, url_entry(url))
    home = tmp_path / "home"
    splits = catalog_splits(cfg, home)
    for name in ("longley", "iris"):
        ingest_raw(cfg, home, name)
        ingest_tables(cfg, home, name)
    fail_raw(cfg, home)
    present = {t.dataset: t.split for t in load_table_records(home)}
    assert present == {"longley": splits["longley"], "iris": splits["iris"]}
    # the split of every dataset comes from the catalog, not from what was fetched
    assert catalog_splits(cfg, tmp_path / "fresh-home") == splits
    by_split = {s: catalog_coverage(cfg, home, s) for s in ("train", "dev", "test")}
    named = {s: [m.dataset for m in ms if m.dataset != NO_TABLES] for s, ms in by_split.items()}
    assert named[splits["remote"]] == ["remote"]
    assert sum(len(v) for v in named.values()) == 1
    (missing,) = [m for m in by_split[splits["remote"]] if m.dataset == "remote"]
    assert missing.reason == "download failed" and "cannot resolve host" in missing.detail
    # a split the catalog leaves empty still does not pass as covered
    for split, ms in by_split.items():
        has_tables = split in present.values()
        assert any(m.dataset == NO_TABLES for m in ms) is not has_tables, split


def test_optional_dataset_is_not_missing_unless_asked(tmp_path: Path) -> None:
    url = "https://mirror.verilearn.invalid/r.csv"
    cfg = catalog(tmp_path, url_entry(url, optional=True))
    home = tmp_path / "home"
    fail_raw(cfg, home)
    split = catalog_splits(cfg, home)["remote"]
    assert "remote" not in [m.dataset for m in catalog_coverage(cfg, home, split)]
    (opt,) = [
        m
        for m in catalog_coverage(cfg, home, split, include_optional=True)
        if m.dataset == "remote"
    ]
    assert opt.optional and "(optional)" in opt.line()


def test_never_materialized_is_named(tmp_path: Path) -> None:
    cfg = catalog(tmp_path)
    home = tmp_path / "home"
    splits = catalog_splits(cfg, home)
    ingest_raw(cfg, home, "iris")  # raw copy only: its tables never ran
    reasons = {
        m.dataset: m.reason for s in set(splits.values()) for m in catalog_coverage(cfg, home, s)
    }
    assert reasons["longley"] == "never materialized"
    assert reasons["iris"] == "fetched but its tables were never materialized"
    with pytest.raises(ValueError, match="unknown split 'val'"):
        catalog_coverage(cfg, home, "val")
