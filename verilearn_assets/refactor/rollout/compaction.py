"""Model-based compaction of the agent state, with the deterministic rules as the floor.

When a merged state renders over its token budget and `state.compaction_actor` names an
actor, the model is asked for a shorter state (same keys, JSON). Its answer is kept only if
it is a valid `State` within every cap, fits the budget, and leaves `goals` and
`constraints` exactly as they were (they are the task's contract: a summary may merge
decisions, hypotheses, history and open issues, never drop what the task asked). Anything
else — no JSON, a cap broken, over budget, a goal lost, the server failing, a request that
cannot fit the model's window (`context_overflow`: the chat is budgeted by the actor's
teacher, `teachers.ModelChat`) — falls back to the deterministic compaction, and the reason
is returned, so a run never stalls on a model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from verilearn_assets.core.llm.client import VllmError
from verilearn_assets.core.llm.fit import ContextOverflow
from verilearn_assets.refactor.config import StateSettings
from verilearn_assets.refactor.rollout.state import State, compact, count_tokens, render

Chat = Callable[[list[dict[str, Any]]], Awaitable[str]]
KEPT = ("goals", "constraints")

SYSTEM = (
    "You shorten the working state of a refactoring agent. Answer with one JSON object "
    "with exactly the keys goals, constraints, decisions, hypotheses, history, open_issues "
    "(lists of short texts) and next_focus (a text). Copy goals and constraints unchanged. "
    "Merge or drop the rest so the whole state is short; keep what the next step needs."
)


def _first_json_object(text: str) -> dict[str, Any]:
    start = text.find("{")
    while start != -1:
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    raise ValueError("no JSON object in the answer")


def check_summary(original: State, answer: str, settings: StateSettings) -> State:
    """The model's state if acceptable; ValueError saying why not."""
    data = _first_json_object(re.sub(r"</?think>", " ", answer))
    try:
        state = State.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"not a state: {where}: {err['msg']}") from exc
    for name in ("goals", "constraints", "decisions", "hypotheses", "open_issues"):
        for item in getattr(state, name):
            if len(item) > settings.text_cap:
                raise ValueError(f"{name}: a text over {settings.text_cap} characters")
    if len(state.history) > settings.history_cap:
        raise ValueError(f"history: {len(state.history)} entries > {settings.history_cap}")
    for name in KEPT:
        if getattr(state, name) != getattr(original, name):
            raise ValueError(f"{name} changed")
    tokens = count_tokens(render(state))
    if tokens > settings.token_budget:
        raise ValueError(f"{tokens} tokens > budget {settings.token_budget}")
    return state


async def compact_with_model(
    state: State, settings: StateSettings, chat: Chat | None
) -> tuple[State, str]:
    """`(state within budget, how)`: how is `none` (it fitted), `model`, or
    `rules` / `rules (model answer rejected: …)`."""
    tokens = count_tokens(render(state))
    if tokens <= settings.token_budget:
        return state, "none"
    if chat is None:
        return compact(state, settings.token_budget), "rules"
    user = (
        f"The state below renders to about {tokens} tokens; the budget is "
        f"{settings.token_budget} tokens, each text at most {settings.text_cap} characters, "
        f"history at most {settings.history_cap} entries.\n"
        f"{json.dumps(state.model_dump(), indent=1)}"
    )
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    try:
        answer = await chat(messages)
        return check_summary(state, answer, settings), "model"
    except (ValueError, VllmError, ContextOverflow, TimeoutError) as exc:  # the floor, named
        why = f"{type(exc).__name__}: {exc}"[:200]
        return compact(state, settings.token_budget), f"rules (model answer rejected: {why})"
