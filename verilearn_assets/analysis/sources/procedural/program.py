"""Programs as expression DAGs (`Node`) and as straight-line step lists (`Program`).

A `Node` is a hashable expression: equal sub-expressions are equal values, which is what
common-subexpression elimination and de-duplication rest on. A `Program` is the same DAG
laid out as numbered steps in a canonical order, which is what gets compiled.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from verilearn_assets.analysis.sources.procedural.operators import BY_NAME
from verilearn_assets.analysis.sources.procedural.types import ANSWER_TYPES, TABLE, VType
from verilearn_assets.core.records import content_hash

SOURCE = -1  # input index meaning "the table `df`"


class ProgramError(ValueError):
    """A program is ill-typed, malformed, or computes a value that nothing consumes."""


class DeadCodeError(ProgramError):
    """A step's value is never consumed by a later step and is not the answer."""


@dataclass(frozen=True)
class Node:
    """One operator applied to argument nodes (`None` is the source table) and columns."""

    op: str
    args: tuple[Node | None, ...] = ()
    cols: tuple[str, ...] = ()

    @cached_property
    def key(self) -> str:
        """Structural hash: equal for structurally equal expressions."""
        return content_hash(
            "node", self.op, [a.key if a else "df" for a in self.args], list(self.cols)
        )

    @cached_property
    def size(self) -> int:
        """Number of distinct operator applications in this DAG."""
        return len(_collect(self))

    def walk(self) -> list[Node]:
        """Distinct nodes of the DAG, inputs before their consumers."""
        return _collect(self)


def _collect(root: Node) -> list[Node]:
    seen: dict[str, Node] = {}

    def visit(n: Node) -> None:
        if n.key in seen:
            return
        for a in n.args:
            if a is not None:
                visit(a)
        seen[n.key] = n

    visit(root)
    return list(seen.values())


@dataclass(frozen=True)
class Step:
    op: str
    inputs: tuple[int, ...]  # earlier step indexes, or SOURCE
    cols: tuple[str, ...] = ()


@dataclass(frozen=True)
class Program:
    """Straight-line program: the last step's value is the answer."""

    steps: tuple[Step, ...]

    @property
    def key(self) -> str:
        return content_hash("program", [[s.op, list(s.inputs), list(s.cols)] for s in self.steps])

    @property
    def ops(self) -> list[str]:
        return [s.op for s in self.steps]

    @property
    def families(self) -> list[str]:
        return list(dict.fromkeys(BY_NAME[s.op].family for s in self.steps))

    @property
    def output_type(self) -> VType:
        return BY_NAME[self.steps[-1].op].output


def linearize(root: Node) -> Program:
    """Lay the DAG out as steps (shared sub-expressions computed once)."""
    index: dict[str, int] = {}
    steps: list[Step] = []
    for node in root.walk():
        inputs = tuple(SOURCE if a is None else index[a.key] for a in node.args)
        index[node.key] = len(steps)
        steps.append(Step(node.op, inputs, node.cols))
    return Program(tuple(steps))


def to_tree(program: Program) -> Node:
    """The expression DAG a (validated) program computes."""
    nodes: list[Node] = []
    for step in program.steps:
        args = tuple(None if i == SOURCE else nodes[i] for i in step.inputs)
        nodes.append(Node(step.op, args, step.cols))
    return nodes[-1]


def validate(program: Program) -> None:
    """Raise `ProgramError` unless every step is well typed and every value is consumed."""
    if not program.steps:
        raise ProgramError("program has no steps")
    consumed = [False] * len(program.steps)
    for i, step in enumerate(program.steps):
        spec = BY_NAME.get(step.op)
        if spec is None:
            raise ProgramError(f"step {i}: unknown operator {step.op!r}")
        if len(step.inputs) != len(spec.inputs):
            raise ProgramError(
                f"step {i} ({step.op}): expects {len(spec.inputs)} inputs, got {len(step.inputs)}"
            )
        if len(step.cols) != len(spec.slots):
            raise ProgramError(
                f"step {i} ({step.op}): expects {len(spec.slots)} columns, got {len(step.cols)}"
            )
        for pos, (ref, want) in enumerate(zip(step.inputs, spec.inputs, strict=True)):
            if ref == SOURCE:
                got = TABLE
            elif 0 <= ref < i:
                got = BY_NAME[program.steps[ref].op].output
                consumed[ref] = True
            else:
                raise ProgramError(
                    f"step {i} ({step.op}): input {pos} refers to step {ref}, "
                    f"which is not an earlier step"
                )
            if got != want:
                raise ProgramError(f"step {i} ({step.op}): input {pos} must be {want}, got {got}")
        if spec.distinct_inputs and len(set(step.inputs)) != len(step.inputs):
            raise ProgramError(f"step {i} ({step.op}): inputs must be distinct values")
    dead = [i for i, used in enumerate(consumed[:-1]) if not used]
    if dead:
        names = ", ".join(f"step {i} ({program.steps[i].op})" for i in dead)
        raise DeadCodeError(f"dead code: {names} computes a value nothing consumes")
    if program.output_type not in ANSWER_TYPES:
        raise ProgramError(
            f"final step ({program.steps[-1].op}) yields "
            f"{program.output_type}, which is not an answer type"
        )
