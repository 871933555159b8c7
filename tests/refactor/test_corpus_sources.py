"""Corpora from a sha256-pinned archive over HTTP, through the platform's hardened
downloader; a bad entry fails alone and names itself."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from refactor_support import closed_port, pack_repo, refactor_config, serve_directory

from verilearn_assets.core.config import ConfigError
from verilearn_assets.refactor.catalog import load_corpus, load_rules, read_corpus
from verilearn_assets.refactor.tasks import generate_tasks

LOOPBACK_HTTP = {  # the test server: plain HTTP on 127.0.0.1, short timeouts
    "allowed_schemes": ["http"],
    "allow_loopback": True,
    "connect_timeout_s": 2,
    "read_timeout_s": 5,
    "total_timeout_s": 20,
}


def _write(directory: Path, repos: dict, download: dict | None) -> None:
    data: dict = {"repos": repos}
    if download is not None:
        data["download"] = download
    (directory / "corpus.yaml").write_text(yaml.safe_dump(data))


def test_archive_by_url_is_fetched_verified_and_bad_entries_fail_alone(tmp_path: Path) -> None:
    bundled = {r.name: r for r in load_corpus()}
    served = tmp_path / "served"
    served.mkdir()
    digest = pack_repo(bundled["pathconf"].path, served / "pathconf.tar.gz", "pathconf-1.2")
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    with serve_directory(served) as base:
        url = f"{base}/pathconf.tar.gz"
        archive = {"url": url, "sha256": digest, "subdir": "pathconf-1.2"}
        repos = {
            "fetched": {"split": "dev", "licence": "MIT", "archive": archive},
            "badpin": {
                "split": "dev",
                "licence": "MIT",
                "archive": {**archive, "sha256": "1" * 64},
            },
            "gone": {
                "split": "test",
                "licence": "MIT",
                "archive": {**archive, "url": f"http://127.0.0.1:{closed_port()}/x.tar.gz"},
            },
            "local": {"split": "train", "licence": "BSD-3", "path": str(bundled["ledger"].path)},
        }
        _write(catalog, repos, LOOPBACK_HTTP)
        loaded = read_corpus(catalog, home=tmp_path / "home")
        # the platform's policy (configs/datasets.yaml: https only, no loopback) applies
        # when the corpus does not set its own
        _write(catalog, {"fetched": repos["fetched"]}, None)
        refused = read_corpus(catalog, home=tmp_path / "home-policy")
    assert sorted(r.name for r in loaded.repos) == ["fetched", "local"]
    fetched = next(r for r in loaded.repos if r.name == "fetched")
    assert (fetched.origin, fetched.sha256, fetched.licence) == (f"archive:{url}", digest, "MIT")
    assert (fetched.path / "pathconf" / "loader.py").is_file()
    errors = {f.name: f.error for f in loaded.failures}
    assert sorted(errors) == ["badpin", "gone"]
    assert "repo 'badpin'" in errors["badpin"] and "sha256 mismatch" in errors["badpin"]
    assert "repo 'gone'" in errors["gone"] and "connect" in errors["gone"]
    assert all(str(catalog / "corpus.yaml") in e for e in errors.values())
    assert not list((tmp_path / "home" / "refactor" / "corpora").glob("badpin*"))
    (failure,) = refused.failures
    assert "repo 'fetched'" in failure.error and "scheme" in failure.error, failure.error
    # strict loading names every failed entry
    _write(catalog, repos, LOOPBACK_HTTP)
    with pytest.raises(ConfigError, match=r"repo 'badpin'.*repo 'gone'"):
        load_corpus(catalog, home=tmp_path / "home")
    # the dev split still gets tasks from the fetched archive (badpin failed beside it)
    dev = loaded.for_split("dev")
    assert [f.name for f in dev.failures] == ["badpin"]
    rule = [r for r in load_rules() if r.id == "eq-none-to-is"]
    config = refactor_config("bwrap", tmp_path)
    tasks = generate_tasks("template", "dev", config, dev.repos, rule)
    assert tasks and all(t.repo == "fetched" and t.licence == "MIT" for t in tasks)
    assert all(t.status == "accepted" for t in tasks), [t.status for t in tasks]


def test_tasks_asset_writes_the_good_entries_and_names_the_bad(tmp_path: Path) -> None:
    """Through Dagster: `corpus:` points at our own catalog; the pinned archive's tasks are
    written, the entry with a wrong pin is named in the log and metadata, nothing fails."""
    from dagster import DagsterInstance, materialize

    from resources.home import HomeResource
    from verilearn_assets.core import lake
    from verilearn_assets.platform.defs import partition_key
    from verilearn_assets.refactor.assets import tasks
    from verilearn_assets.refactor.family import FAMILY

    repo_root = Path(__file__).resolve().parents[2]
    served, catalog, configs = tmp_path / "served", tmp_path / "catalog", tmp_path / "configs"
    home = tmp_path / "home"
    for d in (served, catalog, configs, home / "dagster"):
        d.mkdir(parents=True)
    bundled = {r.name: r for r in load_corpus()}
    digest = pack_repo(bundled["pathconf"].path, served / "pathconf.tar.gz", "pathconf-1.2")
    # the archive limits come from the platform catalog (datasets.yaml) of the config dir
    (configs / "datasets.yaml").write_text((repo_root / "configs" / "datasets.yaml").read_text())
    data = yaml.safe_load((repo_root / "configs" / "refactor.yaml").read_text())
    data["corpus"] = str(catalog)
    data["generation"] = {"max_pairs_per_repo": 0, "rules": ["eq-none-to-is"]}
    (configs / "refactor.yaml").write_text(yaml.safe_dump(data))
    with serve_directory(served) as base, pytest.MonkeyPatch.context() as mp:
        archive = {"url": f"{base}/pathconf.tar.gz", "sha256": digest, "subdir": "pathconf-1.2"}
        bad = {**archive, "sha256": "2" * 64}
        repos = {
            "fetched": {"split": "dev", "licence": "MIT", "archive": archive},
            "badpin": {"split": "dev", "licence": "MIT", "archive": bad},
        }
        _write(catalog, repos, LOOPBACK_HTTP)
        mp.setenv("VERILEARN_CONFIG_DIR", str(configs))
        mp.setenv("VERILEARN_HOME", str(home))
        mp.setenv("DAGSTER_HOME", str(home / "dagster"))
        result = materialize(
            [tasks],
            partition_key=str(partition_key("template", "dev")),
            resources={"home": HomeResource(path=str(home))},
            instance=DagsterInstance.ephemeral(),
        )
    assert result.success
    (event,) = result.get_asset_materialization_events()
    meta = event.materialization.metadata
    assert "repo 'badpin'" in meta["corpus_failures"].value
    assert "sha256 mismatch" in meta["corpus_failures"].value
    assert meta["repos"].value == "fetched"
    written = FAMILY.read_tasks(home, "template", "dev")
    assert written and {t.repo for t in written} == {"fetched"}
    assert lake.lake_root(home).is_dir()
