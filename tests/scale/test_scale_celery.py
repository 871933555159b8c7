"""The analysis job through Dagster's Celery executor on a real cluster (Redis, Postgres, two
workers on loopback): a worker killed mid-step hands its step to the other worker, and the
lake still equals the in-process run's; a cluster that is not up fails in one line.

The kill happens inside the equality run (one Celery pass instead of two keeps this folder
within a few minutes on 2 cores): the claim tested is the stronger one, that a lost worker
changes nothing in the lake.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from cluster_support import (
    PARTITIONS,
    REPO,
    Cluster,
    children,
    free_port,
    launch_run,
    wait_for,
)
from dagster import DagsterEventType, DagsterInstance, materialize

from verilearn_assets.cli.orchestrate import run_job
from verilearn_assets.core import lake
from verilearn_assets.platform.distributed import distributed_instance

pytestmark = [pytest.mark.slow]

QUESTIONS, EPISODES = "analysis/questions", "analysis/episodes"
KILLED_STEP = "analysis__questions"


def ingest(home: Path) -> None:
    """Typed tables of every catalog dataset into `home`'s lake (in process: the point here
    is the analysis job)."""
    from verilearn_assets.core.ingest.catalog import load_datasets_config
    from verilearn_assets.definitions import RESOURCES
    from verilearn_assets.platform.assets import INGEST_ASSETS

    os.environ["VERILEARN_HOME"] = str(home)
    # this test's catalog, not the partitions fixed when another test first loaded the
    # code location with the shipped catalog
    for key in [e.name for e in load_datasets_config().enabled()]:
        result = materialize(INGEST_ASSETS, partition_key=key, resources=RESOURCES)
        assert result.success, key


def frame(home: Path, asset: str, partition: str) -> pl.DataFrame:
    source, split = partition.split("|")
    root = lake.partition_dir(asset, lake.lake_root(home), source=source, split=split)
    parts = sorted(root.glob("*.parquet"))
    assert parts, f"no {asset} files for {partition} under {home}"
    return pl.concat([pl.read_parquet(p) for p in parts], how="diagonal_relaxed")


def questions_view(home: Path, partition: str) -> list[tuple]:
    df = frame(home, QUESTIONS, partition).sort("id")
    return df.select("id", "status", "answer", "answer_hashes").rows()


def episodes_view(home: Path, partition: str) -> list[tuple]:
    df = frame(home, EPISODES, partition).sort("id")
    return df.select("id", "question_id", "verified", "answer").rows()


def stray_files(home: Path) -> list[Path]:
    """Anything in the lake that is not a finished Parquet part (temporary files of a write)."""
    return [p for p in lake.lake_root(home).rglob("*") if p.is_file() and p.suffix != ".parquet"]


def celery_workers(instance: DagsterInstance, run_id: str, step: str | None = None) -> list[str]:
    """The Celery workers that took a step of the run (in order), from the engine events."""
    out = []
    for rec in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
        md = rec.dagster_event.engine_event_data.metadata or {}
        if "Celery worker" in md and (step is None or rec.dagster_event.step_key == step):
            out.append(md["Celery worker"].value)
    return out


def running_run(instance: DagsterInstance, partition: str) -> str | None:
    for run in instance.get_runs(limit=10):
        if run.tags.get("dagster/partition") == partition and not run.is_finished:
            return run.run_id
    return None


def kill_worker_mid_step(cluster: Cluster, instance: DagsterInstance, run_id: str) -> tuple:
    """Wait until KILLED_STEP runs on a worker, then take that worker away: its main process
    stops taking tasks (SIGTERM) and its pool process dies at once (SIGKILL)."""
    victim = wait_for(
        lambda: next(iter(celery_workers(instance, run_id, KILLED_STEP)), None),
        120,
        f"{KILLED_STEP} to reach a worker",
    )
    wait_for(
        lambda: any(
            s.dagster_event.step_key == KILLED_STEP
            for s in instance.all_logs(run_id, of_type=DagsterEventType.STEP_START)
        ),
        120,
        f"{KILLED_STEP} to start",
    )
    index = int(victim.split("@")[0].removeprefix("worker"))
    parent = cluster.worker_pid(index)
    pool = children(parent)
    assert pool, f"{victim} has no pool process"
    os.kill(parent, signal.SIGTERM)
    for pid in pool:
        os.kill(pid, signal.SIGKILL)
    return victim, index, parent


def test_celery_lake_equals_in_process_with_a_worker_killed_mid_step(
    cluster: Cluster, tmp_path: Path
):
    local = tmp_path / "inproc"
    local.mkdir()
    ingest(local)
    with DagsterInstance.ephemeral() as instance:
        for partition in PARTITIONS:
            out = run_job(instance, "analysis_job", partition)
            assert out.success, out.reasons()

    ingest(cluster.home)
    procs = {
        p: launch_run(cluster, "analysis_job", p, tmp_path / f"run-{i}.log")
        for i, p in enumerate(PARTITIONS)
    }
    with distributed_instance() as instance:
        target = PARTITIONS[0]
        run_id = wait_for(lambda: running_run(instance, target), 120, f"the {target} run")
        victim, index, parent = kill_worker_mid_step(cluster, instance, run_id)
        for i, (p, proc) in enumerate(procs.items()):
            assert proc.wait(timeout=600) == 0, (p, (tmp_path / f"run-{i}.log").read_text()[-3000:])
        starts = instance.all_logs(run_id, of_type=DagsterEventType.STEP_START)
        assert sum(1 for s in starts if s.dagster_event.step_key == KILLED_STEP) >= 2
        takers = celery_workers(instance, run_id, KILLED_STEP)
        assert takers[0] == victim and takers[-1] != victim, takers

    for partition in PARTITIONS:
        q_local = questions_view(local, partition)
        assert q_local, f"no questions for {partition}"
        assert questions_view(cluster.home, partition) == q_local, partition
        e_local = episodes_view(local, partition)
        assert e_local, f"no episodes for {partition}"
        assert episodes_view(cluster.home, partition) == e_local, partition
    assert stray_files(cluster.home) == []

    wait_for(lambda: not Path(f"/proc/{parent}").exists(), 60, f"{victim} to exit")
    cluster.make("cluster-up")  # idempotent: restarts only the killed worker
    wait_for(lambda: children(cluster.worker_pid(index)), 60, f"worker{index} to come back")


def test_postgres_unreachable_is_one_line_naming_the_url(cluster: Cluster):
    url = f"postgresql://verilearn:secret@127.0.0.1:{free_port()}/verilearn"
    env = dict(cluster.env, VERILEARN_POSTGRES_URL=url)
    command = [sys.executable, "-m", "verilearn_assets.platform.distributed", "analysis_job"]
    proc = subprocess.run(
        [*command, PARTITIONS[0]], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert url.replace("secret", "***") in lines[0] and "unreachable" in lines[0]
    assert "secret" not in proc.stderr
