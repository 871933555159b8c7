"""The analysis job through Dagster's Celery executor on a real cluster (Redis, Postgres, two
workers on loopback) gives the lake the in-process run gives; a worker killed mid-step hands
the step to the other worker; a cluster that is not up fails in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import polars as pl
import pytest
from cluster_support import PARTITIONS, REPO, Cluster, children, free_port, wait_for
from dagster import DagsterEventType, DagsterInstance, materialize

from verilearn_assets.cli.orchestrate import run_job
from verilearn_assets.core import lake
from verilearn_assets.platform.distributed import distributed_instance, run_job_distributed

pytestmark = [pytest.mark.slow]

QUESTIONS, EPISODES = "analysis/questions", "analysis/episodes"


def ingest(home: Path) -> None:
    """Typed tables of every catalog dataset into `home`'s lake (in process: the point here
    is the analysis job)."""
    from verilearn_assets.definitions import RESOURCES
    from verilearn_assets.platform.assets import INGEST_ASSETS
    from verilearn_assets.platform.defs import DATASET

    os.environ["VERILEARN_HOME"] = str(home)
    for key in DATASET.get_partition_keys():
        result = materialize(INGEST_ASSETS, partition_key=key, resources=RESOURCES)
        assert result.success, key


def frame(home: Path, asset: str, partition: str) -> pl.DataFrame:
    source, split = partition.split("|")
    parts = sorted(
        lake.partition_dir(asset, lake.lake_root(home), source=source, split=split).glob(
            "*.parquet"
        )
    )
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


@pytest.fixture(scope="module")
def celery_home(cluster: Cluster) -> Path:
    ingest(cluster.home)
    return cluster.home


def test_celery_lake_equals_in_process(cluster: Cluster, celery_home: Path, tmp_path: Path):
    local = tmp_path / "inproc"
    local.mkdir()
    ingest(local)
    os.environ["VERILEARN_HOME"] = str(local)
    with DagsterInstance.ephemeral() as instance:
        for partition in PARTITIONS:
            out = run_job(instance, "analysis_job", partition)
            assert out.success, out.reasons()

    os.environ["VERILEARN_HOME"] = str(celery_home)
    with distributed_instance() as instance:
        runs = [run_job_distributed(instance, "analysis_job", p) for p in PARTITIONS]
        assert all(r.success for r in runs), [r.reasons() for r in runs]
        # every step ran in a Celery worker, and both workers were used across the runs
        workers = set()
        for r in runs:
            for rec in instance.all_logs(r.run_id, of_type=DagsterEventType.ENGINE_EVENT):
                md = rec.dagster_event.engine_event_data.metadata or {}
                if "Celery worker" in md:
                    workers.add(md["Celery worker"].value)
        assert workers, "no step reported a Celery worker"

    for partition in PARTITIONS:
        q_local, q_celery = questions_view(local, partition), questions_view(celery_home, partition)
        assert q_local, f"no questions for {partition}"
        assert q_celery == q_local, partition
        e_local, e_celery = episodes_view(local, partition), episodes_view(celery_home, partition)
        assert e_local, f"no episodes for {partition}"
        assert e_celery == e_local, partition
    assert stray_files(celery_home) == []


def _executing_worker(instance: DagsterInstance, run_id: str, step: str) -> str | None:
    for rec in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
        md = rec.dagster_event.engine_event_data.metadata or {}
        if rec.dagster_event.step_key == step and "Celery worker" in md:
            return md["Celery worker"].value
    return None


def test_worker_killed_mid_step_is_retried_on_the_other_worker(cluster: Cluster, celery_home: Path):
    partition = PARTITIONS[0]
    source, split = partition.split("|")
    # a fresh partition directory: the run rewrites it, the check below reads the result
    for asset in (QUESTIONS, EPISODES):
        target = lake.partition_dir(asset, lake.lake_root(celery_home), source=source, split=split)
        if target.exists():
            for p in target.iterdir():
                p.unlink()
    step = "analysis__questions"
    outcome = {}
    with distributed_instance() as instance:
        thread = threading.Thread(
            target=lambda: outcome.update(
                run=run_job_distributed(instance, "analysis_job", partition)
            ),
            daemon=True,
        )
        thread.start()
        run_id = wait_for(
            lambda: _latest_run(instance),
            60,
            "the run to start",
        )
        victim = wait_for(
            lambda: _executing_worker(instance, run_id, step), 120, f"{step} to reach a worker"
        )
        wait_for(
            lambda: any(
                s.dagster_event.step_key == step
                for s in instance.all_logs(run_id, of_type=DagsterEventType.STEP_START)
            ),
            120,
            f"{step} to start",
        )
        index = int(victim.split("@")[0].removeprefix("worker"))
        parent = cluster.worker_pid(index)
        pool = children(parent)
        assert pool, f"{victim} has no pool process"
        # the machine goes away mid-step: the worker stops taking tasks, its step process dies
        os.kill(parent, signal.SIGTERM)
        for pid in pool:
            os.kill(pid, signal.SIGKILL)
        thread.join(timeout=400)
        assert not thread.is_alive(), "the run did not finish after the worker was killed"
        run = outcome["run"]
        assert run.success, run.reasons()
        starts = instance.all_logs(run_id, of_type=DagsterEventType.STEP_START)
        assert sum(1 for s in starts if s.dagster_event.step_key == step) >= 2
        finishers = {
            rec.dagster_event.engine_event_data.metadata["Celery worker"].value
            for rec in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT)
            if rec.dagster_event.step_key == step
            and "Celery worker" in (rec.dagster_event.engine_event_data.metadata or {})
        }
        assert len(finishers) == 2 and victim in finishers, finishers
    assert questions_view(celery_home, partition)
    assert episodes_view(celery_home, partition)
    assert stray_files(celery_home) == []
    wait_for(lambda: not Path(f"/proc/{parent}").exists(), 60, f"{victim} to exit")
    cluster.make("cluster-up")  # idempotent: restarts only the killed worker
    wait_for(lambda: children(cluster.worker_pid(index)), 60, f"worker{index} to come back")


def _latest_run(instance: DagsterInstance) -> str | None:
    runs = instance.get_runs(limit=1)
    return (
        runs[0].run_id
        if runs and runs[0].job_name == "analysis_job" and not runs[0].is_finished
        else None
    )


def test_postgres_unreachable_is_one_line_naming_the_url(cluster: Cluster):
    url = f"postgresql://verilearn:secret@127.0.0.1:{free_port()}/verilearn"
    env = dict(cluster.env, VERILEARN_POSTGRES_URL=url)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "verilearn_assets.platform.distributed",
            "analysis_job",
            PARTITIONS[0],
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    redacted = url.replace("secret", "***")
    assert redacted in lines[0] and "unreachable" in lines[0]
    assert "secret" not in proc.stderr
