"""The dataset catalog (`configs/datasets.yaml`), validated strictly at load.

`datasets:` are tables (one partition of `raw_datasets`/`tables` each, split by a salted
hash); `corpora:` are code repositories (`core/ingest/corpora.py`: a hand-chosen split, no
partition) and `programs:` are a family's program collections (no split of their own), both
read under the same download and archive policies.

Every section has defaults that are safe on their own (https only, no private addresses,
capped sizes), so a short catalog is still a secure one; a misspelt key stops the load with
an error naming the file and the field.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from verilearn_assets.core.config import (
    ConfigError,
    StrictConfig,
    config_dir,
    load_config,
    load_yaml_model,
)
from verilearn_assets.core.ingest.corpora import (
    LOCAL_CATALOG_ENV,
    CorpusEntry,
    CorpusName,
    ProgramCorpusEntry,
    check_distinct,
)
from verilearn_assets.core.ingest.policy import MIB, ArchiveLimits, DownloadPolicy

DatasetName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_\-]{0,63}$")]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]

ARCHIVE_FORMATS = ("zip", "tar", "tar.gz", "tar.bz2", "tar.xz")
TABLE_FORMATS = ("csv", "tsv", "txt", "csv.gz", "parquet")
UrlFormat = Literal[
    "csv", "tsv", "txt", "csv.gz", "parquet", "zip", "tar", "tar.gz", "tar.bz2", "tar.xz"
]


class SplitRatios(StrictConfig):
    """Share of datasets (not rows) per split; a dataset never spans two splits."""

    train: float = Field(0.7, ge=0, le=1)
    dev: float = Field(0.15, ge=0, le=1)
    test: float = Field(0.15, ge=0, le=1)

    @model_validator(mode="after")
    def _adds_up(self) -> SplitRatios:
        total = self.train + self.dev + self.test
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"train + dev + test must add up to 1, got {total:g}")
        return self


class ReadOptions(StrictConfig):
    """How text tables are typed: NA tokens, boolean words, datetime formats, delimiters."""

    na_tokens: list[str] = Field(
        default_factory=lambda: [
            "",
            "NA",
            "N/A",
            "n/a",
            "na",
            "NaN",
            "nan",
            "NULL",
            "null",
            "None",
            "none",
            "#N/A",
            "-",
            "?",
        ]
    )
    true_tokens: list[str] = Field(default_factory=lambda: ["true", "t", "yes", "y"])
    false_tokens: list[str] = Field(default_factory=lambda: ["false", "f", "no", "n"])
    # "ISO8601" is pandas' ISO parser; the others are strptime formats tried in order, the
    # first one that parses every value of a column wins.
    datetime_formats: list[str] = Field(
        default_factory=lambda: [
            "ISO8601",
            "%d/%m/%Y",
            "%m/%d/%Y",
            "%Y/%m/%d",
            "%d.%m.%Y",
            "%d/%m/%Y %H:%M",
            "%m/%d/%Y %H:%M",
            "%d/%m/%Y %H:%M:%S",
            "%m/%d/%Y %H:%M:%S",
        ]
    )
    delimiters: list[str] = Field(default_factory=lambda: [",", "\t", ";", "|"])
    sniff_bytes: int = Field(65_536, gt=0)
    encoding: str | None = None  # None: utf-8 (BOM allowed), falling back to cp1252

    @field_validator("delimiters")
    @classmethod
    def _single_chars(cls, value: list[str]) -> list[str]:
        bad = [d for d in value if len(d) != 1]
        if bad or not value:
            raise ValueError(f"each delimiter must be one character, got {bad or value!r}")
        return value


class Limits(StrictConfig):
    """Keep typed tables modest: the demo and the sandbox both load them whole."""

    max_rows: int = Field(5000, gt=0)  # larger tables are sampled deterministically
    max_columns: int = Field(500, gt=0)  # wider tables are refused with their name
    max_table_bytes: int = Field(256 * MIB, gt=0)  # raw file size read at most


class BundledDataset(StrictConfig):
    """A table shipped inside an installed package: works offline."""

    kind: Literal["bundled"]
    name: DatasetName
    package: Literal["statsmodels", "sklearn"]
    loader: str = Field(pattern=r"^[a-z_][a-z0-9_]*$")
    enabled: bool = True
    optional: bool = False  # missing tables warn instead of closing the gate
    description: str = ""


class UrlDataset(StrictConfig):
    """A file fetched over the network, used only if its sha256 matches the pin."""

    kind: Literal["url"]
    name: DatasetName
    url: str
    sha256: Sha256
    format: UrlFormat
    members: list[str] = Field(default_factory=list)  # archive members that are tables
    enabled: bool = True
    optional: bool = False  # missing tables warn instead of closing the gate
    description: str = ""

    @field_validator("url")
    @classmethod
    def _has_host(cls, value: str) -> str:
        parts = urlsplit(value)
        if not parts.scheme or not parts.hostname:
            raise ValueError(f"not an absolute URL with a host: {value!r}")
        return value

    @model_validator(mode="after")
    def _members_need_archive(self) -> UrlDataset:
        if self.members and self.format not in ARCHIVE_FORMATS:
            raise ValueError(f"'members' only applies to archives, format is {self.format!r}")
        return self


DatasetEntry = Annotated[BundledDataset | UrlDataset, Field(discriminator="kind")]


class DatasetsConfig(StrictConfig):
    """The whole catalog: datasets, code corpora and the policies both are read under."""

    seed: int = 0  # row sampling of tables over `limits.max_rows`
    salt: str = "verilearn-splits-v1"  # change to draw a different split assignment
    splits: SplitRatios = Field(default_factory=SplitRatios)
    download: DownloadPolicy = Field(default_factory=DownloadPolicy)
    archive: ArchiveLimits = Field(default_factory=ArchiveLimits)
    read: ReadOptions = Field(default_factory=ReadOptions)
    limits: Limits = Field(default_factory=Limits)
    datasets: list[DatasetEntry]
    # Code repositories (name -> entry). Not partitions: `enabled()` and the partition keys
    # cover `datasets` only, and the salted split draw never sees these.
    corpora: dict[CorpusName, CorpusEntry] = Field(default_factory=dict)
    # Program collections a family reads (core/ingest/corpora.py `programs:`): no split of
    # their own, the family splits them per program.
    programs: dict[CorpusName, ProgramCorpusEntry] = Field(default_factory=dict)

    @field_validator("corpora", "programs")
    @classmethod
    def _distinct_corpora(cls, value: dict[str, CorpusEntry]) -> dict[str, CorpusEntry]:
        return check_distinct(value)

    @field_validator("datasets")
    @classmethod
    def _unique_names(
        cls, value: list[BundledDataset | UrlDataset]
    ) -> list[BundledDataset | UrlDataset]:
        seen: dict[str, int] = {}
        for i, entry in enumerate(value):
            if entry.name in seen:
                raise ValueError(
                    f"dataset name {entry.name!r} is used by entries {seen[entry.name]} and {i}"
                )
            seen[entry.name] = i
        return value

    def enabled(self) -> list[BundledDataset | UrlDataset]:
        return [d for d in self.datasets if d.enabled]

    def entry(self, name: str) -> BundledDataset | UrlDataset:
        """The enabled entry called `name`; a clear error for an unknown or disabled one."""
        for d in self.datasets:
            if d.name == name:
                if not d.enabled:
                    raise ValueError(f"dataset {name!r} is disabled in the catalog")
                return d
        raise ValueError(f"dataset {name!r} is not in the catalog")


def entry_source(entry: BundledDataset | UrlDataset) -> str:
    """Where a dataset comes from, as a person would look it up: the URL or package.loader."""
    if isinstance(entry, UrlDataset):
        return entry.url
    return f"{entry.package}.{entry.loader}"


def dataset_partition_keys(directory: str | Path | None = None) -> list[str]:
    """One Dagster partition per enabled catalog entry, in catalog order."""
    return [d.name for d in load_datasets_config(directory).enabled()]


def load_datasets_config(directory: str | Path | None = None) -> DatasetsConfig:
    """`<directory>/datasets.yaml` (default: `VERILEARN_CONFIG_DIR` or the repo's configs/).

    Every dataset partition reads the catalog twice; parsed once per file version (path,
    size, mtime) in a process, so a run per dataset does not pay the YAML parse each time.
    """
    path = Path(directory or config_dir()) / "datasets.yaml"
    try:
        st = path.stat()
    except OSError:
        return load_config("datasets", DatasetsConfig, directory)  # the error names the file
    return _cached_catalog(str(path.resolve()), st.st_size, st.st_mtime_ns).model_copy(deep=True)


@functools.lru_cache(maxsize=8)
def _cached_catalog(path: str, size: int, mtime_ns: int) -> DatasetsConfig:
    return load_config("datasets", DatasetsConfig, Path(path).parent)


def safe_table_name(raw: str) -> str:
    """A file stem turned into a table name that is safe as a path component."""
    name = re.sub(r"[^a-z0-9_\-]+", "_", raw.lower()).strip("_-")
    return name[:64] or "table"


class LocalCatalog(StrictConfig):
    """The untracked catalog `VERILEARN_LOCAL_CATALOG` names: program corpora only."""

    programs: dict[CorpusName, ProgramCorpusEntry] = Field(default_factory=dict)


def program_corpora(
    family: str, directory: str | Path | None = None
) -> dict[str, tuple[ProgramCorpusEntry, Path]]:
    """The enabled `programs:` entries of `family`: name -> (entry, the catalog file it is
    written in, which relative paths are read from). The tracked catalog's entries first,
    then those of the untracked file `VERILEARN_LOCAL_CATALOG` names."""
    catalog_file = Path(directory or config_dir()) / "datasets.yaml"
    found = {n: (e, catalog_file) for n, e in load_datasets_config(directory).programs.items()}
    local = os.environ.get(LOCAL_CATALOG_ENV)
    if local:
        local_file = Path(local).expanduser().resolve()
        for name, entry in load_yaml_model(local_file, LocalCatalog).programs.items():
            if name in found:
                raise ConfigError(
                    f"{local_file}: programs.{name}: also in {found[name][1]} "
                    f"(one name, one corpus)"
                )
            found[name] = (entry, local_file)
    mine = {n: v for n, v in found.items() if v[0].family == family and v[0].enabled}
    seen: dict[tuple[str, ...], str] = {}
    for name, (entry, file) in mine.items():
        key = entry.identity()
        if entry.path is not None:  # relative paths of two files: compare where they lead
            key = ("path", str((file.parent / Path(entry.path).expanduser()).resolve()))
        if key in seen:
            raise ConfigError(
                f"{file}: programs.{name}: the same corpus as programs.{seen[key]} "
                f"({key[0]} {' '.join(key[1:])}): its programs would be loaded twice"
            )
        seen[key] = name
    return mine
