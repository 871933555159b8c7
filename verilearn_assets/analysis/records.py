"""The analysis family's records: questions with proven answers and teacher episodes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from verilearn_assets.core.records import (
    AnswerSchema,
    HookRecord,
    Record,
    Source,
    Split,
    content_hash,
)


class Alternative(BaseModel):
    """Another valid interpretation of the question and the answer it gives."""

    model_config = ConfigDict(extra="forbid")
    description: str
    code: str
    answer: str  # canonical JSON
    answer_hash: str


# --- questions --------------------------------------------------------------------
QuestionStatus = Literal["accepted", "rejected"]


class QuestionRecord(Record):
    id: str
    family: Literal["analysis"] = "analysis"
    source: Source
    split: Split
    dataset: str
    table: str  # TableRecord.id
    question: str
    question_mechanical: str
    answer_schema: AnswerSchema
    answer: str  # canonical JSON of the primary answer
    answer_hashes: list[str]
    code: str
    alternatives: list[Alternative] = Field(default_factory=list)
    n_steps: int
    difficulty: Literal["easy", "medium", "hard"]
    template: str | None = None
    program_ops: list[str] = Field(default_factory=list)
    op_families: list[str] = Field(default_factory=list)
    hooks: list[HookRecord] = Field(default_factory=list)
    status: QuestionStatus = "accepted"
    rejection_reason: str | None = None
    # convention variants re-run before verification, `name:outcome` (analysis.screen.conventions)
    conventions: list[str] = Field(default_factory=list)
    readability: float = 0.0  # rule-based, 1..5 (analysis.quality.readability)

    @staticmethod
    def make_id(source: str, dataset: str, table: str, code: str) -> str:
        return content_hash("question", source, dataset, table, code)


# --- episodes ---------------------------------------------------------------------
Role = Literal["system", "user", "assistant", "tool"]
MessageKind = Literal["prompt", "reply", "rejected_reply", "reprompt", "tool_output"]
FailureClass = Literal[
    "execution_failure",
    "ambiguous",
    "too_hard",
    "disagreement",
    "wrong_answer",
    "format_error",
    "max_turns",
    "no_submission",
    "context_overflow",  # the prompt did not fit the model's window even after compression
]


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    turn: int
    role: Role
    kind: MessageKind
    content: str


class CellRun(BaseModel):
    """One executed cell, paired with the assistant turn that wrote it and its output."""

    model_config = ConfigDict(extra="forbid")
    turn: int  # the assistant message's turn
    output_turn: int  # the tool message's turn
    code: str
    status: Literal["ok", "error", "timeout", "killed"]
    stdout: str
    stderr: str
    duration_ms: float


class Episode(Record):
    id: str
    question_id: str
    family: Literal["analysis"] = "analysis"
    source: Source
    split: Split
    dataset: str
    template: str | None = None
    teacher: str
    sampling_key: str
    role: Literal["gold", "consistency", "single"] = "single"
    messages: list[Message]
    cells: list[CellRun]
    submissions: list[str]  # canonical JSON, in order
    answer: str | None
    hooks: list[HookRecord]
    hooks_total: int
    hooks_grounded: int
    hooks_malformed: int
    verified: bool
    failure_class: FailureClass | None = None
    n_turns: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_ms: float = 0.0

    @staticmethod
    def make_id(
        question_id: str, teacher: str, sampling_key: str, role: str, index: int = 0
    ) -> str:
        return content_hash("episode", question_id, teacher, sampling_key, role, index)
