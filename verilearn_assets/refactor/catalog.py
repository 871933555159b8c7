"""The rule catalog (`rules/*.yml`) and the code corpora (`corpus/corpus.yaml`).

Code corpora keep their own catalog but go through the platform's ingestion code: the same
hardened downloader and extractor, under the `download`/`archive` policy of
`configs/datasets.yaml`, sha256 pins, a licence per repository and one split per repository.

A catalog rule is an ast-grep YAML rule with a `fix`, plus `metadata` the tasks need: the
instruction in words (never the rule text) and a positive example, its fixed form and a
negative example that tests check with real ast-grep.
"""

from __future__ import annotations

import hashlib
import posixpath
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from verilearn_assets.core.config import ConfigError, StrictConfig, load_yaml_model
from verilearn_assets.core.ingest.catalog import ArchiveLimits, DownloadPolicy
from verilearn_assets.core.records import Split

HERE = Path(__file__).resolve().parent
RULES_DIR = HERE / "rules"
CORPUS_DIR = HERE / "corpus"


class RuleExamples(StrictConfig):
    instruction: str
    positive: str
    fixed: str
    negative: str


class CatalogRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    path: str
    rule: dict[str, Any]  # what ast-grep runs (metadata stripped)
    examples: RuleExamples

    @property
    def instruction(self) -> str:
        return self.examples.instruction

    def complexity(self) -> int:
        """Size of the rule: the number of keys and list items in its `rule`/`transform`."""
        return _size({k: v for k, v in self.rule.items() if k in ("rule", "transform")})


def _size(value: Any) -> int:
    if isinstance(value, dict):
        return sum(1 + _size(v) for v in value.values())
    if isinstance(value, list):
        return sum(1 + _size(v) for v in value)
    return 0


def load_rules(directory: Path = RULES_DIR) -> list[CatalogRule]:
    """Every `*.yml` rule, sorted by id; a malformed file is an error naming it."""
    rules = []
    for path in sorted(directory.glob("*.yml")):
        try:
            data = yaml.safe_load(path.read_text())
            meta = data.pop("metadata")
            rule = CatalogRule(
                id=data["id"], path=str(path), rule=data, examples=RuleExamples(**meta)
            )
        except (yaml.YAMLError, KeyError, TypeError, AttributeError, ValidationError) as exc:
            raise ConfigError(f"{path}: not a catalog rule: {exc}") from exc
        if rule.id != path.stem:
            raise ConfigError(f"{path}: rule id {rule.id!r} differs from the file name")
        if "fix" not in data:
            raise ConfigError(f"{path}: catalog rules need a `fix`")
        rules.append(rule)
    return sorted(rules, key=lambda r: r.id)


class ArchiveSource(StrictConfig):
    """A repository shipped as a tar/zip archive, pinned by its sha256: a local file or an
    https URL fetched through the platform's hardened downloader."""

    path: str | None = None
    url: str | None = None
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    subdir: str = ""  # the repository's root inside the archive, if not the top

    @field_validator("subdir")
    @classmethod
    def _inside(cls, value: str) -> str:
        norm = posixpath.normpath(value) if value else ""
        if norm.startswith(("/", "..")):
            raise ValueError(f"subdir {value!r} leaves the archive")
        return norm

    @model_validator(mode="after")
    def _one_place(self) -> ArchiveSource:
        if (self.path is None) == (self.url is None):
            raise ValueError("an archive needs exactly one of path or url")
        return self


class RepoEntry(StrictConfig):
    split: Split
    licence: str
    description: str = ""
    path: str | None = None  # default: the folder of that name beside corpus.yaml
    archive: ArchiveSource | None = None

    @model_validator(mode="after")
    def _path_or_archive(self) -> RepoEntry:
        if self.path is not None and self.archive is not None:
            raise ValueError("give path or archive, not both")
        return self


class CorpusCatalog(StrictConfig):
    repos: dict[str, RepoEntry]
    # The platform's hardened download and extraction settings; null: those of
    # configs/datasets.yaml (`download:`, `archive:`), so code and tables obey one policy.
    download: DownloadPolicy | None = None
    archive: ArchiveLimits | None = None


class Repo(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    path: Path
    split: Split
    licence: str
    origin: str = "bundled"  # bundled | path | archive:<path or url>
    sha256: str | None = None  # the archive's pin, for archive repos


class CorpusFailure(BaseModel):
    """One catalog entry that could not be made a repository (it fails alone)."""

    model_config = ConfigDict(frozen=True)
    name: str
    split: Split
    error: str  # names the catalog file and the entry


class CorpusLoad(BaseModel):
    repos: list[Repo]
    failures: list[CorpusFailure]

    def for_split(self, split: str) -> CorpusLoad:
        return CorpusLoad(
            repos=[r for r in self.repos if r.split == split],
            failures=[f for f in self.failures if f.split == split],
        )


def corpus_dir(config: Any) -> Path:
    """Where `corpus.yaml` is for this `RefactorConfig` (`corpus:`), else the bundled one."""
    from verilearn_assets.refactor.config import expand_home

    return expand_home(config.corpus) if config.corpus else CORPUS_DIR


def read_corpus(directory: Path = CORPUS_DIR, home: Path | None = None) -> CorpusLoad:
    """Every repository of `<directory>/corpus.yaml`. Archives are fetched (URL) or read
    (path), checked against their sha256 and extracted, hardened, once under
    `<home>/refactor/corpora/`. An entry that fails (wrong pin, unreachable URL, missing
    folder) is a `CorpusFailure` naming it; the other entries are unaffected."""
    from verilearn_assets.core.ingest.archive import ArchiveError
    from verilearn_assets.core.ingest.download import DownloadError

    catalog_file = directory / "corpus.yaml"
    catalog = load_yaml_model(catalog_file, CorpusCatalog)
    repos, failures = [], []
    for name, entry in sorted(catalog.repos.items()):
        try:
            if entry.archive is not None:
                path = _unpacked(catalog_file, catalog, name, entry.archive, home)
                origin = f"archive:{entry.archive.url or entry.archive.path}"
            else:
                path = Path(entry.path) if entry.path else directory / name
                if not path.is_absolute():
                    path = directory / path
                origin = "path" if entry.path else "bundled"
            if not path.is_dir():
                raise ConfigError(f"{catalog_file}: repo {name!r}: {path} is not a folder")
        except (ConfigError, DownloadError, ArchiveError, OSError) as exc:
            message = str(exc)
            if f"repo {name!r}" not in message:
                message = f"{catalog_file}: repo {name!r}: {message}"
            failures.append(CorpusFailure(name=name, split=entry.split, error=message))
            continue
        repos.append(
            Repo(
                name=name,
                path=path,
                split=entry.split,
                licence=entry.licence,
                origin=origin,
                sha256=entry.archive.sha256 if entry.archive else None,
            )
        )
    return CorpusLoad(repos=repos, failures=failures)


def load_corpus(
    directory: Path = CORPUS_DIR, home: Path | None = None, strict: bool = True
) -> list[Repo]:
    """The repositories of `<directory>/corpus.yaml`; with `strict`, any failed entry is a
    `ConfigError` naming every failed entry (else the failed ones are left out)."""
    loaded = read_corpus(directory, home)
    if strict and loaded.failures:
        raise ConfigError("; ".join(f.error for f in loaded.failures))
    return loaded.repos


def _policies(catalog: CorpusCatalog) -> tuple[DownloadPolicy, ArchiveLimits]:
    if catalog.download is not None and catalog.archive is not None:
        return catalog.download, catalog.archive
    from verilearn_assets.core.ingest.catalog import load_datasets_config

    platform = load_datasets_config()
    return catalog.download or platform.download, catalog.archive or platform.archive


def _unpacked(
    catalog_file: Path,
    catalog: CorpusCatalog,
    name: str,
    source: ArchiveSource,
    home: Path | None,
) -> Path:
    from verilearn_assets.core import lake
    from verilearn_assets.core.ingest.archive import extract_archive
    from verilearn_assets.core.ingest.download import download

    base = (home or lake.home()) / "refactor" / "corpora"
    target = base / f"{name}-{source.sha256[:16]}"
    if not target.is_dir():
        policy, limits = _policies(catalog)
        base.mkdir(parents=True, exist_ok=True)
        if source.url is not None:
            from verilearn_assets.core.ingest.download import DownloadError

            try:
                # the extractor knows the kind by the file name: keep the URL's
                leaf = posixpath.basename(urlsplit(source.url).path) or "archive"
                dest = base / f".{name}-{leaf}"
                archive = download(source.url, dest, source.sha256, policy)
            except DownloadError as exc:
                raise ConfigError(f"{catalog_file}: repo {name!r}: archive {exc}") from exc
        else:
            archive = Path(source.path)  # type: ignore[arg-type]
            if not archive.is_absolute():
                archive = catalog_file.parent / archive
            if not archive.is_file():
                raise ConfigError(f"{catalog_file}: repo {name!r}: archive {archive} not found")
            digest = hashlib.sha256(archive.read_bytes()).hexdigest()
            if digest != source.sha256:
                raise ConfigError(
                    f"{catalog_file}: repo {name!r}: archive {archive} has sha256 {digest}, "
                    f"the catalog pins {source.sha256}"
                )
        extract_archive(archive, target, limits)
        if source.url is not None:
            archive.unlink()  # the extracted tree is what is kept
    root = target / source.subdir if source.subdir else target
    if not root.is_dir():
        raise ConfigError(
            f"{catalog_file}: repo {name!r}: subdir {source.subdir!r} is not in the archive"
        )
    return root
