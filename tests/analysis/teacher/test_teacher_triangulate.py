"""Triangulation: schema-driven clustering, quorum, failure classes."""

from __future__ import annotations

import pytest

from verilearn_assets.analysis.rollout.triangulate import (
    TraceOutcome,
    cluster_answers,
    triangulate,
)
from verilearn_assets.core.records import AnswerSchema

NUM = AnswerSchema(kind="number", rel_tol=1e-6)


def ans(*values: str | None, failure: str = "execution_failure") -> list[TraceOutcome]:
    return [TraceOutcome(v, None if v is not None else failure) for v in values]  # type: ignore[arg-type]


def test_answers_cluster_within_the_schema_tolerance() -> None:
    clusters, unusable = cluster_answers(ans("1.0", "1.0000000001", "2.0"), NUM)
    assert clusters == [[0, 1], [2]] and unusable == {}


def test_strict_majority_verifies_the_gold_answer() -> None:
    tri = triangulate(ans("3.5", "3.5", "4.0"), NUM)
    assert tri.verified and tri.failure_class is None
    assert tri.answer == "3.5" and tri.votes == 2 and tri.required == 2
    assert tri.in_winning_cluster(1) and not tri.in_winning_cluster(2)


def test_three_way_tie_is_ambiguous() -> None:
    tri = triangulate(ans("1", "2", "3"), NUM)
    assert not tri.verified and tri.failure_class == "ambiguous" and tri.answer is None


def test_even_split_is_a_tie_not_a_majority() -> None:
    tri = triangulate(ans("1", "1", "2", "2"), NUM)  # 2 of 4 is not a strict majority
    assert tri.required == 3
    assert not tri.verified and tri.failure_class == "ambiguous"


def test_gold_outvoted_is_disagreement() -> None:
    tri = triangulate(ans("9", "1", "1"), NUM)
    assert not tri.verified and tri.failure_class == "disagreement"
    assert tri.clusters[0] == [1, 2]


def test_largest_cluster_below_quorum_is_disagreement() -> None:
    # 5 traces: gold's cluster has 2 votes, the others are singletons; majority needs 3
    tri = triangulate(ans("1", "1", "2", "3", None), NUM)
    assert tri.required == 3 and tri.votes == 2
    assert not tri.verified and tri.failure_class == "disagreement"


def test_configurable_quorum() -> None:
    outcomes = ans("7", "7", "8")
    assert triangulate(outcomes, NUM, required_votes=2).verified
    strict = triangulate(outcomes, NUM, required_votes=3)
    assert not strict.verified and strict.failure_class == "disagreement"
    with pytest.raises(ValueError, match="quorum 4 outside 1..3"):
        triangulate(outcomes, NUM, required_votes=4)


def test_gold_crash_is_execution_failure_and_gold_timeout_is_too_hard() -> None:
    assert triangulate(ans(None, "1", "1"), NUM).failure_class == "execution_failure"
    outcomes = ans(None, "1", "1", failure="max_turns")
    assert triangulate(outcomes, NUM).failure_class == "too_hard"


def test_too_few_answers_classified_by_how_the_others_failed() -> None:
    crashed = ans("1", None, None)
    assert triangulate(crashed, NUM).failure_class == "execution_failure"
    gave_up = [
        TraceOutcome("1"),
        TraceOutcome(None, "max_turns"),
        TraceOutcome(None, "format_error"),
    ]
    assert triangulate(gave_up, NUM).failure_class == "too_hard"


def test_failed_traces_do_not_vote_but_a_majority_still_counts() -> None:
    tri = triangulate(ans("5", "5", None), NUM)
    assert tri.verified and tri.unusable == {2: "no submission (execution_failure)"}


def test_answers_that_break_the_schema_cannot_vote() -> None:
    schema = AnswerSchema(kind="mapping", fields={"a": NUM, "b": AnswerSchema(kind="string")})
    good = '{"a":1.0,"b":"x"}'
    tri = triangulate([TraceOutcome(good), TraceOutcome('{"a":1.0}'), TraceOutcome(good)], schema)
    assert tri.verified and 1 in tri.unusable
    tri = triangulate([TraceOutcome('{"a":1.0}'), TraceOutcome(good), TraceOutcome(good)], schema)
    assert not tri.verified and tri.failure_class == "too_hard"


def test_unordered_lists_cluster_regardless_of_order() -> None:
    schema = AnswerSchema(kind="list", items=AnswerSchema(kind="string"), ordered=False)
    tri = triangulate(ans('["a","b"]', '["b","a"]', '["a"]'), schema)
    assert tri.verified and tri.clusters == [[0, 1], [2]]
