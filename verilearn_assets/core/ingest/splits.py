"""Split assignment per dataset: a whole-catalog, deterministic decision.

Datasets are ranked by a salted hash of their content hash and cut into train/dev/test by
the configured ratios (largest remainder, and at least one dataset per split with a
positive ratio when there are enough). Ranking by content rather than by name means the
same data lands in the same place on every machine, and two datasets with identical
content always share a split, so a copy cannot leak from train into test.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping

from verilearn_assets.core.ingest.catalog import SplitRatios
from verilearn_assets.core.records import SPLITS


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
