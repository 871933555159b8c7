"""`configs/teacher.yaml`: how the teacher loop runs, validated strictly at load."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from verilearn_assets.core.config import StrictConfig, load_config
from verilearn_assets.core.records import content_hash

TeacherName = Literal["program", "vllm"]


class SamplingConfig(StrictConfig):
    """Sampling parameters sent to the model; part of the episode's sampling key."""

    temperature: float = Field(default=0.7, ge=0.0)
    top_p: float = Field(default=0.95, gt=0.0, le=1.0)
    max_tokens: int = Field(default=1024, ge=1)

    def params(self) -> dict[str, float | int]:
        return self.model_dump()


class TeacherConfig(StrictConfig):
    """Loop bounds, triangulation and sampling. `teacher: program` needs no model at all."""

    teacher: TeacherName = "program"
    model: str | None = None  # model name for the sampling key; None = whatever serves it
    max_turns: int = Field(default=12, ge=1)  # executed replies; the last one still runs
    max_format_errors: int = Field(default=3, ge=0)  # rejected replies before giving up
    tool_output_chars: int = Field(default=4000, ge=200)  # cap for one tool message
    cell_timeout_s: float | None = Field(default=None, gt=0)  # None = sandbox default
    consistency_traces: int = Field(default=2, ge=0)  # K, beside the gold trace
    quorum: int | None = Field(default=None, ge=1)  # None = strict majority of 1 + K
    seed: int = 0
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    max_proposals: int = Field(default=5, ge=1)  # llm question proposals per table
    concurrency: int = Field(default=4, ge=1)  # episodes in flight at once

    @model_validator(mode="after")
    def _quorum_reachable(self) -> TeacherConfig:
        if self.quorum is not None and self.quorum > self.n_traces:
            raise ValueError(
                f"quorum {self.quorum} exceeds the {self.n_traces} traces "
                f"(1 gold + {self.consistency_traces} consistency)"
            )
        return self

    @property
    def n_traces(self) -> int:
        return 1 + self.consistency_traces

    @property
    def required_votes(self) -> int:
        """Votes the winning answer needs: the configured quorum or a strict majority."""
        return self.quorum if self.quorum is not None else self.n_traces // 2 + 1

    def sampling_key(self, teacher: str | None = None) -> str:
        """Content hash of what decides a trace: teacher, model, sampling params, seed.

        Consistency traces derive their seeds from `seed` and are told apart by the
        episode index, so one key covers a whole triangulation.
        """
        teacher = teacher or self.teacher
        if teacher == "program":  # deterministic replay: model and sampling do not apply
            return content_hash("sampling", "program", None, None, None)
        return content_hash("sampling", teacher, self.model, self.sampling.params(), self.seed)


def load_teacher_config(directory: str | Path | None = None) -> TeacherConfig:
    return load_config("teacher", TeacherConfig, directory)
