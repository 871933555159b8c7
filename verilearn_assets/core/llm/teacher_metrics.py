"""What one teacher/actor run cost and achieved: `<home>/runs/<id>/teacher_metrics.jsonl`.

Asset metadata and printed tables vanish with the run's log; a file beside the training
runs lets runs be compared (prompt variants, models) and read by scripts and marts. A
family's loop adds one `Attempt` per rollout it ran (an analysis episode, a Dafny
cascade, a refactor step) and writes once at the end. Each line is one `MetricsRow`: one
per source × split the run touched, then the whole run (`source`/`split` = "(all)").

Precision is verified / attempted; parse failures count the model replies the family's
parser rejected; latency is the wall time of one attempt (percentiles by nearest rank,
so every reported value is one that was measured); tokens are what the server reported
(0 for the model-free program teachers).
"""

from __future__ import annotations

import json
import math
import os
import secrets
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

FILENAME = "teacher_metrics.jsonl"
ALL = "(all)"


@dataclass(frozen=True)
class Attempt:
    """One rollout of the run, as the family's loop saw it."""

    source: str
    split: str
    verified: bool
    latency_ms: float
    parse_failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class MetricsRow(BaseModel):
    """One line of `teacher_metrics.jsonl`."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    family: str
    teacher: str
    model: str | None = None
    source: str
    split: str
    attempted: int
    verified: int
    precision: float  # verified / attempted (0 when nothing was attempted)
    parse_failures: int
    latency_ms_p50: float
    latency_ms_p90: float
    latency_ms_p99: float
    prompt_tokens: int
    completion_tokens: int
    written_at: str


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (`q` in 0..100): a value that was measured; 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(math.ceil(q / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def new_run_id(family: str) -> str:
    """`teacher-<family>-YYYYmmddTHHMMSS-<hex>`: sortable by time, unique across processes."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return f"teacher-{family}-{stamp}-{secrets.token_hex(3)}"


def runs_root(home: Path) -> Path:
    """Where teacher runs go: `<home>/runs`, beside the training runs."""
    return Path(home) / "runs"


class TeacherMetrics:
    """Accumulates a run's attempts; `write` puts the summary rows in the run directory."""

    def __init__(
        self, family: str, teacher: str, model: str | None = None, run_id: str | None = None
    ) -> None:
        self.family = family
        self.teacher = teacher
        self.model = model
        self.run_id = run_id or new_run_id(family)
        self.attempts: list[Attempt] = []

    def add(self, attempt: Attempt) -> None:
        self.attempts.append(attempt)

    def _row(self, source: str, split: str, group: Sequence[Attempt], at: str) -> MetricsRow:
        latencies = [a.latency_ms for a in group]
        verified = sum(a.verified for a in group)
        return MetricsRow(
            run_id=self.run_id,
            family=self.family,
            teacher=self.teacher,
            model=self.model,
            source=source,
            split=split,
            attempted=len(group),
            verified=verified,
            precision=round(verified / len(group), 6) if group else 0.0,
            parse_failures=sum(a.parse_failures for a in group),
            latency_ms_p50=round(percentile(latencies, 50), 3),
            latency_ms_p90=round(percentile(latencies, 90), 3),
            latency_ms_p99=round(percentile(latencies, 99), 3),
            prompt_tokens=sum(a.prompt_tokens for a in group),
            completion_tokens=sum(a.completion_tokens for a in group),
            written_at=at,
        )

    def rows(self) -> list[MetricsRow]:
        """One row per source × split (sorted), then the whole run."""
        at = datetime.now(UTC).isoformat(timespec="seconds")
        groups: dict[tuple[str, str], list[Attempt]] = {}
        for a in self.attempts:
            groups.setdefault((a.source, a.split), []).append(a)
        out = [self._row(s, t, groups[(s, t)], at) for s, t in sorted(groups)]
        return [*out, self._row(ALL, ALL, self.attempts, at)]

    def write(self, home: Path) -> Path:
        """Write (replace) `<home>/runs/<run_id>/teacher_metrics.jsonl` atomically."""
        directory = runs_root(home) / self.run_id
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / FILENAME
        text = "".join(row.model_dump_json() + "\n" for row in self.rows())
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".teacher_metrics-")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path


def read_teacher_metrics(path: Path) -> list[MetricsRow]:
    """The rows of one metrics file; a bad line is an error naming the file and line."""
    rows = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(MetricsRow.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise ValueError(f"{path}: line {n}: not a teacher metrics row: {exc}") from exc
    return rows


def find_teacher_metrics(home: Path, family: str | None = None) -> Iterable[Path]:
    """Every run's metrics file under `<home>/runs`, oldest first (run ids sort by time)."""
    prefix = f"teacher-{family}-" if family else "teacher-"
    root = runs_root(home)
    if not root.is_dir():
        return []
    return sorted(
        d / FILENAME
        for d in root.iterdir()
        if d.name.startswith(prefix) and (d / FILENAME).is_file()
    )
