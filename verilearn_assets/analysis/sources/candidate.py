"""A question candidate: what a generator proposes before verification decides on it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from verilearn_assets.core.records import AnswerSchema, Source


class AlternativeCode(BaseModel):
    """Another valid reading of the question, as code whose answer is also accepted."""

    model_config = ConfigDict(extra="forbid")
    description: str
    code: str


class Candidate(BaseModel):
    """Generated question with its reference program (uses `df`, `hook(...)`, `submit(...)`)."""

    model_config = ConfigDict(extra="forbid")
    source: Source
    template: str | None = None
    program_ops: list[str] = Field(default_factory=list)
    op_families: list[str] = Field(default_factory=list)
    question: str
    question_mechanical: str
    answer_schema: AnswerSchema
    code: str
    alternatives: list[AlternativeCode] = Field(default_factory=list)
    n_steps: int
    difficulty: Literal["easy", "medium", "hard"]
    # filled by `analysis.screen.run`: each convention variant tried, as `name:outcome`, and
    # why the screen turned the candidate away before verification (None: it passed)
    conventions: list[str] = Field(default_factory=list)
    rejection_reason: str | None = None
