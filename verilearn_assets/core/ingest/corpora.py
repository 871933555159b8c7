"""Code corpora in the dataset catalog: the `corpora:` section of `configs/datasets.yaml`.

A corpus is a code repository a family works on (the refactor family's small packages), not
a table: it is never a partition of `raw_datasets`/`tables`, its split is chosen by hand (so
a repository's tests never cross splits) rather than drawn by the salted hash, and it has no
tables for the gate to wait for. It shares the catalog's ingestion instead: the same
hardened downloader and extractor under the same `download:`/`archive:` policies, sha256
pins and a licence per entry.

Each entry has exactly one origin: `bundled` (a folder of the family's bundled corpus
directory), `path` (a local directory), `archive` (a tar/zip, local or https, pinned) or
`package` (a published source distribution fetched by name and version through the
machine's own package client, `pip download` or `npm pack`, pinned by sha256 like an
archive: no registry host is written here, the client's configuration decides where it
asks). A package is extracted like an archive, once, and read from that cache afterwards,
so a cached package needs no index.

`programs:` entries are program collections of one family (the Dafny family's verified
programs: a DafnyBench checkout, a user's own `.dfy` folder). They share the origins and the
ingestion, but carry no split: the family splits them per program (grouped so that one
program, or one identical method, never sits in two splits). A user adds one without editing
a tracked file: `VERILEARN_LOCAL_CATALOG=<file.yaml>` names an untracked catalog whose
`programs:` entries join the tracked ones (a name in both is an error naming both files).
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import Field, ValidationInfo, field_validator, model_validator

from verilearn_assets.core.config import ConfigError, StrictConfig
from verilearn_assets.core.ingest.archive import ArchiveError, extract_archive, file_sha256
from verilearn_assets.core.ingest.download import DownloadError, download
from verilearn_assets.core.ingest.jailed_fetch import run_client
from verilearn_assets.core.records import Split

if TYPE_CHECKING:
    from verilearn_assets.core.ingest.policy import ArchiveLimits, DownloadPolicy

C = TypeVar("C", bound="CorpusOrigin")
CorpusName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_\-]{0,63}$")]
LOCAL_CATALOG_ENV = "VERILEARN_LOCAL_CATALOG"
PACKAGE_CACHE_ENV = "VERILEARN_PACKAGE_CACHE"
ORIGINS = ("bundled", "path", "archive", "package")
FETCH_TIMEOUT_S = 300  # one client run (pip may build the metadata of an sdist)


class ArchiveSource(StrictConfig):
    """A repository shipped as a tar/zip archive, pinned by its sha256: a local file or a
    URL fetched through the platform's hardened downloader."""

    path: str | None = None  # relative: to the catalog file's directory
    url: str | None = None
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    subdir: str = ""  # the repository's root inside the archive, if not the top

    @field_validator("subdir")
    @classmethod
    def _inside(cls, value: str) -> str:
        norm = posixpath.normpath(value) if value else ""
        if norm.startswith(("/", "..")):
            raise ValueError(f"subdir {value!r} leaves the archive")
        return "" if norm == "." else norm

    @model_validator(mode="after")
    def _one_place(self) -> ArchiveSource:
        if (self.path is None) == (self.url is None):
            raise ValueError("an archive needs exactly one of path or url")
        return self


class PackageSource(StrictConfig):
    """A published source distribution, fetched by name and version with the machine's
    ordinary client (`pip download --no-binary :all: --no-deps`, `npm pack`) and used only
    if its bytes hash to `sha256`. Its test command is the entry's `test` when given, else
    detected at ingestion (`refactor/sources/repos/baseline.py`)."""

    manager: Literal["pip", "npm"]
    name: str = Field(pattern=r"^(@[a-z0-9][a-z0-9._\-]*/)?[A-Za-z0-9][A-Za-z0-9._\-]*$")
    version: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9.+!_\-]*$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")

    def spec(self) -> str:
        """What the client is asked for: `name==version` (pip) or `name@version` (npm)."""
        return (
            f"{self.name}=={self.version}"
            if self.manager == "pip"
            else f"{self.name}@{self.version}"
        )


class CorpusOrigin(StrictConfig):
    """What every catalog corpus has: a licence and exactly one origin."""

    licence: str = Field(min_length=1)
    description: str = ""
    bundled: str | None = None  # a folder of the family's bundled corpus directory
    path: str | None = None  # a local directory; relative: to the catalog file's directory
    archive: ArchiveSource | None = None
    package: PackageSource | None = None

    @field_validator("bundled")
    @classmethod
    def _folder_name(cls, value: str | None) -> str | None:
        if value is not None and (value in ("", ".", "..") or "/" in value or "\\" in value):
            raise ValueError(f"a folder name of the bundled corpus directory, got {value!r}")
        return value

    # Field validators, not a model validator, so that a second origin is reported under
    # its own field (`corpora.<name>.path`), not only under the entry.
    @field_validator("path", "archive", "package")
    @classmethod
    def _only_origin(cls, value: Any, info: ValidationInfo) -> Any:
        if value is not None:
            others = [o for o in ORIGINS if o != info.field_name and info.data.get(o) is not None]
            if others:
                raise ValueError(
                    f"give exactly one origin (bundled, path, archive or package): "
                    f"{others[0]} is set too"
                )
        return value

    @model_validator(mode="after")
    def _has_origin(self) -> CorpusOrigin:
        if all(getattr(self, o) is None for o in ORIGINS):
            raise ValueError("needs one origin: bundled, path, archive or package")
        return self

    def origin(self) -> str:
        """`bundled`, `path`, `archive:<url or path>` or `package:<manager>:<spec>`: what a
        repository records."""
        if self.package is not None:
            return f"package:{self.package.manager}:{self.package.spec()}"
        if self.archive is not None:
            return f"archive:{self.archive.url or self.archive.path}"
        return "path" if self.path is not None else "bundled"

    def identity(self) -> tuple[str, ...]:
        """What makes two entries the same repository (so it cannot sit in two splits)."""
        if self.archive is not None:
            return ("archive", self.archive.sha256, self.archive.subdir)
        if self.package is not None:  # the same bytes as an archive entry: the same repository
            return ("archive", self.package.sha256, "")
        if self.path is not None:
            return ("path", posixpath.normpath(self.path))
        return ("bundled", str(self.bundled))


class CorpusEntry(CorpusOrigin):
    """A code repository in the catalog: one hand-chosen split, a licence, one origin."""

    split: Split
    # its language (any ast-grep name; the refactor family checks it) and its test command
    # (a runner the refactor jail allowlists); absent: python and `pytest -q`
    language: str = Field(default="python", pattern=r"^[A-Za-z][A-Za-z0-9+#_-]{0,31}$")
    test: list[str] | None = Field(default=None, min_length=1, max_length=16)


class ProgramCorpusEntry(CorpusOrigin):
    """A family's program collection (`programs:`): no split of its own (the family splits
    per program), an on/off switch, and the family that reads it."""

    family: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    enabled: bool = True


def check_distinct(corpora: dict[str, C]) -> dict[str, C]:
    """Two names for one repository would put its tests in two splits (or twice in one)."""
    seen: dict[tuple[str, ...], str] = {}
    for name, entry in corpora.items():
        key = entry.identity()
        if key in seen:
            raise ValueError(
                f"entries {seen[key]!r} and {name!r} are the same repository "
                f"({key[0]} {' '.join(key[1:])})"
            )
        seen[key] = name
    return corpora


def corpus_root(
    name: str,
    entry: CorpusOrigin,
    *,
    catalog_file: Path,
    bundled_dir: Path,
    cache_dir: Path,
    policy: DownloadPolicy,
    limits: ArchiveLimits,
    section: str = "corpora",
) -> Path:
    """The directory holding repository `name`. An archive is fetched (URL) or read (path),
    a package fetched by its client, checked against its pin and extracted, hardened, once
    under `<cache_dir>/<name>-<sha256[:16]>`. Any failure is a `ConfigError` naming the
    catalog file, `<section>.<name>` and the field."""
    where = f"{catalog_file}: {section}.{name}"
    if entry.package is not None:
        root = _package_root(where, name, entry.package, cache_dir, limits)
        field = "package"
    elif entry.archive is not None:
        root = _unpacked(where, catalog_file, name, entry.archive, cache_dir, policy, limits)
        field = "archive"
    elif entry.path is not None:
        root = Path(entry.path).expanduser()
        if not root.is_absolute():
            root = catalog_file.parent / root
        field = "path"
    else:
        root = bundled_dir / str(entry.bundled)
        field = "bundled"
    if not root.is_dir():
        raise ConfigError(f"{where}.{field}: {root} is not a folder")
    return root


def _extracted_once(
    where: str,
    field: str,
    name: str,
    pin: str,
    cache_dir: Path,
    limits: ArchiveLimits,
    obtain: Callable[[], tuple[Path, bool]],
) -> Path:
    """`<cache_dir>/<name>-<pin[:16]>`: extracted, hardened, the first time from the archive
    `obtain()` returns (already checked against the pin; with True when that file is a
    download to delete once extracted), read as it is afterwards. An extraction failure is
    a `ConfigError` at `<where>.<field>`."""

    target = cache_dir / f"{name}-{pin[:16]}"
    if target.is_dir():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    archive, discard = obtain()
    try:
        extract_archive(archive, target, limits)
    except ArchiveError as exc:
        raise ConfigError(f"{where}.{field}: {exc}") from exc
    finally:
        if discard:
            archive.unlink(missing_ok=True)  # the extracted tree is what is kept
    return target


def _check_pin(where: str, field: str, archive: Path, pin: str, described: str) -> None:
    """A `ConfigError` at `<where>.<field>.sha256` unless `archive` hashes to `pin`;
    `described` says whose bytes they are ("<path> has", "pip gave <file> with")."""

    digest = file_sha256(archive)
    if digest != pin:
        raise ConfigError(
            f"{where}.{field}.sha256: {described} sha256 {digest}, the catalog pins {pin}"
        )


def _unpacked(
    where: str,
    catalog_file: Path,
    name: str,
    source: ArchiveSource,
    cache_dir: Path,
    policy: DownloadPolicy,
    limits: ArchiveLimits,
) -> Path:
    def obtain() -> tuple[Path, bool]:

        if source.url is not None:
            try:
                # the extractor knows the kind by the file name: keep the URL's
                leaf = posixpath.basename(urlsplit(source.url).path) or "archive"
                archive = download(source.url, cache_dir / f".{name}-{leaf}", source.sha256, policy)
            except DownloadError as exc:
                raise ConfigError(f"{where}.archive.url: {exc}") from exc
            return archive, True
        archive = Path(str(source.path)).expanduser()
        if not archive.is_absolute():
            archive = catalog_file.parent / archive
        if not archive.is_file():
            raise ConfigError(f"{where}.archive.path: {archive} not found")
        _check_pin(where, "archive", archive, source.sha256, f"{archive} has")
        return archive, False

    target = _extracted_once(where, "archive", name, source.sha256, cache_dir, limits, obtain)
    root = target / source.subdir if source.subdir else target
    if not root.is_dir():
        raise ConfigError(f"{where}.archive.subdir: {source.subdir!r} is not in the archive")
    return root


def package_cache() -> Path:
    """Where fetched package archives are kept for every home on this machine, by sha256
    (`VERILEARN_PACKAGE_CACHE`, default `~/.cache/verilearn/packages`): the bytes are the
    pinned ones whoever fetched them, so a new home (each test's) extracts without the
    client, and without the index once the machine has fetched them."""
    return Path(os.environ.get(PACKAGE_CACHE_ENV) or "~/.cache/verilearn/packages").expanduser()


def _package_root(
    where: str, name: str, source: PackageSource, cache_dir: Path, limits: ArchiveLimits
) -> Path:
    """The package's source tree: the home's extraction if there is one; else the pinned
    archive from the machine's package cache, or fetched by its client (into a temporary
    directory, checked against the pin, then kept in that cache), extracted by the archive
    extractor. An sdist or npm tarball holds one top folder (`toolz-0.12.1/`, `package/`):
    that folder is the repository."""

    def obtain() -> tuple[Path, bool]:
        shared = package_cache() / source.sha256
        kept = sorted(shared.glob("*")) if shared.is_dir() else []
        if len(kept) == 1 and file_sha256(kept[0]) == source.sha256:
            return kept[0], False
        with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=cache_dir) as tmp:
            fetched = fetch_package(where, source, Path(tmp))
            described = f"{source.manager} gave {fetched.name} with"
            _check_pin(where, "package", fetched, source.sha256, described)
            shutil.rmtree(shared, ignore_errors=True)
            shared.mkdir(parents=True, exist_ok=True)
            archive = shared / fetched.name
            shutil.copyfile(fetched, archive.with_name(f".{fetched.name}.part"))
            os.replace(archive.with_name(f".{fetched.name}.part"), archive)
        return archive, False

    target = _extracted_once(where, "package", name, source.sha256, cache_dir, limits, obtain)
    tops = [p for p in target.iterdir() if not p.name.startswith(".")]
    return tops[0] if len(tops) == 1 and tops[0].is_dir() else target


def fetch_package(where: str, source: PackageSource, directory: Path) -> Path:
    """Run the package client once, jailed (`jailed_fetch`: the network, the host read-only
    and in part, only `directory` writable), into the empty `directory`; return the one
    archive it wrote. pip checks the pin itself before it builds anything (`--require-hashes`): a
    source distribution's metadata step runs its build backend, and only the pinned bytes
    may get that far. A missing client, an unknown name or version, an unreachable index
    or a wrong pin is a `ConfigError` naming the entry and the field."""
    out = directory / "out"
    out.mkdir()
    if source.manager == "pip":
        requirement = directory / "requirement.txt"
        requirement.write_text(f"{source.spec()} --hash=sha256:{source.sha256}\n")
        argv = [
            sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
            "--require-hashes", "--retries", "1", "--timeout", "30",
            "--disable-pip-version-check", "-d", str(out), "-r", str(requirement),
        ]  # fmt: skip
        probe: list[str] = [sys.executable, "-m", "pip", "--version"]
    else:
        argv = ["npm", "pack", source.spec(), "--ignore-scripts", "--pack-destination", str(out)]
        probe = ["npm", "--version"]
    if shutil.which(probe[0]) is None or _quiet(probe, directory) != 0:
        raise ConfigError(
            f"{where}.package.manager: the {source.manager} client is not installed "
            f"({' '.join(probe)} does not run)"
        )
    try:  # jailed: a source distribution's build backend runs while pip reads its metadata
        done = run_client(source.manager, argv, directory, FETCH_TIMEOUT_S)
    except RuntimeError as exc:  # no bubblewrap here
        raise ConfigError(f"{where}.package.manager: {exc}: the fetch runs jailed") from exc
    if done.timed_out:
        raise ConfigError(
            f"{where}.package: {source.manager} did not fetch {source.spec()} in "
            f"{FETCH_TIMEOUT_S}s (index unreachable?)"
        )
    tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-4:])
    if done.exit_code != 0:
        if "do not match the hashes" in done.stderr.lower():
            raise ConfigError(
                f"{where}.package.sha256: {source.manager} refused {source.spec()}: its bytes "
                f"do not hash to the pin: {tail}"
            )
        if "tar file" in done.stderr or "member" in done.stderr.lower():  # pip's own unpack
            raise ConfigError(f"{where}.package: {source.manager} refused the archive: {tail}")
        raise ConfigError(
            f"{where}.package.version: {source.manager} could not fetch {source.spec()} "
            f"(not published, or the index is unreachable): {tail}"
        )
    found = sorted(p for p in out.iterdir() if p.is_file())
    if len(found) != 1:
        raise ConfigError(
            f"{where}.package: {source.manager} left {len(found)} files for {source.spec()} "
            f"(one source archive expected): {[p.name for p in found]}"
        )
    return found[0]


def _quiet(argv: list[str], cwd: Path) -> int:
    try:
        return subprocess.run(
            argv, cwd=cwd, capture_output=True, timeout=60, check=False
        ).returncode
    except (OSError, subprocess.TimeoutExpired):
        return 1
