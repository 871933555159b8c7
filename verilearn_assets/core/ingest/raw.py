"""Raw copy of one dataset under `<home>/raw/<dataset>/`, plus its manifest.

A bundled dataset is exported to CSV; a URL dataset is downloaded (sha256-pinned, cached
under `<home>/downloads/`) and, if it is an archive, extracted with the hardened
extractor. Each dataset directory is swapped into place whole, and its deterministic
directory hash is the dataset's content hash. Each dataset has its own manifest, written
by its own `raw_datasets` partition, so one dataset's failure touches no other.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from verilearn_assets.core.ingest.archive import (
    ArchiveError,
    directory_hash,
    extract_archive,
    file_sha256,
)
from verilearn_assets.core.ingest.bundled import BundledDatasetError, export_bundled
from verilearn_assets.core.ingest.catalog import (
    ARCHIVE_FORMATS,
    BundledDataset,
    DatasetsConfig,
    UrlDataset,
    entry_source,
    safe_table_name,
)
from verilearn_assets.core.ingest.download import DownloadError, download
from verilearn_assets.core.ingest.outcomes import DatasetFailure
from verilearn_assets.core.ingest.read_table import TABLE_SUFFIXES, is_table_file


class RawError(RuntimeError):
    """A dataset's raw copy could not be made; the message names the dataset."""


class RawTable(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    path: str
    sha256: str


class RawDataset(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    kind: str
    source: str  # "statsmodels.longley", or the URL
    directory: str
    content_hash: str  # deterministic hash of the raw directory
    tables: list[RawTable]


def raw_root(home: Path) -> Path:
    return Path(home) / "raw"


def manifest_path(home: Path, dataset: str) -> Path:
    """`<home>/raw/.manifests/<dataset>.json` (dataset names never start with a dot)."""
    return raw_root(home) / ".manifests" / f"{dataset}.json"


def fetch_dataset(
    entry: BundledDataset | UrlDataset, cfg: DatasetsConfig, home: Path
) -> RawDataset:
    """Make one dataset's raw copy and write its manifest; failures name the dataset.

    Raises `DatasetFailure` (one line: dataset, URL or package.loader, reason) whatever
    went wrong, with the original exception chained for the log.
    """
    home = Path(home)
    source = entry_source(entry)
    try:
        raw_root(home).mkdir(parents=True, exist_ok=True)
        dataset = _fetch_one(entry, cfg, home)
    except DownloadError as exc:
        raise DatasetFailure(entry.name, source, "download_failed", str(exc)) from exc
    except (ArchiveError, RawError) as exc:
        raise DatasetFailure(entry.name, source, "parse_failed", str(exc)) from exc
    except Exception as exc:  # re-raised with the dataset named
        detail = (
            str(exc) if isinstance(exc, BundledDatasetError) else f"{type(exc).__name__}: {exc}"
        )
        raise DatasetFailure(entry.name, source, "fetch_failed", detail) from exc
    target = manifest_path(home, entry.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    with os.fdopen(fd, "w") as fh:
        fh.write(dataset.model_dump_json(indent=1))
    os.replace(tmp, target)
    return dataset


def fetch_raw(cfg: DatasetsConfig, home: Path) -> list[RawDataset]:
    """Raw copies of every enabled dataset, stopping at the first failure (scripts, tests)."""
    return [fetch_dataset(entry, cfg, Path(home)) for entry in cfg.enabled()]


def load_raw_dataset(home: Path, dataset: str) -> RawDataset:
    """The manifest `raw_datasets` wrote for `dataset`."""
    path = manifest_path(home, dataset)
    if not path.is_file():
        raise RawError(f"{path}: no raw copy of {dataset!r}; materialize raw_datasets first")
    try:
        return RawDataset.model_validate(json.loads(path.read_text()))
    except ValueError as exc:
        raise RawError(f"{path}: invalid raw manifest: {exc}") from exc


def _fetch_one(entry: BundledDataset | UrlDataset, cfg: DatasetsConfig, home: Path) -> RawDataset:
    root = raw_root(home)
    staging = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", suffix=".new", dir=root))
    try:
        if isinstance(entry, BundledDataset):
            source = f"{entry.package}.{entry.loader}"
            export_bundled(entry, staging / "files")
        else:
            source = entry.url
            _fetch_url(entry, cfg, home, staging / "files")
        final = root / entry.name
        _swap_into_place(staging / "files", final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return RawDataset(
        name=entry.name,
        kind=entry.kind,
        source=source,
        directory=str(final),
        content_hash=directory_hash(final),
        tables=_tables(entry, final),
    )


def _swap_into_place(new: Path, final: Path) -> None:
    """Replace `final` with `new`; the old copy is renamed aside first, then removed."""
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(final, old)
    os.replace(new, final)
    if old is not None:
        shutil.rmtree(old)


def _suffix(fmt: str) -> str:
    return {
        "tar": ".tar",
        "tar.gz": ".tar.gz",
        "tar.bz2": ".tar.bz2",
        "tar.xz": ".tar.xz",
        "zip": ".zip",
    }.get(fmt, f".{fmt}")


def _fetch_url(entry: UrlDataset, cfg: DatasetsConfig, home: Path, target: Path) -> None:
    cache = home / "downloads" / f"{entry.sha256}{_suffix(entry.format)}"
    if not (cache.is_file() and file_sha256(cache) == entry.sha256):
        download(entry.url, cache, entry.sha256, cfg.download)
    if entry.format in ARCHIVE_FORMATS:
        extract_archive(cache, target, cfg.archive)
    else:
        target.mkdir(parents=True)
        shutil.copyfile(cache, target / f"{entry.name}{_suffix(entry.format)}")


def _tables(entry: BundledDataset | UrlDataset, directory: Path) -> list[RawTable]:
    """The raw table files of a dataset, named by their path inside the raw directory."""
    if isinstance(entry, UrlDataset) and entry.members:
        files = []
        for member in entry.members:
            path = directory / member
            if not path.is_file() or path.is_symlink():
                raise RawError(
                    f"dataset {entry.name!r}: member {member!r} is not a file in the archive"
                )
            if not is_table_file(path):
                raise RawError(
                    f"dataset {entry.name!r}: member {member!r} is not a table "
                    f"file ({', '.join(TABLE_SUFFIXES)})"
                )
            files.append(path)
    else:
        files = sorted(
            p
            for p in directory.rglob("*")
            if p.is_file() and not p.is_symlink() and is_table_file(p)
        )
    if not files:
        raise RawError(
            f"dataset {entry.name!r}: no table files ({', '.join(TABLE_SUFFIXES)}) in {directory}"
        )
    tables: list[RawTable] = []
    for path in files:
        rel = path.relative_to(directory).as_posix()
        stem = rel
        for suffix in sorted(TABLE_SUFFIXES, key=len, reverse=True):
            if stem.lower().endswith(suffix):
                stem = stem[: -len(suffix)]
                break
        name = safe_table_name(stem)
        if any(t.name == name for t in tables):
            raise RawError(f"dataset {entry.name!r}: two files map to table name {name!r}")
        tables.append(RawTable(name=name, path=str(path), sha256=file_sha256(path)))
    return tables
