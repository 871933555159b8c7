"""What happened to each dataset the last time it was ingested, and why it failed.

One small JSON file per dataset under `<home>/ingest/outcomes/`, replaced atomically by the
partition that ingests it. It is what lets the gate say *why* a dataset has no tables
(download failed, parse failed, excluded by limits) instead of only *that* it has none.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

Status = Literal[
    "ok", "fetch_failed", "download_failed", "parse_failed", "excluded_by_limits", "failed"
]
Stage = Literal["raw_datasets", "tables"]

# How each failing status reads in a one-line message.
REASONS: dict[str, str] = {
    "fetch_failed": "raw copy failed",
    "download_failed": "download failed",
    "parse_failed": "parse failed",
    "excluded_by_limits": "excluded by limits",
    "failed": "ingestion failed",
}


class DatasetFailure(RuntimeError):
    """One dataset could not be ingested; `str()` is the one-line message a person reads."""

    def __init__(self, dataset: str, source: str, status: Status, detail: str) -> None:
        self.dataset, self.source, self.status, self.detail = dataset, source, status, detail
        super().__init__(one_line(dataset, source, status, detail))

    def __reduce__(self):  # picklable across worker processes, whatever __init__ takes
        return (type(self), (self.dataset, self.source, self.status, self.detail))


def one_line(dataset: str, source: str, status: str, detail: str) -> str:
    """`dataset 'x' (<url or package.loader>): download failed: <why>` on a single line."""
    # the layers below name the URL or the dataset first: say it once
    for prefix in (
        f"{source}: ",
        f"bundled dataset {dataset!r} ({source}): ",
        f"dataset {dataset!r}: ",
    ):
        detail = detail.removeprefix(prefix)
    detail = " ".join(detail.split())
    return f"dataset {dataset!r} ({source}): {REASONS.get(status, status)}: {detail}"


class DatasetOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dataset: str
    source: str
    split: str
    stage: Stage
    status: Status
    message: str = ""  # the one-line failure; empty when ok
    tables: int = 0
    at: str  # ISO time, UTC


def outcomes_dir(home: Path) -> Path:
    return Path(home) / "ingest" / "outcomes"


def record_outcome(home: Path, outcome: DatasetOutcome) -> Path:
    target = outcomes_dir(home) / f"{outcome.dataset}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    with os.fdopen(fd, "w") as fh:
        fh.write(outcome.model_dump_json(indent=1))
    os.replace(tmp, target)
    return target


def outcome(
    dataset: str,
    source: str,
    split: str,
    stage: Stage,
    status: Status,
    message: str = "",
    tables: int = 0,
) -> DatasetOutcome:
    return DatasetOutcome(
        dataset=dataset,
        source=source,
        split=split,
        stage=stage,
        status=status,
        message=message,
        tables=tables,
        at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def load_outcome(home: Path, dataset: str) -> DatasetOutcome | None:
    """The latest outcome of `dataset`, or None if it was never ingested in this home."""
    path = outcomes_dir(home) / f"{dataset}.json"
    if not path.is_file():
        return None
    try:
        return DatasetOutcome.model_validate(json.loads(path.read_text()))
    except (ValueError, ValidationError) as exc:
        raise ValueError(f"{path}: invalid dataset outcome: {exc}") from exc
