"""Corpora (`configs/datasets.yaml` `corpora:`) from a sha256-pinned archive over HTTP,
through the platform's hardened downloader; a bad entry fails alone and names itself."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from refactor_support import closed_port, pack_repo, refactor_config, serve_directory

from verilearn_assets.core.config import ConfigError
from verilearn_assets.refactor.sources.catalog import load_corpus, load_rules, read_corpus
from verilearn_assets.refactor.sources.partition import generate_tasks

REPO_ROOT = Path(__file__).resolve().parents[2]

LOOPBACK_HTTP = {  # the test server: plain HTTP on 127.0.0.1, short timeouts
    "allowed_schemes": ["http"],
    "allow_loopback": True,
    "connect_timeout_s": 2,
    "read_timeout_s": 5,
    "total_timeout_s": 20,
}


def _write(directory: Path, corpora: dict, download: dict | None) -> None:
    """The repo's `datasets.yaml` in `directory`, its `corpora:` replaced (and, when given,
    its `download:` policy)."""
    data = yaml.safe_load((REPO_ROOT / "configs" / "datasets.yaml").read_text())
    data["corpora"] = corpora
    if download is not None:
        data["download"] = download
    (directory / "datasets.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


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
                "archive": {
                    "url": f"http://127.0.0.1:{closed_port()}/x.tar.gz",
                    "sha256": "3" * 64,  # one pin, one repository: not fetched's
                },
            },
            "local": {"split": "train", "licence": "BSD-3", "path": str(bundled["ledger"].path)},
        }
        _write(catalog, repos, LOOPBACK_HTTP)
        loaded = read_corpus(catalog, home=tmp_path / "home")
        # the catalog's own policy (the shipped one: https only, no loopback) governs code
        # as it governs tables
        _write(catalog, {"fetched": repos["fetched"]}, None)
        refused = read_corpus(catalog, home=tmp_path / "home-policy")
    assert sorted(r.name for r in loaded.repos) == ["fetched", "local"]
    fetched = next(r for r in loaded.repos if r.name == "fetched")
    assert (fetched.origin, fetched.sha256, fetched.licence) == (f"archive:{url}", digest, "MIT")
    assert (fetched.path / "pathconf" / "loader.py").is_file()
    errors = {f.name: f.error for f in loaded.failures}
    assert sorted(errors) == ["badpin", "gone"]
    assert "corpora.badpin.archive" in errors["badpin"] and "sha256 mismatch" in errors["badpin"]
    assert "corpora.gone.archive" in errors["gone"] and "connect" in errors["gone"]
    assert all(str(catalog / "datasets.yaml") in e for e in errors.values())
    assert not list((tmp_path / "home" / "refactor" / "corpora").glob("badpin*"))
    (failure,) = refused.failures
    assert "corpora.fetched" in failure.error and "scheme" in failure.error, failure.error
    # strict loading names every failed entry
    _write(catalog, repos, LOOPBACK_HTTP)
    with pytest.raises(ConfigError, match=r"corpora\.badpin\..*corpora\.gone\."):
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
    """Through Dagster: the config dir's `datasets.yaml` lists our corpora; the pinned
    archive's tasks are written, the entry with a wrong pin is named in the log and
    metadata, nothing fails."""
    from dagster import DagsterInstance, materialize

    from resources.home import HomeResource
    from verilearn_assets.core import lake
    from verilearn_assets.core.partitions import partition_key
    from verilearn_assets.refactor.assets import tasks
    from verilearn_assets.refactor.family import FAMILY

    served, configs, home = tmp_path / "served", tmp_path / "configs", tmp_path / "home"
    for d in (served, home / "dagster"):
        d.mkdir(parents=True)
    shutil.copytree(REPO_ROOT / "configs", configs)
    bundled = {r.name: r for r in load_corpus()}
    digest = pack_repo(bundled["pathconf"].path, served / "pathconf.tar.gz", "pathconf-1.2")
    data = yaml.safe_load((configs / "refactor.yaml").read_text())
    data["generation"] = {"max_pairs_per_repo": 0, "rules": ["eq-none-to-is"]}
    (configs / "refactor.yaml").write_text(yaml.safe_dump(data))
    with serve_directory(served) as base, pytest.MonkeyPatch.context() as mp:
        archive = {"url": f"{base}/pathconf.tar.gz", "sha256": digest, "subdir": "pathconf-1.2"}
        bad = {**archive, "sha256": "2" * 64}
        repos = {
            "fetched": {"split": "dev", "licence": "MIT", "archive": archive},
            "badpin": {"split": "dev", "licence": "MIT", "archive": bad},
        }
        _write(configs, repos, LOOPBACK_HTTP)
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
    assert "corpora.badpin" in meta["corpus_failures"].value
    assert str(configs / "datasets.yaml") in meta["corpus_failures"].value
    assert "sha256 mismatch" in meta["corpus_failures"].value
    assert meta["repos"].value == "fetched"
    written = FAMILY.read_tasks(home, "template", "dev")
    assert written and {t.repo for t in written} == {"fetched"}
    assert lake.lake_root(home).is_dir()


def test_relative_path_is_read_beside_the_catalog_and_a_missing_folder_fails_alone(
    tmp_path: Path,
) -> None:
    bundled = {r.name: r for r in load_corpus()}
    catalog = tmp_path / "catalog"
    shutil.copytree(bundled["ledger"].path, catalog / "code" / "ledger")
    corpora = {
        "mine": {"split": "train", "licence": "MIT", "path": "code/ledger"},
        "ghost": {"split": "dev", "licence": "MIT", "bundled": "no-such-folder"},
        "taskq": {"split": "dev", "licence": "MIT", "bundled": "taskq"},
    }
    _write(catalog, corpora, None)
    loaded = read_corpus(catalog, home=tmp_path / "home")
    repos = {r.name: r for r in loaded.repos}
    assert sorted(repos) == ["mine", "taskq"]
    assert repos["mine"].path == catalog / "code" / "ledger" and repos["mine"].origin == "path"
    assert repos["taskq"].path == bundled["taskq"].path and repos["taskq"].origin == "bundled"
    (failure,) = loaded.failures
    assert (failure.name, failure.split) == ("ghost", "dev")
    assert f"{catalog / 'datasets.yaml'}: corpora.ghost.bundled:" in failure.error
    assert "no-such-folder is not a folder" in failure.error


def test_archives_with_traversal_or_escaping_symlinks_are_refused_alone(tmp_path: Path) -> None:
    """The corpus extractor is the platform's: member names and links are checked before
    anything is written, and the refused entry fails alone."""
    import hashlib
    import io
    import tarfile

    def tar(path: Path, member: tarfile.TarInfo, data: bytes = b"") -> str:
        with tarfile.open(path, "w:gz") as tf:
            good = tarfile.TarInfo("repo/pkg/__init__.py")
            tf.addfile(good, io.BytesIO(b""))
            member.size = len(data)
            tf.addfile(member, io.BytesIO(data))
        return hashlib.sha256(path.read_bytes()).hexdigest()

    catalog = tmp_path / "catalog"
    catalog.mkdir()
    traversal = tarfile.TarInfo("repo/../../evil.py")
    escape = tarfile.TarInfo("repo/pkg/etc")
    escape.type, escape.linkname = tarfile.SYMTYPE, "../../../../etc"
    pins = {
        "dotdot": tar(catalog / "dotdot.tar.gz", traversal, b"print('out')\n"),
        "linkout": tar(catalog / "linkout.tar.gz", escape),
    }
    corpora = {
        name: {
            "split": "train",
            "licence": "MIT",
            "archive": {"path": f"{name}.tar.gz", "sha256": pin, "subdir": "repo"},
        }
        for name, pin in pins.items()
    }
    corpora["ledger"] = {"split": "train", "licence": "MIT", "bundled": "ledger"}
    _write(catalog, corpora, None)
    home = tmp_path / "home"
    loaded = read_corpus(catalog, home=home)
    assert [r.name for r in loaded.repos] == ["ledger"]
    errors = {f.name: f.error for f in loaded.failures}
    assert "corpora.dotdot.archive:" in errors["dotdot"] and "path traversal" in errors["dotdot"]
    assert "corpora.linkout.archive:" in errors["linkout"]
    assert "points outside" in errors["linkout"], errors["linkout"]
    assert not (tmp_path / "evil.py").exists() and not (home / "evil.py").exists()
    assert not list((home / "refactor" / "corpora").glob("[dl]*-*"))  # nothing kept
    with pytest.raises(ConfigError, match=r"corpora\.dotdot\.archive.*corpora\.linkout\.archive"):
        load_corpus(catalog, home=home)


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        ({"licence": "MIT", "bundled": "ledger"}, "corpora.ledger.split", "Field required"),
        ({"split": "dev"}, "corpora.ledger.licence", "Field required"),
        (
            {"split": "train", "licence": "MIT", "bundled": "ledger", "path": "/srv/ledger"},
            "corpora.ledger.path",
            "bundled is set too",
        ),
        (
            {"split": "train", "licence": "MIT", "bundled": "ledger", "colour": "red"},
            "corpora.ledger.colour",
            "Extra inputs are not permitted",
        ),
        ({"split": "train", "licence": "MIT"}, "corpora.ledger", "needs one origin"),
        (
            {"split": "train", "licence": "MIT", "bundled": "../ledger"},
            "corpora.ledger.bundled",
            "a folder name",
        ),
        (
            {"split": "validation", "licence": "MIT", "bundled": "ledger"},
            "corpora.ledger.split",
            "'train', 'dev' or 'test'",
        ),
    ],
)
def test_a_bad_corpora_entry_names_the_file_and_the_field(
    tmp_path: Path, entry: dict, field: str, message: str
) -> None:
    _write(tmp_path, {"ledger": entry}, None)
    with pytest.raises(ConfigError) as info:
        read_corpus(tmp_path, home=tmp_path / "home")
    text = str(info.value)
    assert f"{tmp_path / 'datasets.yaml'}: field '{field}'" in text, text
    assert message in text, text


def test_one_repository_under_two_names_is_refused(tmp_path: Path) -> None:
    """Two entries for one folder (or one pinned archive) would put its tests in two splits."""
    corpora = {
        "ledger": {"split": "train", "licence": "MIT", "bundled": "ledger"},
        "ledger-again": {"split": "test", "licence": "MIT", "bundled": "ledger"},
    }
    _write(tmp_path, corpora, None)
    with pytest.raises(ConfigError, match=r"field 'corpora'.*'ledger' and 'ledger-again'"):
        load_corpus(tmp_path, home=tmp_path / "home")
