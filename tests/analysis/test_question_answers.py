"""Strict, schema-driven answer comparison and the documented hash normalisation."""

from __future__ import annotations

import json

import pytest

from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.core.answers import (
    HASH_SIGNIFICANT_DIGITS,
    AnswerError,
    answer_hash,
    answers_match,
    explain_mismatch,
    parse_answer,
    validate_answer,
)
from verilearn_assets.core.records import AnswerSchema

NUM = AnswerSchema(kind="number", rel_tol=1e-4, abs_tol=1e-9)
TEST = AnswerSchema(
    kind="mapping",
    fields={"statistic": NUM, "p_value": AnswerSchema(kind="number", abs_tol=1e-3, rel_tol=0)},
)


def test_number_within_field_tolerance_only():
    assert answers_match(2.0, 2.0001, NUM)
    assert not answers_match(2.0, 2.01, NUM)
    # per-field tolerance: the p-value's abs_tol does not leak to the statistic
    assert answers_match(
        {"statistic": 3.0, "p_value": 0.0400}, {"statistic": 3.0, "p_value": 0.0409}, TEST
    )
    assert not answers_match(
        {"statistic": 3.0, "p_value": 0.04}, {"statistic": 3.001, "p_value": 0.04}, TEST
    )


def test_no_sign_folding():
    assert not answers_match(-0.42, 0.42, NUM)
    assert "expected -0.42" in explain_mismatch(-0.42, 0.42, NUM)


def test_scalar_never_matches_a_number_inside_a_mapping():
    assert not answers_match(3.0, {"statistic": 3.0, "p_value": 0.5}, NUM)
    assert not answers_match({"statistic": 3.0, "p_value": 0.5}, 3.0, TEST)


def test_mapping_keys_must_be_exact():
    exp = {"statistic": 3.0, "p_value": 0.5}
    assert not answers_match(exp, {"statistic": 3.0}, TEST)
    assert not answers_match(exp, {**exp, "extra": 1}, TEST)
    assert "unexpected ['extra']" in explain_mismatch(exp, {**exp, "extra": 1}, TEST)


def test_types_are_strict():
    assert not answers_match(1, True, AnswerSchema(kind="integer"))
    assert not answers_match(True, 1, AnswerSchema(kind="boolean"))
    assert not answers_match("3", 3, AnswerSchema(kind="string"))
    assert answers_match(3, 3.0, AnswerSchema(kind="integer"))
    assert not answers_match(3, 3.5, AnswerSchema(kind="integer"))
    assert answers_match("Male", " Male", AnswerSchema(kind="string"))
    assert not answers_match("Male", "male", AnswerSchema(kind="string"))


def test_unordered_lists_and_free_mappings():
    pair = AnswerSchema(kind="list", items=AnswerSchema(kind="string"), ordered=False)
    assert answers_match(["a", "b"], ["b", "a"], pair)
    assert not answers_match(["a", "b"], ["a", "a"], pair)
    ordered = AnswerSchema(kind="list", items=NUM)
    assert not answers_match([1.0, 2.0], [2.0, 1.0], ordered)
    free = AnswerSchema(kind="mapping", items=AnswerSchema(kind="boolean"))
    assert answers_match({"x": True, "y": False}, {"y": False, "x": True}, free)
    assert not answers_match({"x": True}, {"x": True, "y": False}, free)


@pytest.mark.parametrize(
    "bad, why",
    [
        (None, "null"),
        (float("nan"), "not finite"),
        (float("inf"), "not finite"),
        ([], "empty list"),
        ({}, "empty mapping"),
        ("  ", "empty string"),
    ],
)
def test_invalid_answers_are_refused(bad, why):
    schema = {
        list: AnswerSchema(kind="list"),
        dict: AnswerSchema(kind="mapping"),
        str: AnswerSchema(kind="string"),
    }.get(type(bad), NUM)
    assert why in validate_answer(bad, schema)


def test_nan_literal_in_json_is_refused():
    with pytest.raises(AnswerError, match="non-finite"):
        parse_answer('{"a": NaN}')


def test_hash_normalisation_absorbs_last_ulp_noise_only():
    x = 0.1 + 0.2  # 0.30000000000000004
    assert answer_hash(json.dumps(x), NUM) == answer_hash(json.dumps(0.3), NUM)
    assert answer_hash("-0.0", NUM) == answer_hash("0.0", NUM)
    step = 10.0 ** (1 - HASH_SIGNIFICANT_DIGITS)  # one unit in the last kept digit
    assert answer_hash(json.dumps(1.0 + 3 * step), NUM) != answer_hash("1.0", NUM)
    assert answer_hash("-0.5", NUM) != answer_hash("0.5", NUM)


def test_hash_follows_schema_and_key_order():
    integer = AnswerSchema(kind="integer")
    assert answer_hash("3.0", integer) == answer_hash("3", integer)
    pair = AnswerSchema(kind="list", items=AnswerSchema(kind="string"), ordered=False)
    assert answer_hash('["b","a"]', pair) == answer_hash('["a","b"]', pair)
    assert answer_hash('{"b":1,"a":2}') == answer_hash('{"a":2,"b":1}')
    assert answer_hash('["b","a"]') != answer_hash('["a","b"]')


def _record(**extra) -> dict:
    return {
        "id": "q1",
        "source": "template",
        "split": "train",
        "dataset": "d",
        "table": "t",
        "question": "q",
        "question_mechanical": "m",
        "answer_schema": {"kind": "number"},
        "answer": "1.0",
        "answer_hashes": ["h"],
        "code": "submit(1.0)",
        "n_steps": 1,
        "difficulty": "easy",
        **extra,
    }


@pytest.mark.parametrize("key", ["_ground_truth", "_ground_truths", "subtype"])
def test_legacy_keys_are_rejected_by_name(key):
    with pytest.raises(ValueError, match=f"legacy key .{key}"):
        QuestionRecord.model_validate(_record(**{key: "x"}))
    assert QuestionRecord.model_validate(_record()).answer == "1.0"
