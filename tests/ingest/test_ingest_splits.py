"""Split assignment: deterministic, per dataset, by content, at the configured ratios."""

from __future__ import annotations

import hashlib
import random

from verilearn_assets.core.ingest.catalog import SplitRatios
from verilearn_assets.core.ingest.splits import assign_splits, split_counts

RATIOS = SplitRatios(train=0.6, dev=0.2, test=0.2)


def _hashes(n: int) -> dict[str, str]:
    return {f"ds{i}": hashlib.sha256(f"content {i}".encode()).hexdigest() for i in range(n)}


def test_deterministic_and_independent_of_order() -> None:
    hashes = _hashes(20)
    first = assign_splits(hashes, RATIOS, "salt")
    items = list(hashes.items())
    random.Random(3).shuffle(items)
    assert assign_splits(dict(items), RATIOS, "salt") == first
    assert set(first) == set(hashes)  # every dataset gets exactly one split


def test_ratios_are_respected() -> None:
    result = assign_splits(_hashes(20), RATIOS, "salt")
    counts = {s: sum(1 for v in result.values() if v == s) for s in ("train", "dev", "test")}
    assert counts == {"train": 12, "dev": 4, "test": 4}


def test_follows_content_not_name() -> None:
    hashes = _hashes(10)
    renamed = {f"other-{name}": h for name, h in hashes.items()}
    a = assign_splits(hashes, RATIOS, "salt")
    b = assign_splits(renamed, RATIOS, "salt")
    assert all(a[name] == b[f"other-{name}"] for name in hashes)


def test_salt_changes_the_draw() -> None:
    hashes = _hashes(20)
    assert assign_splits(hashes, RATIOS, "salt") != assign_splits(hashes, RATIOS, "pepper")


def test_identical_content_shares_a_split() -> None:
    hashes = _hashes(12)
    for salt in ("a", "b", "c", "d"):
        with_copy = dict(hashes, copy_of_ds3=hashes["ds3"])
        result = assign_splits(with_copy, RATIOS, salt)
        assert result["copy_of_ds3"] == result["ds3"]


def test_every_positive_split_gets_a_dataset_when_possible() -> None:
    assert split_counts(3, SplitRatios(train=0.9, dev=0.05, test=0.05)) == {
        "train": 1,
        "dev": 1,
        "test": 1,
    }
    assert split_counts(2, SplitRatios(train=0.9, dev=0.05, test=0.05))["train"] >= 1
    assert split_counts(5, SplitRatios(train=1.0, dev=0.0, test=0.0)) == {
        "train": 5,
        "dev": 0,
        "test": 0,
    }
    for n in range(0, 40):
        assert sum(split_counts(n, RATIOS).values()) == n
