"""Prompt rendering (`configs/teacher_prompts.yaml`, `refactor:`) and answer parsing.

The actor's prompt is the system block, then one user message: the user block (task, step,
last result) followed by the state block (the `<state>` part, the rendered agent state).

An answer is `<think>…</think><action>…</action><state_update>…</state_update>`; the action
and the update are then validated against their schemas by the actor loop.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from verilearn_assets.core.config import StrictConfig, load_config
from verilearn_assets.refactor.records import ModelOutput, RefactorTask

# the user block's placeholders; the state has a block of its own (`state`)
PLACEHOLDERS = {
    "instruction",
    "repo",
    "files",
    "test_command",
    "step",
    "max_steps",
    "last_result",
}


def _placeholders(value: str, allowed: set[str], required: set[str]) -> str:
    names = {f for _, f, _, _ in string.Formatter().parse(value) if f}
    unknown = names - allowed
    if unknown:
        raise ValueError(f"unknown placeholder(s) {sorted(unknown)}")
    missing = required - names
    if missing:
        raise ValueError(f"missing placeholder(s) {sorted(missing)}")
    return value


class PromptConfig(StrictConfig):
    system: str
    user: str
    # the `<state>` part of the user message, after the user block
    state: str = "<state>\n{state}\n</state>\n"
    # llm task proposals: a refactoring in words plus a rule, then (triangulation) a rule
    # for the same words written without seeing the first one
    propose_system: str = ""
    propose_user: str = "Repository {repo}:\n{code}"
    rule_user: str = "Repository {repo}:\n{code}\nTask: {instruction}"

    @field_validator("user")
    @classmethod
    def _user(cls, value: str) -> str:
        if "state" in {f for _, f, _, _ in string.Formatter().parse(value) if f}:
            raise ValueError("{state} goes in the `state` block, which follows the user block")
        return _placeholders(value, PLACEHOLDERS, set())

    @field_validator("state")
    @classmethod
    def _state(cls, value: str) -> str:
        return _placeholders(value, {"state"}, {"state"})

    @field_validator("propose_user")
    @classmethod
    def _propose(cls, value: str) -> str:
        return _placeholders(value, {"repo", "code"}, {"code"})

    @field_validator("rule_user")
    @classmethod
    def _rule(cls, value: str) -> str:
        return _placeholders(value, {"repo", "code", "instruction"}, {"code", "instruction"})


class TeacherPrompts(BaseModel):
    """`teacher_prompts.yaml`: one section per family; each family validates its own."""

    model_config = ConfigDict(extra="ignore")
    refactor: PromptConfig


def load_prompts(directory: str | Path | None = None) -> PromptConfig:
    """The `refactor:` section of `<dir>/teacher_prompts.yaml` (errors: `refactor.<field>`)."""
    return load_config("teacher_prompts", TeacherPrompts, directory).refactor


def render_messages(
    prompts: PromptConfig,
    task: RefactorTask,
    state_text: str,
    step: int,
    max_steps: int,
    last_result: str,
) -> list[dict[str, Any]]:
    user = prompts.user.format(
        instruction=task.instruction,
        repo=task.repo,
        files=", ".join(task.files),
        test_command=" ".join(task.test_command),
        step=step,
        max_steps=max_steps,
        last_result=last_result or "(none yet)",
    )
    if not user.endswith("\n"):
        user += "\n"
    user += prompts.state.format(state=state_text)
    return [{"role": "system", "content": prompts.system}, {"role": "user", "content": user}]


def prompt_text(messages: list[dict[str, Any]]) -> str:
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)


class ParseFailure(ValueError):
    """The answer lacks the required blocks; the failure class is `parse`."""


def _block(text: str, tag: str) -> str | None:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    if match:
        return match.group(1).strip()
    # a stop sequence may have cut the last closing tag
    tail = re.search(rf"<{tag}>(.*)\Z", text, re.DOTALL)
    if tail and tag == "state_update":
        return tail.group(1).strip()
    return None


def parse_output(text: str) -> ModelOutput:
    """The three blocks (think and state_update may be empty; an action is required)."""
    action = _block(text, "action")
    if not action:
        raise ParseFailure("no <action>…</action> block in the answer")
    return ModelOutput(
        think=_block(text, "think") or "",
        action=action,
        state_update=_block(text, "state_update") or "",
        raw=text,
    )
