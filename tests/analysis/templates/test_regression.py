"""Known answers of the regression templates, worked by hand, alternatives included."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from known_answer import answers, build

# a is the target (first numeric by name); t = a / 2 exactly: R^2 = 1 on any rows.
# c misses one value, so 'rows complete in every candidate column' is another reading.
FRAME = pd.DataFrame(
    {
        "a": [2.0, 4, 6, 8, 10, 12],
        "c": [3.0, 1, np.nan, 6, 2, 5],
        "t": [1.0, 2, 3, 4, 5, 6],
    }
)


@pytest.mark.parametrize("variant", ["", "__exclude_target"])
def test_regression_most_predictive_with_listwise_reading(tmp_path, variant):
    c = build(f"regression_most_predictive{variant}", FRAME, tmp_path)
    ref, alts = answers(c, FRAME)
    assert ref == {"predictor": "t", "r_squared": pytest.approx(1.0)}
    listwise = [v for d, v in alts.items() if d.startswith("rows complete in every")]
    assert listwise == [{"predictor": "t", "r_squared": pytest.approx(1.0)}]
