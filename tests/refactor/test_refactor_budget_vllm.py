"""Refactor actor prompts under the context budget, against the real vLLM server (tiny
model, `max_model_len` 2048): a prompt far over the window (a full state, a long result)
is fitted and answered, our token count equal to the server's `prompt_tokens`; a task
whose instruction alone cannot fit records each step as `context_overflow` (never the
fallback model), and the partition's other task goes on. What the model says is noise."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from refactor_support import drive_actor

from verilearn_assets.core import lake
from verilearn_assets.core.llm.fit import FAILURE_CLASS
from verilearn_assets.refactor.records import TrajectoryStep
from verilearn_assets.refactor.rewards import recompute
from verilearn_assets.refactor.rollout.prompts import load_prompts, render_messages
from verilearn_assets.refactor.rollout.state import State, render
from verilearn_assets.refactor.rollout.teachers import VllmTeacher, actor_messages, load_actors

pytestmark = pytest.mark.vllm

WINDOW = 2048


def teacher_for(vllm_server) -> VllmTeacher:  # noqa: ANN001
    actor = load_actors().actor("tiny-local")
    # a fallback model the server does not serve: reaching it would fail the test loudly
    update = {"base_urls": [vllm_server.base_url], "fallback_models": ["not-served"]}
    return VllmTeacher(actor.model_copy(update=update))


def full_state() -> State:
    note = "keep the loader's public names stable while the rewrite proceeds " * 3
    return State(
        goals=["Compare values to None with `is` instead of `==`."],
        constraints=["keep the repository's tests passing"],
        hypotheses=[f"hypothesis {i}: {note}"[:250] for i in range(8)],
        decisions=[f"decision {i}: {note}"[:250] for i in range(8)],
        open_issues=[f"issue {i}: {note}"[:250] for i in range(8)],
        history=[f"step {i}: {note}"[:250] for i in range(3)],
        next_focus="run the tests",
    )


def test_a_long_actor_prompt_is_fitted_and_counted_like_the_server(
    small_tasks, vllm_server
) -> None:
    task = small_tasks["template"][0]
    state = full_state()
    files = ", ".join(f"pathconf/generated/module_{i}.py" for i in range(150))
    last = f"action ok, files changed: {files}, tests passed"
    messages = render_messages(load_prompts(), task, render(state), 2, 3, last)
    teacher = teacher_for(vllm_server)

    async def go() -> tuple[str, int, int, int]:
        try:
            text = await teacher.respond(messages, task, 2, state, seed=1)
            client = teacher._clients[teacher.actor.model]
            budget = client.budget(teacher.actor.sampling.max_tokens)
            ours = budget.fit(actor_messages(messages, state)).prompt_tokens
            return text, ours, client.usage[-1].prompt_tokens, budget.counter.count_chat(messages)
        finally:
            await teacher.close()

    text, ours, server, unfitted = asyncio.run(go())
    assert unfitted > WINDOW and text  # far over the window, yet answered
    assert ours == server and server + teacher.actor.sampling.max_tokens <= WINDOW
    counts = teacher.budget_counts
    assert counts.requests == 1 and counts.overflows == 0
    assert counts.tokens_removed["state"] > 0


def test_an_overflowing_task_fails_its_steps_and_the_partition_goes_on(
    home: Path, small_tasks, vllm_server
) -> None:
    ok = small_tasks["template"][0]
    huge = ok.model_copy(update={"id": f"{ok.id}-huge", "instruction": "Rewrite carefully. " * 700})
    teacher = teacher_for(vllm_server)
    drive_actor(home, teacher, [huge, ok], extra_steps=0)
    steps = lake.read_records(
        "refactor/trajectories", TrajectoryStep, lake.lake_root(home), source="template",
        split=ok.split,
    )  # fmt: skip
    by_task = {t.id: [s for s in steps if s.task_id == t.id] for t in (huge, ok)}
    (failed,) = by_task[huge.id]
    assert failed.failure == FAILURE_CLASS and failed.reward == 0 and not failed.verified
    assert failed.sandbox_result["message"].startswith(f"{FAILURE_CLASS}: the prompt needs")
    assert failed.model_output.raw == "" and "Rewrite carefully." in failed.prompt  # kept whole
    reward = recompute(huge, failed)  # the gate recomputes the same verdict
    assert (reward.value, reward.failure) == (failed.reward, failed.failure)
    (went_on,) = by_task[ok.id]  # the other task was answered by the model
    assert went_on.failure != FAILURE_CLASS and went_on.model_output.raw
    assert teacher.model == teacher.actor.model  # the fallback was never tried
    counts = teacher.budget_counts
    assert counts.overflows == 1 and counts.requests == 2
