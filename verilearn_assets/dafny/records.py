"""The Dafny family's records: corpus examples, tasks (writer/annotator) and trajectories."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from verilearn_assets.core.records import Record, Source, Split, content_hash

Role = Literal["writer", "annotator"]
CONSTRUCTS = (
    "loops",
    "recursion",
    "arrays",
    "sequences",
    "sets",
    "maps",
    "lemmas",
    "classes",
    "datatypes",
)


class DafnyExample(Record):
    """One method of a verified program, cut into what the two roles see and produce.

    `prefix` + `spec` + `annotated_body` + `suffix` is the gold program (comments removed);
    `header` is `prefix` + `suffix`, everything the body may use.
    """

    id: str
    name: str  # <file stem>.<method>
    program: str  # group key: methods of one program never span two splits
    origin: Literal["bundled", "dafnybench", "plain", "llm"]
    corpus: str = ""  # the catalog `programs:` entry it was loaded from ("" if none)
    dialect: Literal["2", "4"]
    rewrites: list[str] = Field(default_factory=list)  # Dafny 4 → 2.3 rewrites applied
    prefix: str
    suffix: str
    spec: str
    body: str  # without proof hints
    annotated_body: str
    constructs: list[str] = Field(default_factory=list)
    n_lines: int
    n_hints: int

    @property
    def header(self) -> str:
        return (self.prefix.rstrip() + "\n\n" + self.suffix.lstrip()).strip() + "\n"

    def assemble(self, body: str) -> str:
        return self.prefix + self.spec + body + self.suffix

    @property
    def gold_program(self) -> str:
        return self.assemble(self.annotated_body)

    @staticmethod
    def make_id(prefix: str, spec: str, annotated_body: str, suffix: str) -> str:
        return content_hash("dafny-example", prefix, spec, annotated_body, suffix)


class DafnyTask(Record):
    """A writer or annotator task. Procedural tasks are annotator repairs of a mutant."""

    id: str
    source: Source
    split: Split
    status: Literal["accepted", "rejected"]
    rejection_reason: str | None = None
    role: Role
    example_id: str
    name: str
    program: str
    constructs: list[str] = Field(default_factory=list)
    n_lines: int
    prefix: str
    suffix: str
    spec: str
    body: str  # the writer's target / the annotator's input (for repairs: the mutant body)
    target: str  # what the role must produce (body or annotated body)
    annotated_body: str  # the gold annotated body (the cascade's annotator target)
    gold_program: str
    gold_status: str
    gold_ms: float = 0.0
    input_program: str  # the program the role is shown (hint-free, or the mutant)
    input_status: str | None = None  # the verdict of `input_program`
    easy: bool = False  # annotator: already verifies without hints
    mutation: str | None = None  # procedural: e.g. "drop_invariant@3"
    verifier: dict[str, str] = Field(default_factory=dict)
    dialect: str = "2"
    rewrites: list[str] = Field(default_factory=list)

    def assemble(self, body: str) -> str:
        return self.prefix + self.spec + body + self.suffix

    @staticmethod
    def make_id(source: str, role: str, example_id: str, variant: str = "") -> str:
        return content_hash("dafny-task", source, role, example_id, variant)


class StageRecord(Record):
    """One stage of a cascade: writer, annotator or verifier."""

    stage: str
    input: str
    output: str
    status: str | None = None  # the verifier's verdict, for the verifier stage
    failure_bucket: str | None = None
    latency_ms: float = 0.0


class DafnyTrajectory(Record):
    id: str
    source: Source
    split: Split
    verified: bool
    task_id: str
    role: Role
    teacher: str
    status: str  # verifier status, or "cheat"
    failure_bucket: str | None = None  # syntax, timeout, semantic, cheat
    cheats: list[str] = Field(default_factory=list)
    errors: list[dict[str, Any]] = Field(default_factory=list)
    stages: list[dict[str, Any]] = Field(default_factory=list)
    writer_output: str | None = None
    annotator_output: str
    final_program: str
    reward: float
    partial_reward: float
    latency_ms: float  # the whole cascade
    writer_ms: float = 0.0  # stage latencies (the verifier stage includes anti-cheat)
    annotator_ms: float = 0.0
    verify_stage_ms: float = 0.0
    verifier_ms: float  # the verifier's own time (0 on a cache hit)
    cached: bool = False
    constructs: list[str] = Field(default_factory=list)
    # what the prompts need, copied from the task so SFT rows come from trajectories alone
    name: str
    mutation: str | None = None
    prefix: str
    suffix: str
    spec: str
    body: str  # the task's input body (the annotator's input for annotator tasks)

    @staticmethod
    def make_id(task_id: str, teacher: str, sample: int = 0) -> str:
        return content_hash("dafny-trajectory", task_id, teacher, sample)
