"""What fitting prompts cost, summed per asset partition and kept in the lake.

`BudgetCounts` adds up `FitResult`s (messages compressed and tokens removed by kind,
overflows); `write_counts` turns one partition's counts into `ContextBudgetRecord` rows
under `context_budget/<family>/<asset>/`, which `mart_context_budget` reads.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verilearn_assets.core import lake
from verilearn_assets.core.llm.fit import FAILURE_CLASS, FitResult
from verilearn_assets.core.records import Record, Source, Split, content_hash


@dataclass
class BudgetCounts:
    """Losses summed over many fits: what an asset partition reports."""

    requests: int = 0
    messages_compressed: Counter[str] = field(default_factory=Counter)  # by kind
    tokens_removed: Counter[str] = field(default_factory=Counter)  # by kind
    overflows: int = 0
    counter: str = ""

    def add(self, fit: FitResult) -> None:
        self.requests += 1
        self.messages_compressed.update(fit.messages_by_kind)
        self.tokens_removed.update(fit.tokens_removed)
        self.overflows += fit.overflow
        self.counter = self.counter or fit.counter

    def merge(self, other: BudgetCounts) -> None:
        self.requests += other.requests
        self.messages_compressed.update(other.messages_compressed)
        self.tokens_removed.update(other.tokens_removed)
        self.overflows += other.overflows
        self.counter = self.counter or other.counter

    def metadata(self) -> dict[str, Any]:
        """Flat figures for Dagster materialization metadata."""
        return {
            "context_requests": self.requests,
            "context_messages_compressed": sum(self.messages_compressed.values()),
            "context_tokens_removed": sum(self.tokens_removed.values()),
            "context_overflows": self.overflows,
            "context_counter": self.counter or "none (no budgeted request)",
            **{f"context_tokens_removed_{k}": v for k, v in sorted(self.tokens_removed.items())},
        }

    def records(
        self, family: str, asset: str, source: str, split: str
    ) -> list[ContextBudgetRecord]:
        """One row per kind compressed, plus a `context_overflow` row carrying overflows."""
        kinds = sorted(set(self.messages_compressed) | set(self.tokens_removed))
        rows = [
            (k, self.messages_compressed.get(k, 0), self.tokens_removed.get(k, 0), 0) for k in kinds
        ]
        rows.append((FAILURE_CLASS, 0, 0, self.overflows))
        return [
            ContextBudgetRecord(
                id=content_hash("context_budget", family, asset, source, split, kind),
                family=family,
                asset=asset,
                source=source,
                split=split,
                kind=kind,
                requests=self.requests,
                messages_compressed=mc,
                tokens_removed=tr,
                overflows=ov,
                counter=self.counter,
            )
            for kind, mc, tr, ov in rows
        ]


LAKE_ASSET = "context_budget"  # every family's rows; one lake partition per family asset


def lake_asset(family: str, asset: str) -> str:
    """Where one family asset's rows live: `context_budget/<family>/<asset>/source=/split=/`,
    read by `mart_context_budget` (so two assets never overwrite each other's rows)."""
    return f"{LAKE_ASSET}/{family}/{asset}"


class ContextBudgetRecord(Record):
    """Losses of one asset partition for one kind of material (lake `context_budget`)."""

    id: str
    family: str
    asset: str
    source: Source
    split: Split
    kind: str
    requests: int  # budgeted requests in the partition (same on every row)
    messages_compressed: int
    tokens_removed: int
    overflows: int
    counter: str


def write_counts(
    counts: BudgetCounts, family: str, asset: str, root: Path, source: str, split: str
) -> Path:
    """One asset partition's losses into the lake rows `mart_context_budget` reads
    (replacing that partition's rows from an earlier run)."""
    return lake.write_records(
        lake_asset(family, asset),
        counts.records(family, asset, source, split),
        ContextBudgetRecord,
        root,
        source=source,
        split=split,
    )
