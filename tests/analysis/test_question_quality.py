"""Issue 10 quality rules on hand-made inputs: conventions, degenerate answers, chains,
readability, floors, the `questions_conventions_stated` rule and the diagnostics mart."""

from __future__ import annotations

import pandas as pd
import pytest

from verilearn_assets.analysis.quality.readability import readability, readability_deductions
from verilearn_assets.analysis.screen.config import ScreenConfig
from verilearn_assets.analysis.screen.conventions import check_conventions
from verilearn_assets.analysis.screen.degenerate import constant_reason, zero_reason
from verilearn_assets.analysis.screen.run import screen_one
from verilearn_assets.analysis.sources.candidate import AlternativeCode, Candidate
from verilearn_assets.analysis.sources.procedural.chains import chain_problem
from verilearn_assets.analysis.sources.procedural.program import SOURCE, Program, Step
from verilearn_assets.analysis.sources.template.base import NUMBER, STRING

# 'g' has a tied mode: 'a' and 'b' both appear three times; 'x' is a plain measurement
TIED = pd.DataFrame(
    {
        "g": ["a", "b", "a", "b", "a", "b", "c"],
        "x": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0],
    }
)
MODE_MEAN = (
    "m = df['g'].mode().iloc[0]\n"
    "hook(m, \"m = df['g'].mode().iloc[0]\", name='m')\n"
    "v = float(df.loc[df['g'] == m, 'x'].mean())\n"
    "hook(v, \"v = float(df.loc[df['g'] == m, 'x'].mean())\", name='v')\n"
    "submit(v)\n"
)


def one_step(expr: str) -> str:
    """A one-step reference program: `v = expr`, hooked, submitted."""
    line = f"v = {expr}"
    return f"{line}\nhook(v, {line!r}, name='v')\nsubmit(v)\n"


def cand(question: str, code: str, schema=NUMBER, alts=()) -> Candidate:
    return Candidate(
        source="template",
        template="hand",
        question=question,
        question_mechanical=question,
        answer_schema=schema,
        code=code,
        alternatives=[AlternativeCode(description=d, code=c) for d, c in alts],
        n_steps=2,
        difficulty="easy",
    )


def test_tied_mode_unstated_is_rejected():
    # mode().iloc[0] = 'a' -> mean(1, 4, 16) = 7; the other tied mode 'b' -> 14
    report = check_conventions(cand("Mean of x in the most frequent g?", MODE_MEAN), TIED)
    assert report.tried == ["mode_largest_tied:moved"]
    assert report.rejection is not None and report.rejection.startswith("tie_unstated:")
    assert "14.0" in report.rejection and "7.0" in report.rejection


def test_tied_mode_stated_or_listed_is_kept():
    stated = cand("Mean of x in the most frequent g (the smallest if tied)?", MODE_MEAN)
    assert check_conventions(stated, TIED).tried == ["mode_largest_tied:stated"]
    other = MODE_MEAN.replace("iloc[0]", "iloc[1]")
    listed = cand("Mean of x in the most frequent g?", MODE_MEAN, alts=[("other mode", other)])
    report = check_conventions(listed, TIED)
    assert report.tried == ["mode_largest_tied:alternative"] and report.rejection is None


def test_population_std_unstated_is_an_ambiguous_convention():
    code = "s = float(df['x'].std())\nhook(s, \"s = float(df['x'].std())\", name='s')\nsubmit(s)\n"
    report = check_conventions(cand("What is the spread (std) of x?", code), TIED)
    assert report.rejection is not None and report.rejection.startswith("ambiguous_convention:")
    said = cand("What is the sample standard deviation of x?", code)
    assert check_conventions(said, TIED).tried == ["std_population:stated"]


def test_answer_that_does_not_move_is_the_same():
    code = "s = float(df['x'].max())\nhook(s, \"s = float(df['x'].max())\", name='s')\nsubmit(s)\n"
    # no convention applies to a maximum: nothing tried, nothing rejected
    assert check_conventions(cand("Largest x?", code), TIED).tried == []
    label = (
        "b = str(df['x'].idxmax())\nhook(b, \"b = str(df['x'].idxmax())\", name='b')\nsubmit(b)\n"
    )
    # a unique maximum: the last-of-ties reading gives the same label
    assert check_conventions(cand("Row of largest x?", label, STRING), TIED).tried == [
        "argmax_last_tied:same"
    ]


def test_zero_and_noop_answers_are_degenerate():
    assert zero_reason(0.0).startswith("degenerate: the answer is exactly 0")
    assert zero_reason({"a": 0, "b": 0.0}) is not None
    assert "rows_removed" in zero_reason({"r_before": 0.5, "r_after": 0.5, "rows_removed": 0})
    assert zero_reason({"r": 0.5, "n": 0}) is None  # a zero that is not a no-op count
    assert zero_reason(3.25) is None and zero_reason("a") is None


def test_constant_answer_under_perturbation_is_degenerate(tmp_path):
    df = pd.DataFrame({"x": [float(i) ** 1.5 for i in range(40)], "y": list(range(40))})
    const = one_step("float(df.shape[1]) + 0.5")
    c = cand("A question about the table", const)
    reason = constant_reason(c, df, 2.5, k=3, fraction=0.8, seed=0)
    assert reason is not None and "3 perturbed tables" in reason
    varying = (
        "v = float(df['x'].mean())\nhook(v, \"v = float(df['x'].mean())\", name='v')\nsubmit(v)\n"
    )
    mean = float(df["x"].mean())
    assert constant_reason(cand("Mean x?", varying), df, mean, 3, 0.8, 0) is None
    # the older screen (metamorphic off) applies it to the sources configured (procedural)
    old = ScreenConfig(metamorphic=False)
    assert screen_one(c, df, old).rejection_reason is None
    screened = screen_one(c, df, old.model_copy(update={"perturb_sources": ["template"]}))
    assert screened.rejection_reason is not None
    assert screened.rejection_reason.startswith("degenerate:")
    # the metamorphic screen judges every source (templates included) on same-shape tables
    on = screen_one(c, df, ScreenConfig()).rejection_reason or ""
    assert on.startswith("degenerate_data_independent:")


def _prog(*steps: tuple[str, tuple[int, ...], tuple[str, ...]]) -> Program:
    return Program(tuple(Step(op, ins, cols) for op, ins, cols in steps))


@pytest.mark.parametrize(
    ("middle", "why"),
    [
        ((("cube_root", (0,), ()), ("cube_root", (1,), ())), "cube_root twice"),
        ((("zscore", (0,), ()), ("center", (1,), ())), "(center) makes step 2 (zscore)"),
        (
            (("sort_ascending", (0,), ()), ("first_difference", (1,), ())),
            "needs table order",
        ),
    ],
)
def test_meaningless_chains_are_named(middle, why):
    program = _prog(("select_numeric", (SOURCE,), ("x",)), *middle, ("mean", (2,), ()))
    problem = chain_problem(program)
    assert problem is not None and problem.startswith("meaningless_chain:") and why in problem


def test_count_of_a_transformed_series_is_meaningless_and_a_plain_chain_is_not():
    counted = _prog(
        ("select_numeric", (SOURCE,), ("x",)), ("zscore", (0,), ()), ("count_values", (1,), ())
    )
    assert "count_values" in (chain_problem(counted) or "")
    fine = _prog(("select_numeric", (SOURCE,), ("x",)), ("cube_root", (0,), ()), ("mean", (1,), ()))
    assert chain_problem(fine) is None


def test_readability_rules_explain_the_score():
    plain = "What is the median of 'x' where 'g' equals 'a'?"
    assert readability(plain) == 5.0 and readability_deductions(plain) == {}
    clunky = (
        "What is the mean of the series obtained from the values of 'x' by these steps in "
        "order: take the cube root of each value; take the cube root of each value?"
    )
    d = readability_deductions(clunky)
    # "the series obtained", "these steps", "steps in order": three phrases of code-speak
    assert d["procedure_speak"] == 1.5 and d["repetition"] == 0.5
    assert readability(clunky) == 5.0 - sum(d.values())
