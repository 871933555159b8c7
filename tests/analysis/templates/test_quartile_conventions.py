"""Quartile methods as named conventions (issue 24): pandas' linear interpolation is one
of several ways to take "the quartiles"; an answer that moves under Tukey's hinges, type 6
or type 5 must be stated in the wording, or the question is turned away."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from known_answer import build
from test_template_conventions import hand

from verilearn_assets.analysis.screen.conventions import BY_NAME, QUANTILE_STATED, check_conventions
from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.procedural.dryrun import run_in_process
from verilearn_assets.analysis.sources.procedural.operators import OPERATORS
from verilearn_assets.analysis.sources.procedural.wording import NOUNS

QUARTILE_CONVENTIONS = ("quartiles_tukey_hinges", "quartiles_type6", "quartiles_type5")
SEVEN = pd.DataFrame({"x": [1.0, 2, 3, 4, 5, 6, 7]})


def _iqr(question: str) -> Candidate:
    """The first quartile of 'x' (pandas: linear interpolation) under `question`."""
    return hand(question, "df['x'].quantile(0.25)")


@pytest.mark.parametrize(
    "name, q1",
    [("quartiles_tukey_hinges", 2.5), ("quartiles_type6", 2.0), ("quartiles_type5", 2.25)],
)
def test_each_method_gives_its_textbook_first_quartile(name, q1):
    # n = 7: hinges = median(1, 2, 3, 4); type 6 at (n + 1) p = 2; type 5 at n p + 0.5 = 2.25
    assert run_in_process(BY_NAME[name].rewrite(_iqr("Q1?").code), SEVEN) == q1
    assert run_in_process(_iqr("Q1?").code, SEVEN) == 2.5  # pandas: 1 + (n - 1) p = 2.5


def test_a_silent_quartile_question_is_turned_away_and_a_stated_one_kept():
    silent = check_conventions(_iqr("What is the first quartile of 'x'?"), SEVEN)
    assert silent.rejection and "quartiles_type6" in silent.rejection
    assert "quartiles_type6:moved" in silent.tried and "quartiles_type5:moved" in silent.tried
    stated = check_conventions(
        _iqr("What is the first quartile of 'x', by linear interpolation?"), SEVEN
    )
    assert stated.rejection is None
    assert {f"{n}:stated" for n in ("quartiles_type6", "quartiles_type5")} <= set(stated.tried)


def test_dataframe_quantiles_are_rewritten_too():
    line = "lo = df[['x', 'y']].quantile(0.25)"
    code = f"{line}\nhook(lo, {line!r}, name='lo')\nsubmit(float(lo['y']))\n"
    frame = SEVEN.assign(y=SEVEN["x"] * 10)
    assert run_in_process(code, frame) == 25.0
    assert run_in_process(BY_NAME["quartiles_type6"].rewrite(code), frame) == 20.0


# 1..12 and 20.5: upper fence 19 by linear interpolation (Q1 4, Q3 10) but 21 by type 6
# (Q1 3.5, Q3 10.5), so 20.5 is an outlier under one method and not the other
FENCE = pd.DataFrame({"x": [1.0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 20.5]})


@pytest.mark.parametrize("name", ["iqr_outlier_count", "range_and_iqr", "iqr_trimmed_mean_shift"])
def test_template_quartile_wordings_state_the_method(tmp_path, name):
    """The cheat: the same code under a wording that names no method. It moves and is
    turned away; the shipped wording states linear interpolation and passes."""
    c = build(name, FENCE, tmp_path)
    assert check_conventions(c, FENCE).rejection is None
    silent = re.sub(
        r",? with the quartiles by linear interpolation|\(quartiles by linear "
        r"interpolation\) ",
        "",
        c.question,
    )
    assert silent != c.question
    report = check_conventions(c.model_copy(update={"question": silent}), FENCE)
    assert report.rejection and "quartiles_" in report.rejection, report.tried


def test_every_operator_that_takes_quantiles_states_linear_interpolation():
    uses = [s for s in OPERATORS if ".quantile(" in s.code]
    assert uses, "no operator takes quantiles: the test checks nothing"
    for spec in uses:
        words = " ".join([spec.phrase, NOUNS.get(spec.name, "")]).lower()
        assert any(p in words for p in QUANTILE_STATED), f"{spec.name}: {spec.phrase!r}"
        if spec.name in NOUNS:
            assert any(p in NOUNS[spec.name] for p in QUANTILE_STATED), spec.name
