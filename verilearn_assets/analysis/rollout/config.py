"""`configs/teacher.yaml` (how the teacher loop runs) and the `analysis:` section of
`configs/teacher_prompts.yaml` (what the model reads), both validated strictly at load."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from verilearn_assets.core.config import (
    ConfigError,
    StrictConfig,
    config_dir,
    load_config,
    placeholders,
    read_yaml_mapping,
)
from verilearn_assets.core.records import Source, content_hash

TeacherName = Literal["program", "vllm"]

# --- prompts (teacher_prompts.yaml `analysis:`) -----------------------------------------
# The defaults are the prompts the loop has always sent, byte for byte (a test holds them
# to renders captured from the code before they moved here), so a missing `analysis:`
# section or a default one changes no episode id.
SYSTEM_RULES = """\
You are a careful data analyst working in a Python sandbox.
A pandas DataFrame `df` holds the table described below; pandas (as pd) and numpy \
(as np) are available.
Work step by step. Every reply must contain one short line of reasoning followed by \
exactly one ```python code block. The block runs as the next cell; variables persist \
between cells, and you will see its printed output, errors and the value of its last \
expression.
Record important intermediate values on the line right after the one computing them: \
`hook(value, "<that exact line of code>", name="short_name")`.
When you know the answer, call `submit(answer)` exactly once; the episode ends there.
You have at most {max_turns} cells."""
QUESTION = "Question: {question}{answer_hint}"
ANSWER_HINT = "\n\nSubmit {answer_shape}."
REPROMPT = (
    "Your last reply could not be run: {reason}. Reply with one line of reasoning "
    "and exactly one ```python code block. ({errors_left} more malformed "
    "replies end the episode.)"
)
FEW_SHOT_HEADER = "Solved examples on other tables (the same rules apply):"
FEW_SHOT_EXAMPLE = (
    "Example {n}, table {table} of dataset {dataset}:\nQuestion: {question}\n"
    "Solution:\n```python\n{code}\n```\nAnswer: {answer}"
)


class AnalysisPrompts(StrictConfig):
    """What the analysis teacher (and the student at evaluation) reads.

    `hints: on` (default) tells the model two things beyond the question: the expected
    answer's shape (kind, tolerance, dict keys, list order: the `answer_hint` line) and
    the value statistics of each column in the table overview (min/median/mean/max/std,
    top values, "identifier-like"). `hints: off` drops both; the overview keeps each
    column's name, kind, dtype, missingness and cardinality. `few_shot: N` puts N solved
    questions (question, reference code, answer) before the question, drawn from accepted
    *train*-split questions on other tables; any other split is refused (it would leak
    evaluation questions into prompts).
    """

    system: str = SYSTEM_RULES  # placeholder: {max_turns} (required)
    question: str = QUESTION  # placeholders: {question} (required), {answer_hint}
    answer_hint: str = ANSWER_HINT  # placeholder: {answer_shape} (required)
    reprompt: str = REPROMPT  # placeholders: {reason} (required), {errors_left}
    hints: bool = True
    few_shot: int = Field(default=0, ge=0)
    few_shot_split: str = "train"
    few_shot_sources: list[Source] = Field(default_factory=lambda: ["template", "procedural"])
    few_shot_seed: int = 0
    few_shot_header: str = FEW_SHOT_HEADER
    # placeholders: {n} {table} {dataset} {question} {code} {answer}
    few_shot_example: str = FEW_SHOT_EXAMPLE

    @field_validator("system")
    @classmethod
    def _system(cls, value: str) -> str:
        return placeholders(value, {"max_turns"}, {"max_turns"})

    @field_validator("question")
    @classmethod
    def _question(cls, value: str) -> str:
        return placeholders(value, {"question", "answer_hint"}, {"question"})

    @field_validator("answer_hint")
    @classmethod
    def _answer_hint(cls, value: str) -> str:
        return placeholders(value, {"answer_shape"}, {"answer_shape"})

    @field_validator("reprompt")
    @classmethod
    def _reprompt(cls, value: str) -> str:
        return placeholders(value, {"reason", "errors_left"}, {"reason"})

    @field_validator("few_shot_header")
    @classmethod
    def _header(cls, value: str) -> str:
        return placeholders(value, set(), set())

    @field_validator("few_shot_example")
    @classmethod
    def _example(cls, value: str) -> str:
        allowed = {"n", "table", "dataset", "question", "code", "answer"}
        return placeholders(value, allowed, {"question", "code"})

    @field_validator("few_shot_split")
    @classmethod
    def _train_only(cls, value: str) -> str:
        if value != "train":
            raise ValueError(
                f"few-shot examples come from the train split only, not {value!r} "
                "(examples from dev/test would leak evaluation questions into prompts)"
            )
        return value


class _PromptsFile(BaseModel):
    """`teacher_prompts.yaml`: one section per family; this loader validates `analysis:`."""

    model_config = ConfigDict(extra="ignore")  # other families validate their own sections
    analysis: AnalysisPrompts = Field(default_factory=AnalysisPrompts)


def load_analysis_prompts(directory: str | Path | None = None) -> AnalysisPrompts:
    """The `analysis:` section of `<dir>/teacher_prompts.yaml` (errors: `analysis.<field>`);
    no section means the default prompts."""
    return load_config("teacher_prompts", _PromptsFile, directory).analysis


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
    # from teacher_prompts.yaml `analysis:` (load_teacher_config), never from teacher.yaml
    prompts: AnalysisPrompts = Field(default_factory=AnalysisPrompts)

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
            key = content_hash("sampling", "program", None, None, None)
        else:
            key = content_hash("sampling", teacher, self.model, self.sampling.params(), self.seed)
        if self.prompts != AnalysisPrompts():
            # another prompt is another trace: a prompt variant (an experiment arm) must
            # not be skipped as done because the default prompt's episodes exist
            key = content_hash("sampling-prompts", key, self.prompts.model_dump())
        return key


def load_teacher_config(directory: str | Path | None = None) -> TeacherConfig:
    """`teacher.yaml` with the prompts of `teacher_prompts.yaml`'s `analysis:` section."""
    path = Path(directory or config_dir()) / "teacher.yaml"
    if path.is_file() and "prompts" in read_yaml_mapping(path):
        raise ConfigError(
            f"{path}: field 'prompts': the analysis prompts are configured in "
            "teacher_prompts.yaml (section analysis:), not here"
        )
    cfg = load_config("teacher", TeacherConfig, directory)
    return cfg.model_copy(update={"prompts": load_analysis_prompts(directory)})
