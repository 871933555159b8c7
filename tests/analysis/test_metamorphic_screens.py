"""Issue 24 §2/§4: the metamorphic screens (data dependence on same-shape perturbed tables,
step ablation, construction tautologies) on a degenerate, a redundant and a tautological
candidate each, honest ones passing; through `screen_one` and `generate` on a real table
file, with the yield target kept and the DuckDB marts counting each screen."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from question_helpers import make_table
from statsmodels.datasets import fair as fair_data
from test_question_quality import cand, one_step

from verilearn_assets.analysis.config import QuestionsConfig, load_questions_config
from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.analysis.screen.config import ScreenConfig
from verilearn_assets.analysis.screen.metamorphic import (
    TableTrials,
    ablations,
    same_shape_tables,
)
from verilearn_assets.analysis.screen.run import screen, screen_one
from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.generate import generate
from verilearn_assets.analysis.sources.generation_stats import LAKE as GENERATION_STATS
from verilearn_assets.analysis.sources.generation_stats import (
    SearchRejectionRecord,
    search_rejection_records,
)
from verilearn_assets.analysis.sources.procedural import to_candidate
from verilearn_assets.analysis.sources.procedural.chains import absorbed_step, chain_problem
from verilearn_assets.analysis.sources.procedural.program import SOURCE, Program, Step
from verilearn_assets.analysis.sources.procedural.search import ProgramSearchConfig
from verilearn_assets.analysis.sources.template.base import INTEGER, NUMBER, STRING
from verilearn_assets.analysis.verify.verifier import screened_out
from verilearn_assets.core import lake
from verilearn_assets.core.warehouse import build_all, reader, warehouse_path, writer

RNG = np.random.default_rng(1)
N = 60
FRAME = pd.DataFrame(
    {
        "x": RNG.normal(10, 2, N),
        "y": RNG.lognormal(0, 1, N),
        "g": RNG.choice(list("abc"), N, p=[0.5, 0.3, 0.2]),
        "n": RNG.poisson(30, N),
    }
)


def prog(*steps: tuple[str, tuple[int, ...], tuple[str, ...]]) -> Program:
    return Program(tuple(Step(op, ins, cols) for op, ins, cols in steps))


def template_cand(question: str, body: str, schema=NUMBER) -> Candidate:
    """A hand-written template candidate whose reference is `v = body`."""
    return cand(question, one_step(body), schema)


X = ("select_numeric", (SOURCE,), ("x",))
# the standard error of z-scores is 1/sqrt(n): fixed by the row count alone
SE_OF_Z = prog(X, ("zscore", (0,), ()), ("std_error", (1,), ()))
# centring before a z-score changes nothing, and the two are not neighbours (a sort sits
# between them), so the adjacent-pair rule of `chain_problem` misses it
CENTRED_Z = prog(
    X,
    ("center", (0,), ()),
    ("sort_ascending", (1,), ()),
    ("zscore", (2,), ()),
    ("skewness", (3,), ()),
)
# keep the rows of the most frequent g, then ask for the least frequent g: the mode again
MODE_THEN_LEAST = prog(
    ("filter_key_is_mode", (SOURCE,), ("g",)),
    ("select_category", (0,), ("g",)),
    ("least_frequent", (1,), ()),
)
HONEST = {
    "mean of cube roots": prog(X, ("cube_root", (0,), ()), ("mean", (1,), ())),
    # a draw with replacement keeps the maximum in ~63% of tables: jitter moves it
    "maximum of x": prog(X, ("maximum", (0,), ())),
    "maximum of a count": prog(("select_numeric", (SOURCE,), ("n",)), ("maximum", (0,), ())),
    "group with the largest mean": prog(
        ("group_mean", (SOURCE,), ("g", "x")), ("group_with_max", (0,), ())
    ),
    "share of x above its mean among upper-quartile y": prog(
        ("filter_upper_quartile", (SOURCE,), ("y",)),
        ("share_above_overall_mean", (0,), ("x",)),
    ),
}


def screened(program: Program, cfg: ScreenConfig | None = None) -> str | None:
    cand = to_candidate(program)
    return screen_one(cand, FRAME, cfg or ScreenConfig(), program=program).rejection_reason


def test_perturbed_tables_keep_the_shape_and_move_the_values():
    tables = same_shape_tables(FRAME, 3, seed=0)
    assert all(t.shape == FRAME.shape and list(t.columns) == list(FRAME.columns) for t in tables)
    assert all(list(t["g"].unique()) != [] and set(t["g"]) <= set(FRAME["g"]) for t in tables)
    assert all(not np.allclose(t["x"].sort_values(), FRAME["x"].sort_values()) for t in tables)
    again = same_shape_tables(FRAME, 3, seed=0)
    assert all(a.equals(b) for a, b in zip(tables, again, strict=True))  # seeded


def test_a_data_independent_answer_is_rejected_and_the_old_subsample_screen_missed_it():
    reason = screened(SE_OF_Z) or ""
    assert reason.startswith("degenerate_data_independent:") and "0.1291" in reason
    # row subsamples change n, so 1/sqrt(n) moved and the older screen let it through
    assert screened(SE_OF_Z, ScreenConfig(metamorphic=False)) is None


def test_a_template_answer_fixed_by_the_row_count_is_rejected_unless_declared_shape_only():
    # kurtosis of squared percentile ranks of a column without ties depends on n only;
    # rounding (the cheapest disguise of a constant) does not save it
    body = "round(float((df['x'].rank(pct=True) ** 2).kurt()) + 1e-9 * float(df['x'].mean()), 4)"
    cand = template_cand("What is the kurtosis of the squared percentile ranks of x?", body)
    assert screen_one(cand, FRAME, ScreenConfig(metamorphic=False)).rejection_reason is None
    reason = screen_one(cand, FRAME, ScreenConfig()).rejection_reason or ""
    assert reason.startswith("degenerate_data_independent:")
    ref = round(float((FRAME["x"].rank(pct=True) ** 2).kurt()) + 1e-9 * FRAME["x"].mean(), 4)
    trials = TableTrials(FRAME, 3, 0)
    assert trials.screen(cand, ref, shape_only=True) is None  # a row count asked as such
    assert trials.screen(cand, ref).startswith("degenerate_data_independent:")


def test_a_redundant_step_not_next_to_its_canceller_is_rejected():
    assert chain_problem(CENTRED_Z) is None  # the adjacent-pair heuristic misses it
    reason = screened(CENTRED_Z) or ""
    assert reason.startswith("redundant_step: step 2 (center)"), reason
    # every ablation is a valid program one step shorter
    assert [i for i, p in ablations(CENTRED_Z)] == [1, 2, 3]
    assert all(len(p.steps) == 4 for _, p in ablations(CENTRED_Z))


# each absorbed neighbour pair and the step an identity makes pointless in it
ABSORBED = [
    (prog(X, ("zscore", (0,), ()), ("center", (1,), ()), ("maximum", (2,), ())), "3 (center)"),
    (prog(X, ("cube_root", (0,), ()), ("count_distinct", (1,), ())), "2 (cube_root)"),
    (
        prog(
            ("select_numeric", (SOURCE,), ("n",)),  # ties: the ranks' skewness is the data's
            ("signed_log", (0,), ()),
            ("percent_rank", (1,), ()),
            ("skewness", (2,), ()),
        ),
        "2 (signed_log)",
    ),
]


@pytest.mark.parametrize(("program", "step"), ABSORBED)
def test_the_search_shortcut_for_an_absorbed_pair_gives_ablations_verdict(program, step):
    """The search turns an absorbed neighbour pair away without running it (the cost
    limit of issue 24): the verdict must be the one step ablation reaches on the data."""
    shortcut = absorbed_step(program) or ""
    assert shortcut.startswith(f"redundant_step: step {step}"), shortcut
    # the same step, found by running the program on the table and the perturbed tables
    assert (screened(program) or "").startswith(f"redundant_step: step {step}")
    assert absorbed_step(CENTRED_Z) is None  # not neighbours: left to ablation


def test_a_tautological_answer_is_rejected():
    reason = screened(MODE_THEN_LEAST) or ""
    assert reason.startswith("tautology:") and "'g'" in reason
    # a template whose answer is a level its own wording names
    mode = str(FRAME["g"].mode().iloc[0])
    body = "str(df.loc[df['g'] != 'zzz', 'g'].mode().iloc[0])"
    named = template_cand(f"Among rows where 'g' is '{mode}' or not, which g is most common?", body)
    assert (screen_one(named, FRAME, ScreenConfig()).rejection_reason or "").startswith(
        "tautology:"
    )
    # the options sentence quotes every admissible answer by design: not a tautology
    options = template_cand(
        "Which level of g is the most frequent? Answer with one of 'a', 'b' or 'c'.",
        "str(df['g'].mode().iloc[0])",
        STRING,
    )
    assert screen_one(options, FRAME, ScreenConfig()).rejection_reason is None
    # nor are values the wording lists as the choices
    choices = template_cand(
        "Which of 'a', 'b' or 'c' has the largest mean of 'x'?",
        "str(df.groupby('g')['x'].mean().idxmax())",
        STRING,
    )
    assert screen_one(choices, FRAME, ScreenConfig()).rejection_reason is None


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_candidates_pass(name):
    assert screened(HONEST[name]) is None


def test_a_count_of_levels_is_not_called_data_independent():
    # resampling keeps a column's levels, so the count stays; it still depends on the data
    levels = template_cand("How many distinct values does g have?", "int(df['g'].nunique())")
    levels = levels.model_copy(update={"answer_schema": INTEGER})
    assert screen_one(levels, FRAME, ScreenConfig()).rejection_reason is None


def test_screen_of_a_table_sorts_every_candidate_once():
    cands = [to_candidate(p) for p in (SE_OF_Z, *HONEST.values())]
    passed, out = screen(cands, FRAME, ScreenConfig())
    assert len(passed) + len(out) == len(cands)
    assert [c.rejection_reason.split(":")[0] for c in out] == ["degenerate_data_independent"]


@pytest.fixture(scope="module")
def fair(tmp_path_factory):
    return make_table(fair_data.load_pandas().data, tmp_path_factory.mktemp("fair"), "fair")


def test_generation_keeps_its_yield_and_keeps_the_turned_away_as_records(fair):
    cfg = load_questions_config()  # the shipped bounds (max_programs 12, target 10)
    gen = generate(fair, "procedural", cfg)
    # the screen runs inside the search: turned-away programs make room for others
    assert len(gen.candidates) >= cfg.generation.target_per_table
    assert all(c.rejection_reason is None for c in gen.candidates)
    assert all(c.rejection_reason for c in gen.rejected)
    assert not any(k.startswith("short_of_target") for k in gen.search_rejected)
    # a target above procedural.max_programs moves the search's stopping point with it
    more = cfg.model_copy(
        update={"generation": cfg.generation.model_copy(update={"target_per_table": 14})}
    )
    assert len(generate(fair, "procedural", more).candidates) == 14
    # every accepted candidate passes the screen again on its own
    df = pd.read_parquet(fair.path)
    again = [screen_one(c, df, cfg.screen).rejection_reason for c in gen.candidates[:4]]
    assert again == [None] * 4


def test_a_table_left_short_says_why(tmp_path):
    narrow = make_table(FRAME[["x", "y"]], tmp_path, "narrow")
    # a budget of 3 skeletons: spent long before ten questions
    cfg = QuestionsConfig(procedural=ProgramSearchConfig(max_skeletons=3))
    gen = generate(narrow, "procedural", cfg)
    short = [k for k in gen.search_rejected if k.startswith("short_of_target")]
    assert len(gen.candidates) < cfg.generation.target_per_table and len(short) == 1
    assert f"{narrow.id} has {len(gen.candidates)}/10" in short[0]
    assert "only 2 usable column(s)" in short[0]
    rows = search_rejection_records({"narrow": gen.search_rejected}, "procedural", "train")
    assert [r.n for r in rows if r.reason == short[0]] == [10 - len(gen.candidates)]


def test_marts_count_each_screen_per_template_and_operator(tmp_path):
    root = lake.lake_root(tmp_path)
    table = make_table(FRAME, tmp_path, "toy")
    turned_away = [
        screen_one(to_candidate(p), FRAME, ScreenConfig(), program=p)
        for p in (SE_OF_Z, CENTRED_Z, MODE_THEN_LEAST)
    ]
    records = [screened_out(table, c, split="train") for c in turned_away]
    lake.write_records(
        "analysis/questions", records, QuestionRecord, root, source="procedural", split="train"
    )
    short = Counter({"short_of_target: t9 has 7/10: only 3 usable column(s) (< 4)": 3})
    lake.write_records(
        GENERATION_STATS,
        search_rejection_records({"toy": short}, "procedural", "train"),
        SearchRejectionRecord,
        root,
        source="procedural",
        split="train",
    )
    db = warehouse_path(tmp_path)
    with writer(db) as w:
        build_all(w, root)
    with reader(db) as r:
        got = r.execute(
            "SELECT unit, screen, n_rejected FROM mart_screen_rejections ORDER BY screen"
        ).fetchall()
        diag = r.execute(
            "SELECT rejected_degenerate_data_independent, rejected_redundant_step, "
            "rejected_tautology, tables_short_of_target, short_of_target, rejected, "
            "rejected_search_stage FROM mart_generation_diagnostics"
        ).fetchall()
    assert got == [
        ("std_error", "degenerate_data_independent", 1),
        ("center", "redundant_step", 1),
        ("least_frequent", "tautology", 1),
    ]
    # the shortfall row is reported, not counted as a rejection
    assert diag == [(1, 1, 1, 1, next(iter(short)), 3, 0)]
