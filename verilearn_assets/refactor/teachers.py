"""Teachers: who writes the `<think>/<action>/<state_update>` answer of a step.

- `program`: replays the reference actions that made the task (no model; the default);
- `vllm`: a served model through the shared client (`core/llm/client.py`: several servers,
  retries, health), with a fallback chain of models. Actors are declared in
  `configs/vllm_actors.yaml`; quantization, tensor-parallel size and device ids are
  deployment metadata.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from pydantic import Field, field_validator

from verilearn_assets.core.config import StrictConfig, load_config
from verilearn_assets.core.llm.client import VllmClient, VllmError
from verilearn_assets.core.llm.config import SamplingDefaults, VllmConfig
from verilearn_assets.refactor.records import RefactorTask
from verilearn_assets.refactor.state import State


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


class VllmTeacher:
    """One actor: its model first, then each fallback model when a server gives up."""

    name = "vllm"

    def __init__(self, actor: ActorConfig, client_overrides: dict[str, Any] | None = None) -> None:
        self.actor = actor
        self.model = actor.model
        self.overrides = client_overrides or {}
        self._clients: dict[str, VllmClient] = {}

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
        for model in [self.actor.model, *self.actor.fallback_models]:
            try:
                client = await self._client(model)
                result = await client.chat(messages, seed=seed, stop=self.actor.stop)
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


def model_chat(actor: ActorConfig) -> tuple[Any, Any]:
    """`(chat, close)` over one actor (its fallback chain too): the state compactor's model."""
    teacher = VllmTeacher(actor)

    async def chat(messages: list[dict[str, Any]]) -> str:
        return await teacher.respond(messages, None, 0, State(), 0)  # type: ignore[arg-type]

    return chat, teacher.close
