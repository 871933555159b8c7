"""Split assignment per dataset: a whole-catalog, deterministic decision.

Datasets are ranked by a salted hash of their content hash and cut into train/dev/test by
the configured ratios (largest remainder, and at least one dataset per split with a
positive ratio when there are enough). Ranking by content rather than by name means the
same data lands in the same place on every machine, and two datasets with identical
content always share a split, so a copy cannot leak from train into test.

`catalog_splits` computes the assignment from the catalog alone, never from what other
dataset partitions managed to fetch: a failed download neither moves the other datasets
nor loses its own split (the gate needs to know which split is missing it). The content
key of a URL dataset is its sha256 pin; of a bundled dataset, the hash of its export,
cached under `<home>/cache/split-keys/` per package version.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from verilearn_assets.core.ingest.archive import directory_hash
from verilearn_assets.core.ingest.bundled import export_bundled
from verilearn_assets.core.ingest.catalog import (
    BundledDataset,
    DatasetsConfig,
    SplitRatios,
    UrlDataset,
)
from verilearn_assets.core.records import SPLITS

# Bump when `export_bundled` changes what it writes: cached export hashes become stale.
EXPORT_VERSION = "1"
_DISTRIBUTIONS = {"statsmodels": "statsmodels", "sklearn": "scikit-learn"}


def split_counts(n: int, ratios: SplitRatios) -> dict[str, int]:
    """How many of `n` units go to each split."""
    shares = {s: getattr(ratios, s) * n for s in SPLITS}
    counts = {s: math.floor(v) for s, v in shares.items()}
    by_remainder = sorted(SPLITS, key=lambda s: (-(shares[s] - counts[s]), SPLITS.index(s)))
    for s in by_remainder[: n - sum(counts.values())]:
        counts[s] += 1
    positive = [s for s in SPLITS if getattr(ratios, s) > 0]
    if n >= len(positive):
        for s in positive:
            if counts[s] == 0:
                donor = max(SPLITS, key=lambda d: (counts[d], -SPLITS.index(d)))
                counts[donor] -= 1
                counts[s] += 1
    return counts


def _rank_key(salt: str, content: str) -> str:
    return hashlib.sha256(f"{salt}\x1f{content}".encode()).hexdigest()


def assign_splits(
    content_hashes: Mapping[str, str], ratios: SplitRatios, salt: str
) -> dict[str, str]:
    """Dataset name → split, from each dataset's content hash."""
    units = sorted(set(content_hashes.values()), key=lambda h: (_rank_key(salt, h), h))
    counts = split_counts(len(units), ratios)
    unit_split: dict[str, str] = {}
    position = 0
    for split in SPLITS:
        for unit in units[position : position + counts[split]]:
            unit_split[unit] = split
        position += counts[split]
    return {name: unit_split[h] for name, h in sorted(content_hashes.items())}


@functools.cache
def _package_version(package: str) -> str:
    """Installed version of a bundled package (looked up once: it scans sys.path)."""
    return importlib.metadata.version(_DISTRIBUTIONS[package])


def _cache_file(entry: BundledDataset, home: Path) -> Path:
    version = _package_version(entry.package)
    tag = f"{EXPORT_VERSION}\x1f{entry.package}\x1f{entry.loader}\x1f{version}"
    digest = hashlib.sha256(tag.encode()).hexdigest()[:32]
    return Path(home) / "cache" / "split-keys" / f"{entry.name}-{digest}"


def remember_export_hash(entry: BundledDataset, home: Path, content_hash: str) -> None:
    """Cache a bundled dataset's export hash (raw_datasets has just computed it)."""
    target = _cache_file(entry, home)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    with os.fdopen(fd, "w") as fh:
        fh.write(content_hash)
    os.replace(tmp, target)


def split_key(entry: BundledDataset | UrlDataset, home: Path) -> str:
    """The content key a dataset is ranked by, known before (or without) fetching it."""
    if isinstance(entry, UrlDataset):
        return entry.sha256
    cached = _cache_file(entry, home)
    if cached.is_file():
        return cached.read_text().strip()
    with tempfile.TemporaryDirectory(prefix="split-key-") as tmp:
        try:
            export_bundled(entry, Path(tmp) / "files")
        except Exception:  # noqa: BLE001 - its own partition reports the failure
            # An unloadable bundled dataset still needs a split (so the gate can say which
            # split lacks it); rank it by its identity until it loads again.
            return hashlib.sha256(
                f"unloadable\x1f{entry.package}.{entry.loader}".encode()
            ).hexdigest()
        content = directory_hash(Path(tmp) / "files")
    remember_export_hash(entry, home, content)
    return content


def catalog_splits(cfg: DatasetsConfig, home: Path) -> dict[str, str]:
    """Dataset name → split for every enabled catalog entry."""
    return assign_splits({e.name: split_key(e, home) for e in cfg.enabled()}, cfg.splits, cfg.salt)
