"""Benchmark: the analysis job in process vs through Dagster's Celery executor (1 and 2 workers).

Starts a real local cluster (`make cluster-up`: Redis, Postgres, two Celery workers on free
loopback ports) in a throwaway home with the 3-table catalog of tests/scale, then runs the
same partitions of `analysis_job` four ways in this one run:

  in process        `execute_in_process`, the embedded default (the baseline)
  celery, 2 cold    both workers, each importing the code location on its first step
  celery, 1 worker  worker2 stopped: the steps run one after another on worker1
  celery, 2 warm    both workers, the partitions' runs submitted at once

and prints wall times, their ratios to the baseline, the distributed executor's overhead
per step (wall time not spent inside a step, minus the in-process run's own), and a paper
projection for 10,000 tables on 10 workers from the measured per-table and per-step costs.

    .venv/bin/python benchmarks/scale.py
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from dagster import DagsterEventType, DagsterInstance, materialize

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "scale"))
from cluster_support import PARTITIONS, launch_run, running_cluster, wait_for  # noqa: E402

TABLES, WORKERS = 10_000, 10


@dataclass
class Round:
    name: str
    wall_s: float
    step_s: float  # summed time inside steps (STEP_SUCCESS durations)
    steps: int
    tables: int

    @property
    def gap_per_step(self) -> float:
        return max(self.wall_s - self.step_s, 0.0) / max(self.steps, 1)


def step_totals(instance: DagsterInstance, run_ids: list[str]) -> tuple[float, int]:
    total, count = 0.0, 0
    for run_id in run_ids:
        for rec in instance.all_logs(run_id, of_type=DagsterEventType.STEP_SUCCESS):
            total += rec.dagster_event.event_specific_data.duration_ms / 1000
            count += 1
    return total, count


def tables_in(partitions: tuple[str, ...], home: Path) -> int:
    from verilearn_assets.core.ingest.tables import load_table_records

    splits = {p.split("|")[1] for p in partitions}
    return sum(1 for t in load_table_records(home) if t.split in splits)


def ingest(home: Path) -> None:
    from verilearn_assets.core.partitions import DATASET
    from verilearn_assets.definitions import RESOURCES
    from verilearn_assets.ingest.assets import INGEST_ASSETS

    os.environ["VERILEARN_HOME"] = str(home)
    for key in DATASET.get_partition_keys():
        if not materialize(INGEST_ASSETS, partition_key=key, resources=RESOURCES).success:
            raise SystemExit(f"ingest of {key} failed")


def in_process_round(home: Path) -> Round:
    from verilearn_assets.cli.orchestrate import code_location

    os.environ["VERILEARN_HOME"] = str(home)
    job = code_location().resolve_job_def("analysis_job")
    with DagsterInstance.ephemeral() as instance:
        start = time.perf_counter()
        ids = []
        for p in PARTITIONS:
            result = job.execute_in_process(
                instance=instance, partition_key=p, raise_on_error=False
            )
            if not result.success:
                raise SystemExit(f"in-process run of {p} failed")
            ids.append(result.run_id)
        wall = time.perf_counter() - start
        step_s, steps = step_totals(instance, ids)
    return Round("in process", wall, step_s, steps, tables_in(PARTITIONS, home))


def celery_round(name: str, instance: DagsterInstance, cluster, parallel: bool) -> Round:
    """Sequential: runs orchestrated from this process one after another. Parallel: one
    orchestrating process per partition (the CLI), all at once: Dagster's log handlers are
    per process, so concurrent runs are never threads of one process."""
    from verilearn_assets.scale.celery import run_job_distributed

    os.environ["VERILEARN_HOME"] = str(cluster.home)
    start = time.perf_counter()
    if parallel:
        procs = [
            launch_run(cluster, "analysis_job", p, cluster.base / f"{name}-{i}.log")
            for i, p in enumerate(PARTITIONS)
        ]
        if any(proc.wait(timeout=1800) != 0 for proc in procs):
            raise SystemExit(f"{name}: a run failed (logs in {cluster.base})")
        run_ids = [r.run_id for r in instance.get_runs(limit=len(PARTITIONS))]
    else:
        outs = [run_job_distributed(instance, "analysis_job", p) for p in PARTITIONS]
        for out in outs:
            if not out.success:
                raise SystemExit(f"{name}: {out.partition} failed: {out.reasons()}")
        run_ids = [o.run_id for o in outs]
    wall = time.perf_counter() - start
    step_s, steps = step_totals(instance, run_ids)
    return Round(name, wall, step_s, steps, tables_in(PARTITIONS, cluster.home))


def stop_worker(cluster, index: int) -> None:
    pid = cluster.worker_pid(index)
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 60, f"worker{index} to stop")


def main() -> None:
    from verilearn_assets.scale.celery import distributed_instance

    with running_cluster(workers=2) as cluster:
        keys = ("VERILEARN_HOME", "DAGSTER_HOME", "VERILEARN_CONFIG_DIR", "VERILEARN_BROKER_URL")
        keys += ("VERILEARN_BACKEND_URL", "VERILEARN_POSTGRES_URL", "VERILEARN_CELERY_WORKERS")
        os.environ.update({k: cluster.env[k] for k in keys})
        local = cluster.base / "inproc"
        local.mkdir()
        ingest(local)
        ingest(cluster.home)
        rounds = [in_process_round(local)]
        with distributed_instance(home=cluster.home) as instance:
            rounds.append(celery_round("celery, 2 cold", instance, cluster, parallel=True))
            stop_worker(cluster, 2)
            rounds.append(celery_round("celery, 1 worker", instance, cluster, parallel=False))
            cluster.make("cluster-up")
            rounds.append(celery_round("celery, 2 warm", instance, cluster, parallel=True))
    report(rounds)


def report(rounds: list[Round]) -> None:
    base = rounds[0]
    print(f"analysis_job, partitions {', '.join(PARTITIONS)} ({base.tables} tables), 2 cores")
    head = ("mode", "wall s", "vs in-proc", "in steps s", "steps", "gap/step s")
    print(f"{head[0]:<18}{head[1]:>9}{head[2]:>12}{head[3]:>12}{head[4]:>7}{head[5]:>12}")
    for r in rounds:
        print(
            f"{r.name:<18}{r.wall_s:>9.1f}{r.wall_s / base.wall_s:>11.2f}x"
            f"{r.step_s:>12.1f}{r.steps:>7}{r.gap_per_step:>12.2f}"
        )
    one = next(r for r in rounds if r.name == "celery, 1 worker")
    overhead = max(one.gap_per_step - base.gap_per_step, 0.0)
    print(
        f"distributed overhead per step (1 worker, warm, minus in-process gap): {overhead:.2f} s"
        f" ({'under' if overhead < 1 else 'OVER'} the 1 s target)"
    )
    # Paper projection. Compute per table: in-process time inside steps over the tables.
    per_table = base.step_s / max(base.tables, 1)
    steps_per_partition = base.steps / len(PARTITIONS)
    # (a) today's partitioning (source × split): a step handles every table of its split,
    #     so at most |template, procedural| × |splits| = 6 question steps run at once.
    lanes = min(WORKERS, 6)
    today = TABLES * per_table / lanes + steps_per_partition * overhead
    # (b) one partition per dataset: every table is its own run of the same steps.
    per_dataset = TABLES * (per_table + steps_per_partition * overhead) / WORKERS
    print(f"projection, {TABLES:,} tables on {WORKERS} workers (paper, from the figures above):")
    print(f"  compute {per_table:.1f} s/table, {steps_per_partition:.0f} steps per partition")
    print(f"  source x split partitions ({lanes} parallel lanes): {today / 3600:.1f} h")
    print(f"  one partition per dataset ({WORKERS} parallel lanes): {per_dataset / 3600:.1f} h")


if __name__ == "__main__":
    main()
