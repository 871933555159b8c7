"""Teachers: who writes the `<think>/<action>/<state_update>` answer of a step.

- `program`: replays the reference actions that made the task (no model; the default);
- `vllm`: a served model through the shared client (`core/llm/client.py`: several servers,
  retries, health), with a fallback chain of models. Actors are declared in
  `configs/vllm_actors.yaml`; quantization, tensor-parallel size and device ids are
  deployment metadata.

Every vLLM prompt is fitted to the served window by the context budget (`actor_messages`:
the `<state>` block loses its oldest items first, the last result's file list is
middle-truncated last; the system prompt and the task lines are never cut). A prompt that
still does not fit, or a server 400 for length, raises `ContextOverflow` at once — never
the next fallback model, which would be sent the same prompt — and the actor records that
step with failure class `context_overflow`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Protocol

from pydantic import Field, field_validator

from verilearn_assets.core.config import StrictConfig, load_config
from verilearn_assets.core.llm.budget import (
    BudgetCounts,
    BudgetMessage,
    ContextOverflow,
    Keep,
    RenderingsSegment,
    Segment,
    TextSegment,
    keep_all,
    split_around,
)
from verilearn_assets.core.llm.client import VllmClient, VllmError
from verilearn_assets.core.llm.config import SamplingDefaults, VllmConfig
from verilearn_assets.refactor.records import RefactorTask
from verilearn_assets.refactor.state import DROP_ORDER, State, render


class Teacher(Protocol):
    name: str
    model: str

    async def respond(
        self, messages: list[dict[str, Any]], task: RefactorTask, step: int, state: State, seed: int
    ) -> str: ...


class ProgramTeacher:
    """Replays `task.reference_actions` one per step, with a short plan and state update."""

    name = "program"
    model = "program"

    async def respond(
        self, messages: list[dict[str, Any]], task: RefactorTask, step: int, state: State, seed: int
    ) -> str:
        actions = task.reference_actions
        if step > len(actions):
            action: dict[str, Any] = {"kind": "command", "argv": ["pytest", "-q"]}
            think = "Every planned rewrite is applied; I re-run the tests."
            update: dict[str, Any] = {"history": [f"step {step}: re-ran the tests"]}
        else:
            action = actions[step - 1]
            rule_id = task.rules[step - 1]
            scope = ", ".join(action.get("paths") or []) or "the whole repository"
            think = (
                f"Step {step} of {len(actions)}: one structural rewrite ({rule_id}) over "
                f"{scope} does this part of the task without touching anything else."
            )
            update = {"history": [f"step {step}: applied {rule_id} to {scope}"[:256]]}
            if step == 1:
                update["goals"] = [task.instruction[:256]]
                update["constraints"] = ["keep the repository's tests passing"]
            if step < len(actions):
                update["next_focus"] = f"apply {task.rules[step]}"
            else:
                update["next_focus"] = "check the tests and stop"
            update["decisions"] = [f"use {rule_id}"]
        return (
            f"<think>{think}</think>\n<action>{json.dumps(action)}</action>\n"
            f"<state_update>{json.dumps(update)}</state_update>"
        )


class ActorConfig(StrictConfig):
    name: str
    base_urls: list[str] = Field(min_length=1)
    model: str
    fallback_models: list[str] = Field(default_factory=list)
    quantization: str | None = None  # deployment metadata
    tensor_parallel_size: int = Field(default=1, ge=1)  # deployment metadata
    device_ids: list[int] = Field(default_factory=list)  # deployment metadata
    sampling: SamplingDefaults = Field(default_factory=SamplingDefaults)
    stop: list[str] = Field(default_factory=lambda: ["</state_update>"])

    @field_validator("device_ids")
    @classmethod
    def _devices(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value) or any(v < 0 for v in value):
            raise ValueError(f"device ids must be distinct and non-negative: {value}")
        return value

    def vllm_config(self, model: str) -> VllmConfig:
        return VllmConfig(base_urls=self.base_urls, model=model, sampling=self.sampling)


class ActorsConfig(StrictConfig):
    actors: list[ActorConfig] = Field(min_length=1)

    @field_validator("actors")
    @classmethod
    def _unique(cls, value: list[ActorConfig]) -> list[ActorConfig]:
        names = [a.name for a in value]
        if len(names) != len(set(names)):
            raise ValueError(f"duplicate actor names: {names}")
        return value

    def actor(self, name: str) -> ActorConfig:
        for actor in self.actors:
            if actor.name == name:
                return actor
        raise ValueError(f"no actor {name!r} in vllm_actors.yaml ({[a.name for a in self.actors]})")


def load_actors(directory: str | Path | None = None) -> ActorsConfig:
    return load_config("vllm_actors", ActorsConfig, directory)


KEPT_STATE = ("goals", "constraints")  # the task's contract: the budget never drops them
# `actor.last_result`'s file list: "action ok, files changed: a.py, b.py, tests passed"
_FILES_CHANGED = re.compile(r"files changed: (.+?), tests ")


def state_renderings(state: State) -> list[str]:
    """The `<state>` block, then with one more item left out each time: oldest first, in
    the deterministic compaction's order (hypotheses, open issues, decisions, history),
    never goals or constraints; each rendering says how many items it left out."""
    out = [render(state)]
    data = state.model_dump()
    dropped = 0
    for name in (n for n in DROP_ORDER if n not in KEPT_STATE):
        while data[name]:
            data[name] = data[name][1:]
            dropped += 1
            note = f"\n[context budget: {dropped} older state items omitted]"
            out.append(render(State.model_validate(data)) + note)
    return out


def actor_messages(messages: list[dict[str, Any]], state: State) -> list[BudgetMessage]:
    """An actor prompt (system + user, `prompts.render_messages`) as budget segments.

    The user message is split around the rendered `<state>` (a `state` segment) and the
    last result's file list (the newest tool output: truncated only near the end of the
    ladder); the rest is the task, kept. Other prompts (the state compactor's) are kept
    whole: they fit or overflow.
    """
    if len(messages) != 2 or [m["role"] for m in messages] != ["system", "user"]:
        return keep_all(messages)
    user = str(messages[1]["content"])
    text = render(state)
    state_seg = RenderingsSegment(state_renderings(state), "state", "state_compact")
    parts = split_around(user, text, state_seg)
    segments: list[Segment] = []
    for part in parts:
        match = _FILES_CHANGED.search(part.text) if isinstance(part, Keep) else None
        if match and match.group(1) != "none":
            files = match.group(1)
            segments += split_around(part.text, files, TextSegment(files, "tool_output"))
        else:
            segments.append(part)
    return [
        BudgetMessage("system", [Keep(str(messages[0]["content"]), "instructions")]),
        BudgetMessage("user", segments, sep=""),
    ]


class VllmTeacher:
    """One actor: its model first, then each fallback model when a server gives up."""

    name = "vllm"

    def __init__(self, actor: ActorConfig, client_overrides: dict[str, Any] | None = None) -> None:
        self.actor = actor
        self.model = actor.model
        self.overrides = client_overrides or {}
        self._clients: dict[str, VllmClient] = {}
        self.budget_counts = BudgetCounts()  # what fitting every prompt cost

    async def _client(self, model: str) -> VllmClient:
        if model not in self._clients:
            cfg = self.actor.vllm_config(model).model_copy(update=self.overrides)
            client = VllmClient(cfg)
            await client.start()
            self._clients[model] = client
        return self._clients[model]

    async def respond(
        self, messages: list[dict[str, Any]], task: RefactorTask, step: int, state: State, seed: int
    ) -> str:
        errors = []
        segments = actor_messages(messages, state)
        for model in [self.actor.model, *self.actor.fallback_models]:
            try:
                client = await self._client(model)
                result = await client.chat_budgeted(
                    segments, self.budget_counts, seed=seed, stop=self.actor.stop
                )
            except ContextOverflow:
                raise  # the prompt's length, not the server: no fallback, the step fails
            except VllmError as exc:
                errors.append(f"{model}: {exc}")
                continue
            self.model = model
            return result.text
        raise VllmError(f"actor {self.actor.name}: every model failed: {'; '.join(errors)}")

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()


class ModelChat:
    """A chat over one actor (its fallback chain too), budgeted like the actor's prompts;
    `budget_counts` are its losses."""

    def __init__(self, actor: ActorConfig) -> None:
        self.teacher = VllmTeacher(actor)
        self.budget_counts = self.teacher.budget_counts

    async def __call__(self, messages: list[dict[str, Any]]) -> str:
        return await self.teacher.respond(messages, None, 0, State(), 0)  # type: ignore[arg-type]


def model_chat(actor: ActorConfig) -> tuple[ModelChat, Any]:
    """`(chat, close)` over one actor: the state compactor's model."""
    chat = ModelChat(actor)
    return chat, chat.teacher.close
