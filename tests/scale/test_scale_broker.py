"""Redis (broker and result backend) restarted while a Celery run is in flight.

The orchestrating process polls each step's result in the Redis result backend; those
polls are retried on connection errors (`core/deploy.py`: up to about a minute), so a
restart mid-run is ridden out: the step already on a worker finishes, the next step is
queued once Redis is back, and the run succeeds with one complete version of the partition
in the lake. (Steps queued but not yet taken at the moment of the restart would need a
broker that keeps its queue, `appendonly yes`: see docs/scale.md. This job has one step in
flight at a time, so none is queued when Redis goes down.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cluster_support import (
    EPISODES,
    PARTITIONS,
    QUESTIONS,
    Cluster,
    celery_workers,
    frame,
    ingest,
    launch_run,
    running_run,
    stray_files,
    wait_for,
)
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, DagsterRunStatus

from verilearn_assets.scale.celery import distributed_instance

pytestmark = [pytest.mark.slow]

PARTITION = PARTITIONS[0]


def restart_redis(cluster: Cluster) -> str:
    """Shut Redis down (as an operator's restart does) and bring it back via cluster-up."""
    address = cluster.env["VERILEARN_BROKER_URL"].split("//")[1].split("/")[0]
    host, port = address.split(":")
    subprocess.run(["redis-cli", "-h", host, "-p", port, "shutdown"], check=True, timeout=30)
    wait_for(
        lambda: (
            subprocess.run(
                ["redis-cli", "-h", host, "-p", port, "ping"], capture_output=True
            ).returncode
            != 0
        ),
        10,
        "Redis to stop",
    )
    cluster.make("cluster-up")  # idempotent: starts only Redis again
    return address


def latest_metadata(instance: DagsterInstance, asset: str) -> dict:
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey(asset.split("/")), asset_partitions=[PARTITION]),
        limit=1,
        ascending=False,
    ).records
    assert records, f"no materialization of {asset} [{PARTITION}]"
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def test_broker_restart_mid_run_is_ridden_out_with_one_complete_partition(
    cluster: Cluster, tmp_path: Path
):
    ingest(cluster.home)
    first_log = tmp_path / "first.log"
    proc = launch_run(cluster, "analysis_job", PARTITION, first_log)
    with distributed_instance() as instance:
        run_id = wait_for(lambda: running_run(instance, PARTITION), 120, f"the {PARTITION} run")
        wait_for(lambda: celery_workers(instance, run_id), 120, "a step on a Celery worker")
        address = restart_redis(cluster)
        first = proc.wait(timeout=300)
        status = instance.get_run_by_id(run_id).status
        # The result backend is retried (core/deploy.py), so the orchestrator's polls wait
        # for Redis to come back: the run rides out the restart, no re-run needed.
        assert first == 0, first_log.read_text()[-3000:]
        assert status == DagsterRunStatus.SUCCESS, status
        assert address  # the restart really happened against this broker
        questions_meta = latest_metadata(instance, QUESTIONS)
        episodes_meta = latest_metadata(instance, EPISODES)

    assert stray_files(cluster.home) == []
    questions = frame(cluster.home, QUESTIONS, PARTITION)
    assert questions["id"].n_unique() == questions.height
    assert questions.height == questions_meta["accepted"] + questions_meta["rejected"]
    accepted = set(questions.filter(questions["status"] == "accepted")["id"].to_list())
    assert len(accepted) == questions_meta["accepted"] > 0
    episodes = frame(cluster.home, EPISODES, PARTITION)
    assert episodes["id"].n_unique() == episodes.height == episodes_meta["episodes"] > 0
    assert set(episodes["question_id"].to_list()) <= accepted
