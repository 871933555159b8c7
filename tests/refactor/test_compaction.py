"""Model-based state compaction: a checked model answer, the rules as the floor."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from refactor_support import refactor_config

from verilearn_assets.core.llm.client import VllmError
from verilearn_assets.refactor.config import StateSettings
from verilearn_assets.refactor.rollout.actor import Actor, db_path, state_key
from verilearn_assets.refactor.rollout.compaction import compact_with_model
from verilearn_assets.refactor.rollout.prompts import load_prompts
from verilearn_assets.refactor.rollout.state import State, StateStore, compact, count_tokens, render
from verilearn_assets.refactor.rollout.teachers import ProgramTeacher, load_actors, model_chat
from verilearn_assets.refactor.sources.catalog import load_corpus

SETTINGS = StateSettings(token_budget=400)


def big_state() -> State:
    long = "the helper in module {0} still mixes two concerns and its callers rely on both " * 2
    return State(
        goals=["replace Optional[X] with X | None in the package"],
        constraints=["keep the repository's tests passing"],
        decisions=[long.format(f"d{i}") for i in range(8)],
        hypotheses=[long.format(f"h{i}") for i in range(8)],
        history=["step 1: scanned", "step 2: applied a rule", "step 3: ran the tests"],
        open_issues=[long.format(f"o{i}") for i in range(6)],
        next_focus="apply the rule to the remaining modules",
    )


class Scripted:
    """Stands in for what a model says: one canned answer per call (or an exception)."""

    def __init__(self, *answers: str | Exception) -> None:
        self.answers = list(answers)
        self.calls: list[list[dict]] = []

    async def __call__(self, messages: list[dict]) -> str:
        self.calls.append(messages)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def short_of(state: State, **changes: object) -> str:
    data = {**state.model_dump(), "decisions": ["keep one helper per concern"], "hypotheses": []}
    data.update({"open_issues": [], "history": state.history[-1:], **changes})
    return json.dumps(data)


def test_model_answer_is_kept_only_when_it_holds() -> None:
    big = big_state()
    assert count_tokens(render(big)) > SETTINGS.token_budget
    floor = compact(big, SETTINGS.token_budget)
    good = short_of(big)
    chat = Scripted(
        f"<think>merge the decisions</think>\nHere it is: {good}",
        short_of(big, goals=["something easier"]),
        "I cannot do that.",
        big.model_dump_json(),  # as long as before
        short_of(big, decisions=["x" * 300]),
        VllmError("server gave up"),
    )
    state, how = asyncio.run(compact_with_model(big, SETTINGS, chat))
    assert how == "model" and state == State.model_validate_json(good)
    assert str(SETTINGS.token_budget) in chat.calls[0][-1]["content"]
    reasons = []
    for _ in range(5):
        state, how = asyncio.run(compact_with_model(big, SETTINGS, chat))
        assert state == floor and how.startswith("rules (model answer rejected: ")
        reasons.append(how)
    assert "goals changed" in reasons[0] and "no JSON object" in reasons[1]
    assert "> budget 400" in reasons[2] and "decisions" in reasons[3]
    assert "server gave up" in reasons[4]
    # within budget: the model is not asked; without a model: the rules
    small = State(goals=["g"])
    assert asyncio.run(compact_with_model(small, SETTINGS, chat)) == (small, "none")
    assert len(chat.calls) == 6
    assert asyncio.run(compact_with_model(big, SETTINGS, None)) == (floor, "rules")


async def shorten(messages: list[dict]) -> str:
    """A scripted policy: reads the state it was sent and answers with a short one."""
    content = messages[-1]["content"]
    return short_of(State.model_validate_json(content[content.index("{") :]))


def _run_with_compactor(home: Path, task, compactor, close=None) -> tuple[dict, State]:  # noqa: ANN001
    config = refactor_config("bwrap", home)
    config = config.model_copy(update={"state": SETTINGS})
    actor = Actor(
        home=home,
        teacher=ProgramTeacher(),
        config=config,
        prompts=load_prompts(),
        repos={r.name: r for r in load_corpus()},
        compactor=compactor,
    )
    key = state_key(task.id, "program")

    async def run():  # noqa: ANN202
        try:
            return await actor.run([task], task.source, task.split)
        finally:
            if close is not None:
                await close()

    try:
        actor.store.save(key, big_state())  # a long-running task's state, over budget
        summary = asyncio.run(run())
    finally:
        actor.close()
    store = StateStore(db_path(home))
    try:
        return summary.metadata(), store.load(key)[0]
    finally:
        store.close()


def test_actor_compacts_with_a_model(tmp_path: Path, small_tasks, vllm_server) -> None:
    task = next(t for t in small_tasks["template"] if t.status == "accepted")
    meta, state = _run_with_compactor(tmp_path / "scripted", task, shorten)
    assert meta["compactions"] == "model=1" and meta["precision"] == 1.0
    assert state.decisions == ["keep one helper per concern"]
    assert state.goals == [*big_state().goals, task.instruction[:256]]
    assert count_tokens(render(state)) <= SETTINGS.token_budget
    # the real server (a tiny random-weight model) answers; its answer is checked, and the
    # rules take over when it does not hold
    actor_cfg = (
        load_actors()
        .actor("tiny-local")
        .model_copy(update={"base_urls": [vllm_server.base_url], "fallback_models": []})
    )
    chat, close = model_chat(actor_cfg)
    meta, state = _run_with_compactor(tmp_path / "served", task, chat, close)
    assert meta["compactions"] in ("fallback=1", "model=1"), meta
    assert count_tokens(render(state)) <= SETTINGS.token_budget
    assert state.goals[0] == big_state().goals[0]
