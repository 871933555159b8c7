"""Refactor records: tasks (what to change) and trajectory steps (what a teacher did)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verilearn_assets.core.records import Record, Source, Split


class Difficulty(BaseModel):
    model_config = ConfigDict(extra="forbid")
    matches: int
    files_touched: int
    rule_complexity: int
    steps: int


class RefactorTask(Record):
    """One refactoring goal on one repository; the target is computed by running it."""

    id: str
    repo: str
    licence: str
    files: list[str]  # files in scope (the ones the reference run changed)
    instruction: str  # natural language, never the rule text
    target_diff: str
    target_tree: str  # hash of the workspace after the reference run
    step_trees: list[str]  # hash after each reference step (partial credit)
    test_command: list[str]
    reference_actions: list[dict[str, Any]]  # what the `program` teacher replays
    rules: list[str]
    source: Source
    split: Split
    status: str  # accepted / rejected
    reason: str = ""
    difficulty: Difficulty


class ModelOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    think: str = ""
    action: str = ""
    state_update: str = ""
    raw: str = ""


class TrajectoryStep(Record):
    """One step of one trajectory: prompt, state, model output, jail result, reward."""

    id: str
    task_id: str
    source: Source
    split: Split
    step: int
    prompt: str
    prompt_messages: list[dict[str, Any]]  # the chat the teacher saw (system + user)
    state_before: dict[str, Any]
    state_version: int
    model_output: ModelOutput
    sandbox_result: dict[str, Any]
    tests: dict[str, Any]
    diff_from_start: str
    tree_hash: str
    reward: float
    failure: str | None = None
    verified: bool
    done: bool
    teacher: str
    model: str
    seed: int
    latency_ms: float = Field(default=0.0)
