"""Known answers of the correlation templates, worked by hand."""

from __future__ import annotations

import pandas as pd
import pytest
from known_answer import answers, build

# y = 2x: r = 1; z deviates 2,-2,1,-1,0 from its mean 3 against x's -2,-1,0,1,2:
# r(x, z) = -3 / sqrt(10 * 10) = -0.3, and r(y, z) = -0.3 too
FRAME = pd.DataFrame({"x": [1.0, 2, 3, 4, 5], "y": [2.0, 4, 6, 8, 10], "z": [5.0, 1, 4, 2, 3]})


def test_pearson_strongest_pair(tmp_path):
    ref, alts = answers(build("pearson_strongest_pair", FRAME, tmp_path), FRAME)
    assert ref["columns"] == ["x", "y"] and ref["r"] == pytest.approx(1.0)
    assert alts == {}  # -0.3 is far from 1: no tie to list
