"""Does the lake hold every dataset the catalog assigns to a split? If not, which and why.

The gate calls this so that a failed download can never turn into an empty split that
passes: "nothing at all" is not "verified". A dataset marked `optional: true` is left out
unless asked for (the gate warns about those instead of blocking).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from verilearn_assets.core.ingest.catalog import DatasetsConfig, entry_source
from verilearn_assets.core.ingest.outcomes import REASONS, load_outcome
from verilearn_assets.core.ingest.splits import catalog_splits
from verilearn_assets.core.ingest.tables import load_table_records
from verilearn_assets.core.records import SPLITS

NO_TABLES = "(split)"  # `Missing.dataset` when the split as a whole has no tables


class Missing(BaseModel):
    """One dataset (or the whole split) without tables in the lake, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    dataset: str
    split: str
    source: str
    reason: str  # download failed | parse failed | excluded by limits | never materialized | …
    detail: str = ""  # the recorded one-line failure, when there is one
    optional: bool = False

    def line(self) -> str:
        if self.dataset == NO_TABLES:
            return f"split {self.split!r}: {self.reason}"
        tail = f": {self.detail}" if self.detail else ""
        opt = " (optional)" if self.optional else ""
        return f"dataset {self.dataset!r}{opt} [{self.split}]: {self.reason}{tail}"


def catalog_coverage(
    cfg: DatasetsConfig, home: Path, split: str, *, include_optional: bool = False
) -> list[Missing]:
    """Every enabled dataset assigned to `split` that has no tables there, with the reason.

    Also one entry (dataset `NO_TABLES`) when the split has no tables at all, even if every
    dataset of it is optional or the catalog assigns it none.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} (expected one of {', '.join(SPLITS)})")
    home = Path(home)
    splits = catalog_splits(cfg, home)
    present = {t.dataset for t in load_table_records(home, split)}
    missing: list[Missing] = []
    for entry in cfg.enabled():
        if splits[entry.name] != split or entry.name in present:
            continue
        if entry.optional and not include_optional:
            continue
        last = load_outcome(home, entry.name)
        if last is None:
            reason, detail = "never materialized", ""
        elif last.status != "ok":
            reason, detail = REASONS[last.status], last.message
        elif last.stage == "raw_datasets":
            reason, detail = "fetched but its tables were never materialized", ""
        else:
            reason = "tables materialized but not in the lake"
            detail = f"last materialized at {last.at} into split {last.split!r}"
        missing.append(
            Missing(
                dataset=entry.name,
                split=split,
                source=entry_source(entry),
                reason=reason,
                detail=detail,
                optional=entry.optional,
            )
        )
    if not present:
        assigned = sum(1 for s in splits.values() if s == split)
        missing.append(
            Missing(
                dataset=NO_TABLES,
                split=split,
                source="",
                reason=f"no tables in the lake ({assigned} catalog datasets assigned)",
            )
        )
    return missing
