"""Building one `source × split` partition of trajectories (pure; the
`dafny/trajectories` asset calls this): resumable chunks through the cascade, and the
partition's summary."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from verilearn_assets.core import lake
from verilearn_assets.dafny.family import FAMILY
from verilearn_assets.dafny.records import DafnyTask, DafnyTrajectory
from verilearn_assets.dafny.rollout.cascade import Teacher, cascade_sample, trajectory
from verilearn_assets.dafny.verify.verifier import DafnyVerifier


def build_trajectories(
    tasks: Sequence[DafnyTask], teacher: Teacher, verifier: DafnyVerifier
) -> list[DafnyTrajectory]:
    out = []
    for task in tasks:
        if task.status == "accepted":
            out.append(trajectory(task, teacher, cascade_sample(task, teacher, verifier)))
    return out


def run_partition(
    tasks: Sequence[DafnyTask],
    teacher: Teacher,
    verifier: DafnyVerifier,
    home: Path,
    source: str,
    split: str,
    chunk: int = 8,
) -> tuple[list[DafnyTrajectory], int]:
    """Trajectories of a partition, written incrementally and resumable.

    Trajectories already in the partition (same task, same teacher) are kept; the rest are
    run `chunk` tasks at a time, each chunk appended as one part, so a crash loses at most
    one chunk and the next run resumes. The partition is then compacted to one part holding
    exactly the current accepted tasks' trajectories (stale ones dropped). Returns the
    records and how many were resumed.
    """
    root = lake.lake_root(home)
    wanted = {
        DafnyTrajectory.make_id(t.id, teacher.name): t for t in tasks if t.status == "accepted"
    }
    existing = lake.read_records(
        FAMILY.rollout_lake, DafnyTrajectory, root, source=source, split=split
    )
    done = {r.id: r for r in existing if r.id in wanted and isinstance(r, DafnyTrajectory)}
    todo = [t for tid, t in wanted.items() if tid not in done]
    for start in range(0, len(todo), chunk):
        part = build_trajectories(todo[start : start + chunk], teacher, verifier)
        lake.append_part(
            FAMILY.rollout_lake, DafnyTrajectory.to_frame(part), root, source=source, split=split
        )
        done.update({r.id: r for r in part})
    records = [done[tid] for tid in wanted]
    lake.write_records(
        FAMILY.rollout_lake, records, DafnyTrajectory, root, source=source, split=split
    )
    return records, len(wanted) - len(todo)


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return float(values[0])
    return float(statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1])


def trajectory_summary(trajs: Sequence[DafnyTrajectory]) -> dict[str, object]:
    lat = [t.latency_ms for t in trajs]
    return {
        "trajectories": len(trajs),
        "verified": sum(t.verified for t in trajs),
        "verify_rate": round(sum(t.verified for t in trajs) / len(trajs), 4) if trajs else 0.0,
        "failure_buckets": dict(Counter(t.failure_bucket for t in trajs if t.failure_bucket)),
        "latency_p50_ms": round(percentile(lat, 50), 2),
        "latency_p95_ms": round(percentile(lat, 95), 2),
    }
