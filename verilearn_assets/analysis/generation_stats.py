"""Search-stage rejections per dataset, as lake rows `mart_generation_diagnostics` reads.

Most turned-away candidates are question records (status `rejected`, with a reason); the
procedural search also drops programs before they become candidates — duplicates, chains
shorter than `min_ops`, skeletons that failed to grow, no columns for a slot — and only
counts them. These rows carry those counts, so the mart's "candidates tried" and "rejected
by reason" are complete. Reasons already kept as records (`KEPT_REASONS`) are left out
here (counted once), and so are the audit-only `would_<reason>` tallies (not rejections).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from verilearn_assets.analysis.programs.search import KEPT_REASONS
from verilearn_assets.core.records import Record, Source, Split, content_hash

LAKE = "analysis/generation_stats"  # lake/analysis/generation_stats/source=/split=/


class SearchRejectionRecord(Record):
    """Programs one dataset's tables lost to one search-stage reason in one partition."""

    id: str
    source: Source
    split: Split
    dataset: str
    reason: str
    n: int


def search_only(counts: Mapping[str, int]) -> dict[str, int]:
    """The counts that exist nowhere else: no kept-record reasons, no audit tallies."""
    return {
        k: n
        for k, n in counts.items()
        if n and not k.startswith("would_") and not k.startswith(KEPT_REASONS)
    }


def search_rejection_records(
    by_dataset: Mapping[str, Counter[str]], source: Source, split: Split
) -> list[SearchRejectionRecord]:
    """One row per dataset and search-only reason, ids stable across runs."""
    return [
        SearchRejectionRecord(
            id=content_hash("search_rejection", source, split, dataset, reason),
            source=source,
            split=split,
            dataset=dataset,
            reason=reason,
            n=n,
        )
        for dataset in sorted(by_dataset)
        for reason, n in sorted(search_only(by_dataset[dataset]).items())
    ]
