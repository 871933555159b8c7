"""ID-like columns (issue 10): a row key is never read as a numeric variable unless the
wording says so. Detection from the values and names, and the two table readings the
convention screen re-runs: without the IDs (code that uses one) and with them (a template
whose wording leaves its candidate columns implicit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from verilearn_assets.analysis.config import load_questions_config
from verilearn_assets.analysis.screen.conventions import check_conventions
from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.id_columns import id_like_columns, numeric_id_columns
from verilearn_assets.analysis.sources.template import REGISTRY
from verilearn_assets.analysis.sources.template.base import NUMBER, STRING, TableView, mapping
from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.tables import build_tables

# rows 3, 8, 9, ... of a larger table: 'Unnamed: 0' keeps the old row numbers (not
# consecutive), 'index' likewise, 'code' is a text key; 'count' is unique but not a key
# (no key-like name, uneven steps); 'x' is a measurement
SPLIT = pd.DataFrame(
    {
        "Unnamed: 0": [3, 8, 9, 14, 20, 21],
        "index": [30, 80, 90, 140, 200, 210],
        "code": ["p1", "p2", "p3", "p4", "p5", "p6"],
        "count": [5, 2, 9, 4, 7, 1],
        "x": [0.5, 0.2, 0.9, 0.4, 0.7, 0.1],
        "g": ["a", "b", "a", "b", "a", "b"],
    }
)


def cand(question: str, body: str, schema=NUMBER) -> Candidate:
    line = f"v = {body}"
    return Candidate(
        source="procedural",
        question=question,
        question_mechanical=question,
        answer_schema=schema,
        code=f"{line}\nhook(v, {line!r}, name='v')\nsubmit(v)\n",
        n_steps=1,
        difficulty="easy",
    )


def test_detects_keys_by_name_and_values_not_unique_counts():
    assert id_like_columns(SPLIT) == ["Unnamed: 0", "index", "code"]
    assert numeric_id_columns(SPLIT) == ["Unnamed: 0", "index"]
    # an evenly stepped integer sequence is a key whatever its name; a repeated one is not
    seq = pd.DataFrame({"n": [10, 20, 30, 40], "m": [1, 1, 2, 3]})
    assert id_like_columns(seq) == ["n"]


def test_mean_of_an_id_is_rejected_unless_the_wording_says_it_is_one():
    named = cand("What is the mean of 'Unnamed: 0'?", "float(df['Unnamed: 0'].mean())")
    report = check_conventions(named, SPLIT)
    assert report.tried == ["exclude_id_columns:moved"]
    assert report.rejection.startswith("ambiguous_convention:") and "Unnamed: 0" in report.rejection
    said = cand(
        "What is the mean of the row-number identifier 'Unnamed: 0'?",
        "float(df['Unnamed: 0'].mean())",
    )
    assert check_conventions(said, SPLIT).tried == ["exclude_id_columns:stated"]


def test_whole_table_pick_that_moves_without_the_ids_is_rejected():
    # the smallest numeric mean: 'x' (0.45) either way, so the answer stays
    low = cand(
        "Which numeric column has the smallest mean?",
        "str(df.select_dtypes('number').mean().idxmin())",
        STRING,
    )
    assert check_conventions(low, SPLIT).tried == [
        "argmin_last_tied:same",
        "exclude_id_columns:same",
    ]
    # the largest numeric mean: 'index' (125) with the keys, 'count' (4.67) without
    high = cand(
        "Which numeric column has the largest mean?",
        "str(df.select_dtypes('number').mean().idxmax())",
        STRING,
    )
    report = check_conventions(high, SPLIT)
    assert report.tried == ["argmax_last_tied:same", "exclude_id_columns:moved"]
    assert '"count"' in report.rejection and '"index"' in report.rejection


@pytest.fixture(scope="module")
def copper(tmp_path_factory):
    """The bundled statsmodels copper table: 'TIME' runs 1..25, a row key."""
    cfg = load_datasets_config()
    one = cfg.model_copy(update={"datasets": [d for d in cfg.datasets if d.name == "copper"]})
    (table,) = build_tables(one, tmp_path_factory.mktemp("copper"))
    return table


def test_bundled_copper_time_is_a_key_and_implicit_wordings_state_it(copper):
    frame = pd.read_parquet(copper.path)
    assert numeric_id_columns(frame) == ["TIME"]
    view = TableView(copper.columns, copper.n_rows, copper.path, load_questions_config())
    assert "TIME" in view.id_columns and "TIME" not in view.numeric
    (c,) = REGISTRY["correlation_change_analysis"].build(view)
    assert "Identifier columns ('TIME') are not candidates." in c.question
    # with 'TIME' among the candidates the answer moves; the wording states the exclusion
    assert "include_id_columns:stated" in check_conventions(c, frame).tried
    silent = c.model_copy(update={"question": c.question.split(" Identifier columns")[0]})
    report = check_conventions(silent, frame)
    assert "include_id_columns:moved" in report.tried
    assert report.rejection.startswith("ambiguous_convention: under include_id_columns")
    # the explicit wording names every candidate: including 'TIME' is not a reading of it
    (explicit,) = REGISTRY["correlation_change_analysis__method_explicit"].build(view)
    assert not any(t.startswith("include_id") for t in check_conventions(explicit, frame).tried)


def test_synthetic_implicit_candidates_gain_the_id_reading(tmp_path):
    # 'row' 0..29 is a key that tracks 'y' perfectly; 'a' and 'b' are noisy measurements
    rng = np.random.default_rng(3)
    y = np.arange(30) + rng.normal(0, 3, 30)
    frame = pd.DataFrame(
        {"row": np.arange(30), "y": y, "a": rng.normal(0, 1, 30), "b": y + rng.normal(0, 9, 30)}
    )
    code = (
        "r = df[['a', 'b']].corrwith(df['y'], method='spearman').abs()\n"
        "hook(r, \"r = ...\", name='r')\n"
        "submit({'column': str(r.idxmax()), 'rho': float(r.max())})\n"
    )
    c = Candidate(
        source="template",
        template="hand",
        question="Which column has the strongest rank correlation with 'y'?",
        question_mechanical="-",
        answer_schema=mapping(column=STRING, rho=NUMBER),
        code=code,
        n_steps=2,
        difficulty="easy",
    )
    report = check_conventions(c, frame)
    assert (
        report.tried == ["argmax_last_tied:same", "include_id_columns:moved"]
        and "'row'" not in c.code
    )
    assert '"row"' in report.rejection  # with the key among the candidates, 'row' wins
    named = c.model_copy(
        update={"question": c.question + " Identifier columns are not candidates."}
    )
    assert check_conventions(named, frame).tried[-1] == "include_id_columns:stated"


@pytest.mark.parametrize(
    "name",
    [
        "spearman_rank_correlation",
        "spearman_rank_correlation__exclude_target",
        "regression_most_predictive",
        "regression_most_predictive__exclude_target",
        "correlation_change_analysis",
        "correlation_change_analysis__exclude_target",
    ],
)
def test_every_other_column_wordings_exclude_the_ids_in_words(tmp_path, name):
    """Issue 24: the six 'which other numeric column' templates consider every numeric
    column but the row key. 'row' (1..40) tracks the target exactly, so counting it moves
    the answer; the wording names it as an identifier (stated), and the same question
    without that sentence is turned away by the ID reading."""
    from question_helpers import make_table

    rng = np.random.default_rng(8)
    row = np.arange(1, 41)
    if name.startswith("correlation_change"):  # the log straightens 'row' against a cube
        y, c, b = row**3.0, row**3.0 * rng.uniform(1, 1.5, 40), row**3.0 * rng.uniform(1, 1.2, 40)
    else:
        y = np.sort(rng.uniform(1, 10, 40))
        c, b = y + rng.uniform(0, 6, 40), rng.uniform(1, 5, 40)
    # "a_y" comes first by name among the varied columns: it is the target
    frame = pd.DataFrame({"row": row, "a_y": y, "c": c, "b": b})
    table = make_table(frame, tmp_path)
    view = TableView(table.columns, table.n_rows, table.path, load_questions_config())
    c = REGISTRY[name].build(view)[0]
    assert "Identifier columns ('row') are not candidates." in c.question
    assert "'row'" not in c.code.split("submit")[0].split("\n", 3)[-1]  # never a candidate
    report = check_conventions(c, frame)
    assert report.rejection is None and "include_id_columns:stated" in report.tried
    silent = c.model_copy(update={"question": c.question.split(" Identifier")[0]})
    assert "include_id_columns:moved" in check_conventions(silent, frame).tried
