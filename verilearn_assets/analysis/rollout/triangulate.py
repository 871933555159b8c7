"""Triangulation: an `llm` question's answer is trusted only when independent traces agree.

A gold trace and K consistency traces each submit (or fail to). Answers are clustered
with the schema-driven comparison; the largest cluster must reach the quorum (a strict
majority by default) and contain the gold answer. Otherwise the failure class says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from verilearn_assets.analysis.records import FailureClass
from verilearn_assets.core.answers import answers_match, parse_answer, validate_answer
from verilearn_assets.core.records import AnswerSchema


@dataclass(frozen=True)
class TraceOutcome:
    """What one trace produced: its final answer (canonical JSON) or why it has none."""

    answer: str | None
    failure_class: FailureClass | None = None


@dataclass(frozen=True)
class Triangulation:
    verified: bool
    failure_class: FailureClass | None
    answer: str | None  # the gold answer when verified
    clusters: list[list[int]]  # trace indices per answer cluster, largest first
    votes: int  # size of the largest cluster
    required: int
    unusable: dict[int, str] = field(default_factory=dict)  # trace index -> why no vote

    def in_winning_cluster(self, index: int) -> bool:
        return self.verified and bool(self.clusters) and index in self.clusters[0]


def _same(a: object, b: object, schema: AnswerSchema) -> bool:
    # Required both ways so clustering does not depend on which answer came first.
    return answers_match(a, b, schema) and answers_match(b, a, schema)


def cluster_answers(
    outcomes: Sequence[TraceOutcome],
    schema: AnswerSchema,
) -> tuple[list[list[int]], dict[int, str]]:
    """Group traces whose answers match under `schema`; say why the others cannot vote."""
    reps: list[object] = []
    clusters: list[list[int]] = []
    unusable: dict[int, str] = {}
    for i, outcome in enumerate(outcomes):
        if outcome.answer is None:
            unusable[i] = f"no submission ({outcome.failure_class or 'unknown'})"
            continue
        value = parse_answer(outcome.answer)
        problem = validate_answer(value, schema)
        if problem:
            unusable[i] = f"answer does not fit the schema: {problem}"
            continue
        for c, rep in enumerate(reps):
            if _same(rep, value, schema):
                clusters[c].append(i)
                break
        else:
            reps.append(value)
            clusters.append([i])
    clusters.sort(key=lambda c: (-len(c), c[0]))
    return clusters, unusable


def _failed_class(outcomes: Sequence[TraceOutcome], indices: Sequence[int]) -> FailureClass:
    """Context overflow when most failing traces did not fit the model's window (a
    property of the item and the window, not of the question's difficulty); else execution
    failure when most of them crashed; else too hard."""
    overflowed = sum(outcomes[i].failure_class == "context_overflow" for i in indices)
    if 2 * overflowed >= len(indices) and overflowed:
        return "context_overflow"  # type: ignore[return-value]  # see records.FailureClass
    crashed = sum(outcomes[i].failure_class == "execution_failure" for i in indices)
    return "execution_failure" if 2 * crashed >= len(indices) and crashed else "too_hard"


def triangulate(
    outcomes: Sequence[TraceOutcome],
    schema: AnswerSchema,
    required_votes: int | None = None,
    gold: int = 0,
) -> Triangulation:
    """Decide an answer from traces (`outcomes[gold]` is the gold trace).

    Failure classes, first match wins: the gold trace has no usable answer →
    `context_overflow` if it did not fit the window, `execution_failure` if it crashed,
    else `too_hard`; fewer usable answers than the
    quorum → the same split over the failing traces; two or more largest clusters of equal
    size → `ambiguous`; the largest cluster is below the quorum or lacks the gold answer →
    `disagreement`.
    """
    if not outcomes:
        raise ValueError("triangulate: no traces")
    required = required_votes if required_votes is not None else len(outcomes) // 2 + 1
    if not 1 <= required <= len(outcomes):
        raise ValueError(f"triangulate: quorum {required} outside 1..{len(outcomes)}")
    clusters, unusable = cluster_answers(outcomes, schema)
    votes = len(clusters[0]) if clusters else 0

    def result(failure: FailureClass | None) -> Triangulation:
        answer = outcomes[gold].answer if failure is None else None
        return Triangulation(failure is None, failure, answer, clusters, votes, required, unusable)

    if gold in unusable:
        return result(_failed_class(outcomes, [gold]))
    answered = len(outcomes) - len(unusable)
    if answered < required:
        return result(_failed_class(outcomes, sorted(unusable)))
    if len(clusters) > 1 and len(clusters[1]) == votes:
        return result("ambiguous")
    if votes < required or gold not in clusters[0]:
        return result("disagreement")
    return result(None)
