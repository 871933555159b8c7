"""Known answers of the regression templates, worked by hand, alternatives included."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from known_answer import answers, build, verified

# a is the target (first numeric by name); t = a / 2 exactly: R^2 = 1 on any rows.
# c misses one value, so 'rows complete in every candidate column' is another reading.
FRAME = pd.DataFrame(
    {
        "a": [2.0, 4, 6, 8, 10, 12],
        "c": [3.0, 1, np.nan, 6, 2, 5],
        "t": [1.0, 2, 3, 4, 5, 6],
    }
)


@pytest.mark.parametrize(
    "name", ["regression_most_predictive", "regression_most_predictive__exclude_target"]
)
def test_regression_most_predictive_with_listwise_reading(tmp_path, name):
    c = build(name, FRAME, tmp_path)
    ref, alts = answers(c, FRAME)
    assert ref == {"predictor": "t", "r_squared": pytest.approx(1.0)}
    listwise = [v for d, v in alts.items() if d.startswith("rows complete in every")]
    assert listwise == [{"predictor": "t", "r_squared": pytest.approx(1.0)}]


# --- through the real sandbox -------------------------------------------------------------
def test_regression_method_explicit_has_no_listwise_reading(pool_runner, tmp_path):
    c, ref, alts = verified(
        pool_runner, "regression_most_predictive__method_explicit", FRAME, tmp_path
    )
    assert "where both values are present" in c.question
    assert ref == {"predictor": "t", "r_squared": pytest.approx(1.0)} and alts == {}


def test_multiple_regression_top_predictors(pool_runner, tmp_path):
    # target a (eight distinct values, first by name among the most varied); b and c track
    # it, d barely does: the model is a on b and c, fitted with statsmodels directly
    frame = pd.DataFrame(
        {
            "a": [1.0, 3, 2, 5, 4, 7, 6, 9],
            "b": [1.1, 2.9, 2.2, 4.8, 4.1, 7.3, 5.8, 8.7],
            "c": [2.0, 2, 3, 4, 6, 6, 8, 7],
            "d": [5.0, 1, 4, 2, 8, 3, 7, 6],
        }
    )
    _, ref, alts = verified(pool_runner, "multiple_regression_top_predictors", frame, tmp_path)
    r = frame[["b", "c", "d"]].corrwith(frame["a"]).abs()
    assert set(r.nlargest(2).index) == {"b", "c"}
    fit = sm.OLS(frame["a"], sm.add_constant(frame[["b", "c"]])).fit()
    assert ref == {
        "predictors": ["b", "c"],
        "r_squared": pytest.approx(fit.rsquared),
        "adj_r_squared": pytest.approx(fit.rsquared_adj),
    }
    assert alts == {}
