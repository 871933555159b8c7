"""`verilearn demo --executor celery` on the real cluster: a minimal demo (the analysis family,
template source, dev split, up to the tasks stage) runs every one of its runs through the
Celery workers and records them in the Postgres instance."""

from __future__ import annotations

import subprocess
import sys

import pytest
from cluster_support import REPO, Cluster, celery_workers, run_story
from dagster import DagsterEventType, DagsterRunStatus

from verilearn_assets.scale.celery import distributed_instance

pytestmark = [pytest.mark.slow]

ARGS = ["--families", "analysis", "--sources", "template", "--splits", "dev"]


def test_demo_runs_every_run_on_the_celery_workers(cluster: Cluster):
    with distributed_instance() as instance:
        before = {r.run_id for r in instance.get_runs()}
    command = [sys.executable, "-m", "verilearn_assets.cli", "demo", "--executor", "celery"]
    proc = subprocess.run(
        [*command, *ARGS, "--stop-after", "tasks"],
        cwd=REPO,
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "analysis_job [template|dev]: ok" in proc.stdout, proc.stdout

    with distributed_instance() as instance:
        runs = [r for r in instance.get_runs() if r.run_id not in before]
        jobs = sorted({r.job_name for r in runs})
        assert jobs == ["analysis_job", "platform_job", "smoke_job"], jobs
        for run in runs:
            story = run_story(cluster, instance, run.run_id)
            assert run.status == DagsterRunStatus.SUCCESS, story
            started = {
                e.dagster_event.step_key
                for e in instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_START)
            }
            assert started, story
            for step in started:  # every step that ran was taken by a cluster worker
                takers = {w.split("@")[0] for w in celery_workers(instance, run.run_id, step)}
                assert takers and takers <= {"worker1", "worker2"}, (step, story)
    analysis = [r for r in runs if r.job_name == "analysis_job"]
    assert [r.tags.get("dagster/partition") for r in analysis] == ["template|dev"]
    assert f"{len(runs)}/{len(runs)} runs succeeded" in proc.stdout, proc.stdout[-2000:]
