"""The actor loop: program teacher end to end, forced failure cases, resume after a kill."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from refactor_support import drive_actor, refactor_config, write_tasks

from verilearn_assets.core import lake
from verilearn_assets.core.llm.launcher import free_port
from verilearn_assets.refactor.records import TrajectoryStep
from verilearn_assets.refactor.rewards import PARTIAL_CAP, compute_reward, recompute
from verilearn_assets.refactor.rollout.actor import Actor, db_path, state_key
from verilearn_assets.refactor.rollout.prompts import load_prompts
from verilearn_assets.refactor.rollout.state import StateStore
from verilearn_assets.refactor.rollout.teachers import ProgramTeacher
from verilearn_assets.refactor.sources.catalog import load_corpus

REPOS = {r.name: r for r in load_corpus()}


def read_steps(home: Path, source: str, split: str) -> list[TrajectoryStep]:
    return lake.read_records(  # type: ignore[return-value]
        "refactor/trajectories", TrajectoryStep, lake.lake_root(home), source=source, split=split
    )


def test_program_teacher_verifies_every_reference_step(home: Path, small_tasks) -> None:
    tasks = small_tasks["procedural"]
    assert any(len(t.reference_actions) == 2 for t in tasks)
    actor = Actor(
        home=home,
        teacher=ProgramTeacher(),
        config=refactor_config("bwrap", home),
        prompts=load_prompts(),
        repos=REPOS,
        concurrency=2,  # two tasks side by side on one queue and one state store
    )
    try:
        summary = asyncio.run(actor.run(tasks, "procedural", tasks[0].split))
    finally:
        actor.close()
    steps = read_steps(home, "procedural", tasks[0].split)
    accepted = [t for t in tasks if t.status == "accepted"]  # duplicate targets are rejected
    assert len(steps) == sum(len(t.reference_actions) for t in accepted) == summary.steps
    assert all(s.verified and s.teacher == "program" for s in steps)
    by_task = {t.id: t for t in tasks}
    store = StateStore(db_path(home))
    for s in steps:
        task = by_task[s.task_id]
        last = s.step == len(task.reference_actions)
        assert s.done == last and s.reward == (1.0 if last else PARTIAL_CAP * s.step / 2)
        assert s.tests["status"] == "passed" and s.sandbox_result["status"] == "ok"
        assert "<state>" in s.prompt and task.instruction in s.prompt
        assert (
            compute_reward(task, None, "ok", "passed", s.tree_hash, s.diff_from_start).value
            == s.reward
        )
        # one state version per step, and the next prompt carried the merged state
        versions = store.versions(state_key(s.task_id, "program"))
        assert len(versions) == len(task.reference_actions)
        assert s.state_version == s.step
        if last:
            assert s.diff_from_start == task.target_diff
    assert summary.metadata()["precision"] == 1.0


class ScriptedTeacher:
    """A scripted policy: what a model says, step by step (the only allowed test double)."""

    name = "scripted"
    model = "script"

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers

    async def respond(self, messages, task, step, state, seed) -> str:  # noqa: ANN001
        return self.answers[step - 1]


def answer(action: dict | str, update: dict | str = "{}") -> str:
    action_text = action if isinstance(action, str) else json.dumps(action)
    update_text = update if isinstance(update, str) else json.dumps(update)
    return (
        f"<think>t</think><action>{action_text}</action><state_update>{update_text}</state_update>"
    )


def test_failure_classes_and_state_kept_on_bad_update(home: Path, small_tasks) -> None:
    task = next(t for t in small_tasks["template"] if t.rules == ["eq-none-to-is"])
    good = task.reference_actions[0]
    scope = list(task.files)
    answers = [
        "I will just edit the file by hand.",  # parse
        answer({"kind": "command", "argv": ["sh", "-c", "true"]}),  # disallowed
        answer(good, {"mood": "confident"}),  # schema (unknown state field)
        # tests_fail (in the task's files: a change outside them is out_of_scope, untested)
        answer({"kind": "run", "pattern": "return None", "rewrite": "return 0", "paths": scope}),
        # undoing it restores the start tree: tests pass but nothing moved toward the target
        answer({"kind": "run", "pattern": "return 0", "rewrite": "return None", "paths": scope}),
        answer({"kind": "run", "pattern": "nothing_matches_this($A)", "rewrite": "x"}),
        answer(good, {"decisions": ["is None"]}),  # reaches the target -> 1.0
    ]
    summary = drive_actor(home, ScriptedTeacher(answers), [task], extra_steps=10)
    steps = read_steps(home, "template", task.split)
    failures = [s.failure for s in steps]
    assert failures == [
        "parse",
        "disallowed",
        "schema",
        "tests_fail",
        "wrong_change",
        "no_change",
        None,
    ]
    assert failures[:4] == ["parse", "disallowed", "schema", "tests_fail"]
    assert failures[-1] is None and steps[-1].reward == 1.0 and steps[-1].done
    assert all(s.reward == 0 for s in steps[:6]) and not any(s.verified for s in steps[:6])
    assert "mood" in steps[2].sandbox_result["message"]
    assert summary.parse_failures == 1 and summary.sandbox_failures == 1
    store = StateStore(db_path(home))
    versions = store.versions(state_key(task.id, "scripted"))
    assert len(versions) == len(steps)
    assert versions[2][1] == versions[1][1]  # the bad update left the state as it was
    assert versions[-1][1].decisions == ["is None"]


def test_crashing_actions_are_the_crash_class(home: Path, small_tasks) -> None:
    """Actions that pass the schema and the allowlist but fail in the jail: a rule ast-grep
    cannot load, a program that exits non-zero, one that overruns the action timeout."""
    task = next(t for t in small_tasks["template"] if t.rules == ["eq-none-to-is"])
    bad_rule = {"id": "x", "language": "python", "rule": {"kind": "no_such_kind"}, "fix": "y"}
    answers = [
        answer({"kind": "rule", "rule": bad_rule}),
        answer({"kind": "command", "argv": ["python", "-c", "raise SystemExit(3)"]}),
        answer({"kind": "command", "argv": ["python", "-c", "while True: pass"]}),
        answer(task.reference_actions[0]),  # the run goes on after a crash
    ]
    summary = drive_actor(
        home, ScriptedTeacher(answers), [task], extra_steps=10, action_timeout_s=2
    )
    steps = read_steps(home, "template", task.split)
    assert [s.failure for s in steps] == ["crash", "crash", "crash", None]
    assert [s.sandbox_result["status"] for s in steps] == ["failed", "failed", "timeout", "ok"]
    assert steps[1].sandbox_result["exit_code"] == 3
    assert all(s.reward == 0 and not s.verified for s in steps[:3])
    assert steps[-1].reward == 1.0 and steps[-1].done
    for s in steps:
        reward = recompute(task, s)
        assert (reward.value, reward.failure) == (s.reward, s.failure)
    assert summary.sandbox_failures == 3 and summary.parse_failures == 0


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """A private redis-server on a free port (the real one, for the Redis queue)."""
    import redis

    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("VERILEARN_REQUIRE_REDIS") == "1":
            pytest.fail("redis-server is not installed (and VERILEARN_REQUIRE_REDIS=1)")
        pytest.skip("redis-server is not installed")
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("queue", ["sqlite", "redis"])
def test_killed_run_resumes_without_losing_a_committed_step(
    home: Path, small_tasks, queue: str, request: pytest.FixtureRequest
) -> None:
    tasks = small_tasks["procedural"]
    split = tasks[0].split
    write_tasks(home, tasks)
    env = {**os.environ, "VERILEARN_HOME": str(home)}
    cmd = [sys.executable, "-m", "verilearn_assets.refactor.rollout.actor", "--home", str(home),
           "--source", "procedural", "--split", split]  # fmt: skip
    if queue == "redis":
        cmd += ["--redis-url", request.getfixturevalue("redis_url")]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    db = db_path(home)
    deadline = time.monotonic() + 120
    committed = 0
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists():
            with sqlite3.connect(db, timeout=5) as conn:
                try:
                    committed = conn.execute("SELECT COUNT(*) FROM steps").fetchone()[0]
                except sqlite3.OperationalError:
                    committed = 0
            if committed >= 3:
                break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert committed >= 3, proc.stderr.read().decode()[-2000:]
    with sqlite3.connect(db) as conn:
        before = dict(
            ((r[0], r[1]), r[2])
            for r in conn.execute("SELECT task_id, step, record FROM steps").fetchall()
        )
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    with sqlite3.connect(db) as conn:
        after = dict(
            ((r[0], r[1]), r[2])
            for r in conn.execute("SELECT task_id, step, record FROM steps").fetchall()
        )
    assert len(before) >= 3 and all(after[k] == v for k, v in before.items())
    steps = read_steps(home, "procedural", split)
    accepted = [t for t in tasks if t.status == "accepted"]  # duplicate targets are rejected
    assert len(steps) == len(after) == sum(len(t.reference_actions) for t in accepted)
    assert len({(s.task_id, s.step) for s in steps}) == len(steps)
    assert all(s.verified for s in steps)


def test_vllm_teacher_drives_a_task_end_to_end(home: Path, small_tasks, vllm_server) -> None:
    from verilearn_assets.refactor.rollout.teachers import VllmTeacher, load_actors

    task = small_tasks["template"][0]
    actor_cfg = (
        load_actors()
        .actor("tiny-local")
        .model_copy(update={"base_urls": [vllm_server.base_url], "fallback_models": []})
    )
    drive_actor(home, VllmTeacher(actor_cfg), [task], extra_steps=1)
    steps = read_steps(home, "template", task.split)
    assert [s.step for s in steps] == [1, 2]  # one reference step + one extra, then stop
    for s in steps:
        assert s.teacher == "vllm" and s.model == vllm_server.model
        assert s.model_output.raw  # what the real server said
        assert s.latency_ms > 0 and "<state>" in s.prompt
        expected = compute_reward(
            task,
            s.failure if s.failure in ("parse", "schema") else None,
            s.sandbox_result.get("status"),
            s.tests.get("status"),
            s.tree_hash,
            s.diff_from_start,
        )
        assert (expected.value, expected.failure) == (s.reward, s.failure)


def test_fallback_model_answers_when_the_first_is_not_served(
    home: Path, small_tasks, vllm_server
) -> None:
    """The actor's chain: a model the server does not serve is passed over for the next
    one, and each step records the model that answered; when no model of the chain is
    served the call fails naming each of them (no silent empty answer)."""
    from verilearn_assets.core.llm.client import VllmError
    from verilearn_assets.refactor.rollout.state import State
    from verilearn_assets.refactor.rollout.teachers import VllmTeacher, load_actors

    task = small_tasks["template"][0]
    served = {"base_urls": [vllm_server.base_url]}
    base = load_actors().actor("tiny-local").model_copy(update=served)
    chain = base.model_copy(
        update={"model": "not-served-primary", "fallback_models": [vllm_server.model]}
    )
    teacher = VllmTeacher(chain)
    drive_actor(home, teacher, [task], extra_steps=0)
    steps = read_steps(home, "template", task.split)
    assert steps and all(s.model == vllm_server.model and s.model_output.raw for s in steps)
    assert teacher.model == vllm_server.model

    nowhere = VllmTeacher(
        base.model_copy(update={"model": "not-served-a", "fallback_models": ["not-served-b"]})
    )

    async def ask() -> None:
        try:
            messages = [{"role": "user", "content": "hello"}]
            await nowhere.respond(messages, task, 1, State(), seed=0)
        finally:
            await nowhere.close()

    with pytest.raises(VllmError, match="every model failed") as failed:
        asyncio.run(ask())
    assert "not-served-a" in str(failed.value) and "not-served-b" in str(failed.value)
