"""A package's fetch runs jailed (`core/ingest/jailed_fetch.py`, issue #26): `pip download`
of a source distribution runs its build backend (`setup.py`) to read its metadata, so a
hostile sdist's `setup.py` runs with the client. It must not write the host outside the
destination folder nor read the user's HOME.

The sdist is served by pip's own settings from a local folder (no network), fetched
through `fetch_package` (the path `read_corpus` takes) and through the catalog.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from backends import require_backend

from verilearn_assets.core.ingest.archive import file_sha256
from verilearn_assets.core.ingest.corpora import PackageSource, fetch_package
from verilearn_assets.core.ingest.jailed_fetch import HOME_IN_JAIL, fetch_spec
from verilearn_assets.refactor.sources.catalog import read_corpus

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))
from test_corpora_package import make_sdist, write_catalog  # noqa: E402

# what a hostile setup.py tries while pip prepares its metadata; it notes what happened in
# PROBE (the destination folder: the one place it may write) and goes on to a normal setup
SETUP = """import os
from pathlib import Path

notes = ["home: " + os.environ.get("HOME", "")]
for target in TARGETS:
    try:
        Path(target).write_text("escaped")
        notes.append("write " + target + ": ok")
    except OSError as exc:
        notes.append("write " + target + ": denied " + type(exc).__name__)
for secret in SECRETS:
    try:
        notes.append("read " + secret + ": " + Path(secret).read_text())
    except OSError as exc:
        notes.append("read " + secret + ": denied " + type(exc).__name__)
try:
    Path(PROBE).write_text("\\n".join(notes) + "\\n")
except OSError:
    pass

from setuptools import setup

setup()
"""


@pytest.fixture
def hostile_sdist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    """A local index holding one hostile sdist; a fake user HOME with a secret. The host
    paths outside the test's folder carry this run's token, so a file an earlier run (or an
    unjailed try by hand) left cannot fail this one; whatever a run wrote is removed after."""
    require_backend("bwrap")
    home = tmp_path / "user-home"
    (home / ".ssh").mkdir(parents=True)
    secret = home / ".ssh" / "id_ed25519"
    secret.write_text("PRIVATE-KEY-DO-NOT-LEAK")
    monkeypatch.setenv("HOME", str(home))  # what the host's pip would take as HOME
    dest = tmp_path / "fetch"
    dest.mkdir()
    token = uuid.uuid4().hex[:12]
    system_target = f"/usr/lib/escaped-into-usr-{token}"
    targets = [
        str(tmp_path / "escaped-into-tmp"),  # the host's /tmp (the test's folder)
        str(dest.parent / "escaped-beside-destination"),
        str(home / "escaped-into-home"),
        system_target,
        str(Path(__file__).resolve().parent / f"escaped-into-repo-{token}"),
    ]
    probe = dest / "probe.txt"
    setup = (
        SETUP.replace("TARGETS", repr(targets))
        .replace("SECRETS", repr([str(secret), "/etc/shadow"]))
        .replace("PROBE", repr(str(probe)))
    )
    index = tmp_path / "index"
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_NO_BUILD_ISOLATION", "0")  # pip's inverted switch: no isolation
    monkeypatch.setenv("VERILEARN_PACKAGE_CACHE", str(tmp_path / "package-cache"))
    digest = make_sdist(index, "vlhostile", "1.0.0", {"setup.py": setup, "vlhostile.py": ""})
    yield {
        "dest": dest,
        "probe": probe,
        "targets": targets,
        "system_target": system_target,
        "sha": digest,
        "home": home,
    }
    for target in targets:
        Path(target).unlink(missing_ok=True)


def _assert_contained(case: dict, probe_text: str) -> None:
    for target in case["targets"]:
        assert not Path(target).exists(), f"{target} was written on the host"
    lines = probe_text.splitlines()
    assert f"home: {HOME_IN_JAIL}" in lines  # a private HOME, not the user's
    assert sum(1 for line in lines if line.startswith("write ")) == len(case["targets"])
    # a write under /tmp may land in the jail's own tmpfs (checked above: not on the host);
    # the system is read-only
    assert f"write {case['system_target']}: denied OSError" in lines, probe_text
    assert "PRIVATE-KEY" not in probe_text
    assert any(line.startswith("read /etc/shadow: denied") for line in lines), probe_text


def test_a_hostile_setup_py_cannot_write_the_host_or_read_home(hostile_sdist: dict) -> None:
    case = hostile_sdist
    source = PackageSource(manager="pip", name="vlhostile", version="1.0.0", sha256=case["sha"])
    got = fetch_package("corpora.vlhostile", source, case["dest"])
    # the fetch itself worked: the pinned sdist, in the destination
    assert got.parent == case["dest"] / "out" and file_sha256(got) == case["sha"]
    # the build backend did run (it wrote its notes where it may), and was contained
    assert case["probe"].is_file(), "setup.py never ran: the test would prove nothing"
    _assert_contained(case, case["probe"].read_text())


def test_the_same_sdist_through_the_catalog_is_contained(
    hostile_sdist: dict, tmp_path: Path
) -> None:
    """`read_corpus` fetches into a folder of its own (under the home's cache): the only
    writable place; the entry still ingests."""
    case = hostile_sdist
    entry = {"manager": "pip", "name": "vlhostile", "version": "1.0.0", "sha256": case["sha"]}
    corpora = {"vlhostile": {"split": "dev", "licence": "MIT", "package": entry}}
    catalog = write_catalog(tmp_path / "catalog", corpora)
    loaded = read_corpus(catalog, home=tmp_path / "home")
    assert not loaded.failures, loaded.failures
    (repo,) = loaded.repos
    assert (repo.path / "setup.py").is_file()
    for target in case["targets"]:
        assert not Path(target).exists(), f"{target} was written on the host"
    assert not case["probe"].exists()  # its folder is not the catalog's: the write was refused


def test_the_fetch_jail_maps_no_home_and_only_named_etc_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the spec maps, read without running it: the network on, the destination the one
    writable bind, nothing of the user's HOME but the client's own config file."""
    home = tmp_path / "user-home"
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text("[global]\n")
    (home / ".ssh").mkdir()
    monkeypatch.setenv("HOME", str(home))
    dest = tmp_path / "dest"
    dest.mkdir()
    spec = fetch_spec("pip", ["python", "-m", "pip", "--version"], dest, 30)
    assert spec.network and spec.uid is not None
    assert [b.host for b in spec.binds if b.writable] == [str(dest)]
    hosts = [b.host for b in spec.binds]
    assert not any(h == str(home) or h.startswith(f"{home}/.ssh") for h in hosts)
    config = [b for b in spec.binds if b.host.startswith(str(home))]
    assert [(b.host, b.inside) for b in config] == [
        (str(home / ".config/pip/pip.conf"), f"{HOME_IN_JAIL}/.config/pip/pip.conf")
    ]
    assert "/etc" not in hosts and "/" not in hosts and "/root" not in hosts
    assert spec.env["HOME"] == HOME_IN_JAIL
