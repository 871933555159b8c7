"""Known answers of the correlation templates, worked by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from known_answer import answers, build, verified
from scipy import stats

# y = 2x: r = 1; z deviates 2,-2,1,-1,0 from its mean 3 against x's -2,-1,0,1,2:
# r(x, z) = -3 / sqrt(10 * 10) = -0.3, and r(y, z) = -0.3 too
FRAME = pd.DataFrame({"x": [1.0, 2, 3, 4, 5], "y": [2.0, 4, 6, 8, 10], "z": [5.0, 1, 4, 2, 3]})


def test_pearson_strongest_pair(tmp_path):
    ref, alts = answers(build("pearson_strongest_pair", FRAME, tmp_path), FRAME)
    assert ref["columns"] == ["x", "y"] and ref["r"] == pytest.approx(1.0)
    assert alts == {}  # -0.3 is far from 1: no tie to list


# --- through the real sandbox -------------------------------------------------------------
# target a (six distinct values, first by name); c falls with a but for one swap (rho
# -(1 - 6 * 2 / (6 * 35)) = -0.943); b rises with a but for two swaps (rho 1 - 6 * 4 /
# (6 * 35) = 0.886); d is scattered. (An exact -a would be a monotone function of the
# target, rho -1 by construction: not asked, see test_monotone_partner_is_not_asked.)
RANKS = pd.DataFrame(
    {
        "a": [1.0, 2, 3, 4, 5, 6],
        "b": [10.0, 30, 20, 40, 60, 50],
        "c": [-1.0, -2, -3, -5, -4, -6],
        "d": [4.0, 1, 6, 2, 5, 3],
    }
)
POSITIVE_READING = "strongest read as the largest positive rho: 'b'"


@pytest.mark.parametrize(
    "name",
    [
        "spearman_rank_correlation",
        "spearman_rank_correlation__exclude_target",
        "spearman_rank_correlation__method_explicit",
    ],
)
def test_spearman_strongest_with_signed_reading(pool_runner, tmp_path, name):
    _, ref, alts = verified(pool_runner, name, RANKS, tmp_path)
    assert ref == {"column": "c", "rho": pytest.approx(-(1 - 6 * 2 / (6 * 35)))}
    rho_b = stats.spearmanr(RANKS["a"], RANKS["b"]).statistic
    assert rho_b == pytest.approx(1 - 6 * 4 / (6 * 35))
    if name.endswith("method_explicit"):  # 'largest absolute rho' leaves no signed reading
        assert alts == {}
    else:
        assert alts == {POSITIVE_READING: {"column": "b", "rho": pytest.approx(rho_b)}}


def test_monotone_partner_is_not_asked(tmp_path):
    """anes96 asked the rank correlation of 'logpopul' and 'popul' (exactly 1, by
    construction): a target with a monotone partner is skipped for the next one."""
    frame = RANKS.assign(a_log=np.log(RANKS["a"]))  # 'a' is the first target
    c = build("spearman_rank_correlation", frame, tmp_path)
    # 'a' and 'a_log' are each other's monotone partner: the next target, 'b', is asked
    assert "correlation with 'b'," in c.question, c.question
    ref, _ = answers(c, frame)
    assert abs(ref["rho"]) < 1


def test_correlation_after_outlier_removal(pool_runner, tmp_path):
    # x = 1..7 and 100: Q1 2.75, Q3 6.25, upper fence 11.5, so the last row goes; y has no
    # outlier of its own
    x = [1.0, 2, 3, 4, 5, 6, 7, 100]
    y = [2.0, 1, 4, 3, 6, 5, 8, 7]
    frame = pd.DataFrame({"x": x, "y": y})
    _, ref, alts = verified(pool_runner, "correlation_after_outlier_removal", frame, tmp_path)
    assert ref == {
        "r_before": pytest.approx(stats.pearsonr(x, y).statistic),
        "r_after": pytest.approx(stats.pearsonr(x[:-1], y[:-1]).statistic),
        "rows_removed": 1,
    }
    assert alts == {}


LOGS = pd.DataFrame(
    {
        "a": [1.0, 2, 4, 8, 16, 32],
        "b": [1.0, 2, 3, 4, 5, 6],
        "c": [3.0, 1, 4, 1.5, 5, 9],
        "d": [2.0, 7, 1, 8, 2.5, 8.5],
    }
)


def _log_change(fn, col: str) -> float:
    raw = np.corrcoef(LOGS["a"], LOGS[col])[0, 1]
    return np.corrcoef(fn(LOGS["a"]), fn(LOGS[col]))[0, 1] - raw


@pytest.mark.parametrize(
    "name",
    [
        "correlation_change_analysis",
        "correlation_change_analysis__exclude_target",
        "correlation_change_analysis__method_explicit",
    ],
)
def test_correlation_change_under_log(pool_runner, tmp_path, name):
    _, ref, alts = verified(pool_runner, name, LOGS, tmp_path)
    changes = {c: _log_change(np.log, c) for c in ("b", "c", "d")}
    best = max(changes, key=lambda c: abs(changes[c]))
    assert ref == {"column": best, "change": pytest.approx(changes[best])}
    if name.endswith("method_explicit"):  # names np.log: no log1p reading
        assert alts == {}
    else:
        plus1 = {c: _log_change(np.log1p, c) for c in ("b", "c", "d")}
        top = max(plus1, key=lambda c: abs(plus1[c]))
        assert alts == {
            f"log read as log(1 + x): '{top}'": {
                "column": top,
                "change": pytest.approx(plus1[top]),
            }
        }
