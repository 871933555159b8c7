"""The grammar pass over assembled wording (issue 24): no stacked parentheticals, no
"What is how many", exactly one question mark; decision questions offer only what their
rule can choose. Applied to template wording (a bad sentence is a template bug) and to
procedural wording (repaired where mechanical, else refused)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from question_helpers import make_table

from verilearn_assets.analysis.sources.procedural import Program, ProgramSearchConfig, Step
from verilearn_assets.analysis.sources.procedural.operators import BY_NAME
from verilearn_assets.analysis.sources.procedural.search import search_programs
from verilearn_assets.analysis.sources.procedural.wording import (
    decision_options,
    grammar_problems,
    natural_question,
    tidy,
)
from verilearn_assets.analysis.sources.template.base import NUMBER, ReferenceCode, candidate

SRC = -1


@pytest.mark.parametrize(
    "text, problem",
    [
        ("What is the mode (the smallest one if tied) (the smallest one if tied)?", "stacked"),
        ("What is how many of the values are above 3?", "framed around a question"),
        ("Which column is it? And which value?", "2 question marks"),
        ("Report the mean.", "0 question marks"),
        ("What is the the mean?", "doubled word"),
    ],
)
def test_each_rule_names_its_problem(text, problem):
    assert any(problem in p for p in grammar_problems(text)), grammar_problems(text)


def test_names_are_data_not_wording():
    assert grammar_problems("Which value of 'Survived?' is most common in \"a a\"?") == []


def test_tidy_repairs_the_mechanical_problems():
    text = (
        'What is how many of the values of "a" where "k" equals its most frequent value '
        "(the smallest one if several tie) (the smallest one if tied)? Answer with an integer."
    )
    fixed = tidy(text)
    assert fixed.startswith('How many of the values of "a"')
    assert "(each time the smallest one if several tie)?" in fixed
    assert grammar_problems(fixed) == []
    assert tidy("What is x (a) (b)?") == "What is x (a; b)?"


def test_a_template_with_a_bad_wording_fails_loudly():
    p = ReferenceCode()
    p.step("v = 1.0", "v")
    with pytest.raises(ValueError, match="question marks"):
        candidate("t", "f", "easy", "Report the mean of 'x'.", "m", NUMBER, p, p.submit("v"))


def test_a_count_is_asked_as_how_many():
    program = Program((Step("select_numeric", (SRC,), ("a",)), Step("count_above_mean", (0,))))
    question = natural_question(program, 4)
    assert question.startswith('How many of the non-missing values of "a"'), question
    assert grammar_problems(question) == []


@pytest.mark.parametrize(
    "decision, offered, never",
    [
        ("choose_welch_or_mannwhitney", ["'welch'", "'mannwhitney'"], "'student'"),
        ("choose_student_or_welch", ["'student'", "'welch'"], "'mannwhitney'"),
    ],
)
def test_a_decision_question_offers_only_what_its_rule_can_choose(decision, offered, never):
    evidence = (
        [Step("normal_group_a", (0,)), Step("normal_group_b", (0,))]
        if BY_NAME[decision].inputs[0].param == "normality"
        else [Step("equal_variance", (0,))]
    )
    steps = [Step("split_by_median", (SRC,), ("a", "b")), *evidence]
    program = Program((*steps, Step(decision, tuple(range(1, len(steps))))))
    question = natural_question(program, 4)
    assert all(o in question for o in offered) and never not in question, question
    assert grammar_problems(question) == []


def test_every_decision_rule_offers_exactly_its_own_outcomes():
    for spec in (s for s in BY_NAME.values() if s.family == "decision"):
        opts = decision_options(spec.name)
        assert len(opts) >= 2, spec.name
        assert all(f"'{o}'" in spec.code for o in opts)


def test_searched_procedural_wordings_pass_the_grammar_pass(tmp_path):
    """Hundreds of searched programs (profile only, no dry run): each wording is clean,
    and no question offers an option its own rule never picks."""
    rng = np.random.default_rng(2)
    n = 50
    frame = pd.DataFrame(
        {
            "a": rng.normal(0, 1, n),
            "b": rng.gamma(2, 2, n),
            "c": rng.uniform(0, 5, n),
            "k": rng.choice(["x", "y", "z"], n),
            "m": rng.choice(["p", "q"], n),
        }
    )
    table = make_table(frame, tmp_path)
    found = search_programs(table.columns, ProgramSearchConfig(max_programs=300, seed=3))
    assert len(found.programs) >= 100
    offered_wrong = 0
    for program in found.programs:
        question = natural_question(program, 4)
        assert grammar_problems(question) == [], question
        root = program.steps[-1].op
        if BY_NAME[root].family == "decision":
            allowed = decision_options(root)
            offered = [o for o in ("student", "welch", "mannwhitney") if f"'{o}'" in question]
            offered_wrong += bool(set(offered) - set(allowed))
    assert offered_wrong == 0


def test_readability_is_reported_per_template():
    """The summary (asset metadata) scores each template's wording, and a procedural
    question under its answer operator, so a badly read wording points at its source."""
    from test_question_floors_diagnostics import record

    from verilearn_assets.analysis.quality.readability import readability
    from verilearn_assets.analysis.sources.build import readability_markdown, summarize

    long_q = "What is the mean of the values of the rows of the groups of the table? " * 3
    recs = [
        record("d1", question="What is the mean of 'x'?", readability=5.0, template="mean_x"),
        record("d2", question=long_q, readability=readability(long_q), template="mean_x"),
        record(
            "d3",
            template=None,
            source="procedural",
            ops=("select_numeric", "mean"),
            readability=4.0,
        ),
    ]
    per = summarize(recs)["readability_by_template"]
    assert per["mean_x"]["count"] == 2 and per["mean_x"]["min"] == readability(long_q) < 5
    assert per["procedural:mean"] == {"count": 1, "mean": 4.0, "min": 4.0}
    assert "| mean_x | 2 |" in readability_markdown(summarize(recs))
