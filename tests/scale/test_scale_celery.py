"""The analysis job through Dagster's Celery executor on a real cluster (Redis, Postgres, two
workers on loopback): every template/procedural partition, with a worker killed mid-step,
ends with a lake equal to the in-process run's; a cluster that is not up fails in one line.

The kill happens inside the equality run (one Celery pass instead of two keeps this folder
within a few minutes on 2 cores): the claim tested is the stronger one, that a lost worker
changes nothing in the lake. The test also shows which mechanism recovered the step: the
broker re-delivering the unacknowledged task (late ack), not a Dagster retry. A reader
holds the killed step's partition until the kill, so the step is caught at its commit with
its temp file written whatever the machine's speed (a 2-second step was once missed on a
loaded CI machine), and the lake must end without that temp file. The killed worker is
told to stop consuming (remote control, answer awaited) before its pool process dies, so
the task it hands back can only be taken by the other worker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from celery import Celery
from cluster_support import (
    PARTITIONS,
    QUESTIONS,
    REPO,
    Cluster,
    celery_workers,
    children,
    episodes_view,
    free_port,
    ingest,
    launch_run,
    questions_view,
    run_story,
    running_run,
    stray_files,
    submitted_queues,
    wait_for,
)
from dagster import DagsterEventType, DagsterInstance

from verilearn_assets.cli.orchestrate import run_job
from verilearn_assets.core import lake
from verilearn_assets.core.deploy import load_deploy_config
from verilearn_assets.core.procs import running
from verilearn_assets.core.records import SPLITS
from verilearn_assets.scale.celery import distributed_instance

pytestmark = [pytest.mark.slow]

KILLED_STEP = "analysis__questions"
# Every template/procedural partition; the killed run (template|dev: heart has template
# questions) is launched first.
ALL_PARTITIONS = (
    PARTITIONS[0],
    *(
        f"{s}|{t}"
        for s in ("template", "procedural")
        for t in SPLITS
        if f"{s}|{t}" != PARTITIONS[0]
    ),
)


def stop_consuming(broker: str, worker: str) -> list[str]:
    """Have `worker` stop taking tasks from every queue it serves (Celery's remote control,
    each answer awaited), so a task handed back to the broker can only go to another
    worker. A SIGTERM alone does not guarantee that: a worker that notices its dead pool
    process before the signal puts the task back and may take it again itself."""
    app = Celery(broker=broker)
    try:
        answer = app.control.inspect(destination=[worker], timeout=10).active_queues() or {}
        queues = [q["name"] for q in answer.get(worker, [])]
        assert queues, f"{worker} named no queues it consumes: {answer}"
        for queue in queues:
            replies = app.control.cancel_consumer(
                queue, destination=[worker], reply=True, timeout=10
            )
            assert any("ok" in r.get(worker, {}) for r in replies), (queue, replies)
        left = app.control.inspect(destination=[worker], timeout=10).active_queues() or {}
        assert left.get(worker) == [], f"{worker} still consumes: {left}"
        return queues
    finally:
        app.close()


def kill_worker_mid_step(
    cluster: Cluster, instance: DagsterInstance, run_id: str, pdir: Path, before: set[Path]
) -> tuple:
    """Wait until KILLED_STEP, on a worker, has written its questions to a temp file in
    `pdir` (one not in `before`) and waits for the partition (a reader holds it), then
    take that worker away: it stops taking tasks (remote control, then SIGTERM) and its
    pool process dies at once (SIGKILL). The step cannot have finished first, however slow
    the machine, and only the other worker can take it up again."""
    victim = wait_for(
        lambda: next(iter(celery_workers(instance, run_id, KILLED_STEP)), None),
        300,
        f"{KILLED_STEP} to reach a worker",
    )
    wait_for(lambda: set(pdir.glob(".*.tmp")) - before, 300, f"{KILLED_STEP} to reach its commit")
    index = int(victim.split("@")[0].removeprefix("worker"))
    parent = cluster.worker_pid(index)
    pool = children(parent)
    assert pool, f"{victim} has no pool process"
    stop_consuming(cluster.env["VERILEARN_BROKER_URL"], victim)
    for pid in pool:
        os.kill(pid, signal.SIGKILL)
    os.kill(parent, signal.SIGTERM)
    return victim, index, parent


def view_diff(asset: str, partition: str, local: list[tuple], cluster: list[tuple]) -> str:
    """One line per differing row, keyed by id: what a failed equality should show."""
    a, b = {r[0]: r for r in local}, {r[0]: r for r in cluster}
    lines = [f"{asset} [{partition}]: in-process {len(a)} rows, Celery {len(b)} rows"]
    for key in sorted(a.keys() | b.keys()):
        if a.get(key) != b.get(key):
            lines.append(f"  {key}: in-process {a.get(key)} / Celery {b.get(key)}")
    return "\n".join(lines[:40])


def test_celery_lake_equals_in_process_with_a_worker_killed_mid_step(
    cluster: Cluster, tmp_path: Path
):
    local = tmp_path / "inproc"
    local.mkdir()
    ingest(local)
    # the in-process runs' Dagster log goes to a file: on a failure, pytest's captured
    # output would otherwise bury the assertion under thousands of lines
    with DagsterInstance.ephemeral() as instance, open(tmp_path / "inproc.log", "w") as log:
        for partition in ALL_PARTITIONS:
            out = run_job(instance, "analysis_job", partition, log=log)
            assert out.success, out.reasons()

    ingest(cluster.home)
    target = ALL_PARTITIONS[0]
    dims = dict(zip(("source", "split"), target.split("|"), strict=True))
    pdir = lake.partition_dir(QUESTIONS, lake.lake_root(cluster.home), **dims)
    pdir.mkdir(parents=True, exist_ok=True)
    before = set(pdir.glob(".*.tmp"))
    logs = {p: tmp_path / f"run-{i}.log" for i, p in enumerate(ALL_PARTITIONS)}
    with distributed_instance() as instance:
        # a reader holds the killed run's partition until the kill: its step waits there
        with lake.partition_lock(pdir, exclusive=False, create=True):
            procs = {p: launch_run(cluster, "analysis_job", p, logs[p]) for p in ALL_PARTITIONS}
            run_id = wait_for(lambda: running_run(instance, target), 300, f"the {target} run")
            victim, index, parent = kill_worker_mid_step(cluster, instance, run_id, pdir, before)
        for p, proc in procs.items():
            rc = proc.wait(timeout=900)
            log = logs[p].read_text()[-3000:]
            assert rc == 0, f"run {p} exited {rc}:\n{log}\n{run_story(cluster, instance, run_id)}"
        story = run_story(cluster, instance, run_id)
        starts = instance.all_logs(run_id, of_type=DagsterEventType.STEP_START)
        n_starts = sum(1 for s in starts if s.dagster_event.step_key == KILLED_STEP)
        assert n_starts >= 2, f"{KILLED_STEP} started {n_starts} time(s)\n{story}"
        takers = celery_workers(instance, run_id, KILLED_STEP)
        assert takers[0] == victim and takers[-1] != victim, (
            f"{KILLED_STEP} taken by {takers}, killed {victim}\n{story}"
        )
        # Which mechanism recovered it: the orchestrator submitted the step once (to the
        # sandbox queue) and Dagster never put it up for retry, so its second start is the
        # broker re-delivering the same unacknowledged task to the other worker.
        queues = load_deploy_config().celery
        submitted = submitted_queues(instance, run_id, KILLED_STEP)
        assert submitted == [queues.sandbox_queue], f"{KILLED_STEP} submitted to {submitted}"
        retries = instance.all_logs(run_id, of_type=DagsterEventType.STEP_UP_FOR_RETRY)
        retried = [r for r in retries if r.dagster_event.step_key == KILLED_STEP]
        assert retried == [], f"{KILLED_STEP} put up for retry {len(retried)} time(s)\n{story}"
        # routing in a real run: the pooled gate check on `sandbox`, a plain one on `default`
        reproduce = "analysis__questions_questions_reproduce"
        schema = "analysis__questions_questions_schema_contract"
        for step, queue in ((reproduce, queues.sandbox_queue), (schema, queues.default_queue)):
            submitted = submitted_queues(instance, run_id, step)
            assert submitted == [queue], f"{step} submitted to {submitted}, not [{queue!r}]"

    sizes = {}
    for partition in ALL_PARTITIONS:
        q_local = questions_view(local, partition)
        q_cluster = questions_view(cluster.home, partition)
        assert q_cluster == q_local, view_diff("questions", partition, q_local, q_cluster)
        e_local = episodes_view(local, partition)
        e_cluster = episodes_view(cluster.home, partition)
        assert e_cluster == e_local, view_diff("episodes", partition, e_local, e_cluster)
        sizes[partition] = (len(q_local), len(e_local))
    for source in ("template", "procedural"):  # every source really produced something
        assert any(q and e for p, (q, e) in sizes.items() if p.startswith(source)), sizes
    stray = stray_files(cluster.home)
    assert stray == [], f"left in the lake: {stray}"  # the killed step's temp file was swept

    wait_for(lambda: not running(parent), 60, f"{victim} (pid {parent}) to exit")
    cluster.make("cluster-up")  # idempotent: restarts only the killed worker
    pid = cluster.worker_pid(index)  # cluster-up returns once the pool is forked
    assert pid != parent and children(pid), f"worker{index} did not come back"


def test_postgres_unreachable_is_one_line_naming_the_url(cluster: Cluster):
    url = f"postgresql://verilearn:secret@127.0.0.1:{free_port()}/verilearn"
    env = dict(cluster.env, VERILEARN_POSTGRES_URL=url)
    command = [sys.executable, "-m", "verilearn_assets.scale.celery", "analysis_job"]
    proc = subprocess.run(
        [*command, PARTITIONS[0]], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert url.replace("secret", "***") in lines[0] and "unreachable" in lines[0]
    assert "secret" not in proc.stderr
