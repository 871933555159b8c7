"""Dead-code rejection and canonical reduction / de-duplication."""

from __future__ import annotations

import pytest

from verilearn_assets.analysis.sources.procedural import (
    DeadCodeError,
    Program,
    ProgramError,
    Step,
    compile_program,
    dedupe,
    reduce_program,
    validate,
)

SRC = -1


def test_program_with_an_unconsumed_value_is_rejected() -> None:
    program = Program(
        (
            Step("select_numeric", (SRC,), ("a",)),
            Step("select_numeric", (SRC,), ("b",)),  # never used
            Step("mean", (0,)),
        )
    )
    with pytest.raises(DeadCodeError, match=r"step 1 \(select_numeric\)"):
        validate(program)
    with pytest.raises(DeadCodeError):
        reduce_program(program)


def test_ill_typed_program_is_rejected_with_the_step_named() -> None:
    program = Program((Step("select_numeric", (SRC,), ("a",)), Step("pearson", (0,))))
    with pytest.raises(ProgramError, match=r"step 1 \(pearson\): input 0 must be Pair"):
        validate(program)


def test_non_answer_final_value_is_rejected() -> None:
    with pytest.raises(ProgramError, match="not an answer type"):
        validate(Program((Step("select_numeric", (SRC,), ("a",)),)))


def _filtered_mean(first: tuple[str, str], second: tuple[str, str]) -> Program:
    return Program(
        (
            Step(first[0], (SRC,), (first[1],)),
            Step(second[0], (0,), (second[1],)),
            Step("select_numeric", (1,), ("y",)),
            Step("mean", (2,)),
        )
    )


def test_two_filter_orders_collapse_to_one() -> None:
    a = _filtered_mean(("filter_above_median", "x"), ("filter_key_is_mode", "g"))
    b = _filtered_mean(("filter_key_is_mode", "g"), ("filter_above_median", "x"))
    assert a.key != b.key
    out = dedupe([a, b])
    assert len(out) == 1
    assert compile_program(reduce_program(a)) == compile_program(reduce_program(b))


def test_repeated_filter_and_sort_before_mean_are_removed() -> None:
    program = Program(
        (
            Step("filter_above_mean", (SRC,), ("x",)),
            Step("filter_above_mean", (0,), ("x",)),
            Step("select_numeric", (1,), ("y",)),
            Step("sort_ascending", (2,)),
            Step("zscore", (3,)),
            Step("zscore", (4,)),
            Step("maximum", (5,)),
        )
    )
    assert reduce_program(program).ops == [
        "filter_above_mean",
        "select_numeric",
        "sort_ascending",
        "zscore",
        "maximum",
    ]
    direct = Program(
        (
            Step("filter_above_mean", (SRC,), ("x",)),
            Step("select_numeric", (0,), ("y",)),
            Step("mean", (1,)),
        )
    )
    sorted_first = Program(
        (
            Step("filter_above_mean", (SRC,), ("x",)),
            Step("select_numeric", (0,), ("y",)),
            Step("sort_ascending", (1,)),
            Step("mean", (2,)),
        )
    )
    assert len(dedupe([direct, sorted_first])) == 1


def test_symmetric_relation_collapses_but_slope_does_not() -> None:
    def rel(op: str, x: str, y: str) -> Program:
        return Program((Step("pair_columns", (SRC,), (x, y)), Step(op, (0,))))

    assert len(dedupe([rel("pearson", "a", "b"), rel("pearson", "b", "a")])) == 1
    assert len(dedupe([rel("ols_slope", "a", "b"), rel("ols_slope", "b", "a")])) == 2


def test_commutative_decision_inputs_collapse() -> None:
    def chain(first: str, second: str) -> Program:
        return Program(
            (
                Step("split_by_median", (SRC,), ("y", "x")),
                Step(first, (0,)),
                Step(second, (0,)),
                Step("choose_welch_or_mannwhitney", (1, 2)),
                Step("run_location_test", (0, 3)),
            )
        )

    assert (
        len(
            dedupe(
                [
                    chain("normal_group_a", "normal_group_b"),
                    chain("normal_group_b", "normal_group_a"),
                ]
            )
        )
        == 1
    )


def test_transforms_made_irrelevant_by_the_next_one_are_dropped() -> None:
    program = Program(
        (
            Step("select_numeric", (SRC,), ("y",)),
            Step("square", (0,)),
            Step("absolute", (1,)),
            Step("center", (2,)),
            Step("zscore", (3,)),
            Step("maximum", (4,)),
        )
    )
    assert reduce_program(program).ops == ["select_numeric", "square", "zscore", "maximum"]
