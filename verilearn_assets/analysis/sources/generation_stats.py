"""Search-stage rejections per dataset, as lake rows `mart_generation_diagnostics` reads.

Most turned-away candidates are question records (status `rejected`, with a reason); the
procedural search also drops programs before they become candidates — duplicates, chains
shorter than `min_ops`, skeletons that failed to grow, no columns for a slot — and only
counts them. These rows carry those counts, so the mart's "candidates tried" and "rejected
by reason" are complete. Reasons already kept as records (`KEPT_REASONS`) are left out
here (counted once), and so are the audit-only `would_<reason>` tallies (not rejections).

A table the procedural search leaves short of `generation.target_per_table` adds one row
whose reason starts `short_of_target` and says why (its n: the questions missing); the
mart lists those apart from the rejections.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from pydantic import Field

from verilearn_assets.analysis.sources.procedural.search import (
    KEPT_REASONS,
    ProgramSearchConfig,
    SearchStats,
    eligible_columns,
)
from verilearn_assets.core.config import StrictConfig
from verilearn_assets.core.records import Record, Source, Split, TableRecord, content_hash

LAKE = "analysis/generation_stats"  # lake/analysis/generation_stats/source=/split=/
SHORT = "short_of_target"


class GenerationConfig(StrictConfig):
    """`generation:` in configs/questions.yaml: how many questions a table should yield."""

    # the procedural search goes on until a table has this many screened candidates (or
    # spends `procedural.max_skeletons`); fewer is reported as `short_of_target`
    target_per_table: int = Field(10, ge=1)
    # tables with fewer usable columns are expected to fall short (reported all the same)
    min_usable_columns: int = Field(4, ge=1)


def shortfall(
    table: TableRecord,
    found: int,
    generation: GenerationConfig,
    procedural: ProgramSearchConfig,
    stats: SearchStats,
) -> str | None:
    """`short_of_target: ...` naming the table, its count and why, or None at target."""
    target = generation.target_per_table
    if found >= target:
        return None
    pools = eligible_columns(table.columns, procedural, SearchStats())
    usable = len({c for cols in pools.values() for c in cols})
    top = ", ".join(f"{k}={n}" for k, n in stats.rejected.most_common(3))
    if usable < generation.min_usable_columns:
        why = f"only {usable} usable column(s) (< {generation.min_usable_columns})"
    else:
        why = f"search budget spent ({stats.skeletons_tried} skeleton growths)"
    return f"{SHORT}: {table.id} has {found}/{target}: {why}; top rejections {top or 'none'}"


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
