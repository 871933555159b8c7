"""Table profiles: kinds, missing shares, numeric stats, id-like keys, empty columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from verilearn_assets.core.ingest.profile import profile_frame

N = 40


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "customer_id": np.arange(100, 100 + N),  # consecutive integers named like an id
            "order_no": rng.permutation(
                np.arange(1000, 1000 + 3 * N, 3)
            ),  # unique, not consecutive
            "label": [f"row-{i:03d}" for i in range(N)],  # unique text
            "amount": rng.normal(50, 10, N),  # unique floats: measurements, not keys
            "colour": pd.Series(["red", "green", "blue", "red"] * (N // 4), dtype="str"),
            "flag": [i % 3 == 0 for i in range(N)],
            "when": pd.date_range("2020-01-01", periods=N, freq="D"),
            "nothing": pd.Series([None] * N, dtype="str"),
            "gappy": pd.Series([float(i) if i % 4 else None for i in range(N)]),
        }
    )


def test_kinds_and_id_like(frame: pd.DataFrame) -> None:
    profiles = {p.name: p for p in profile_frame(frame)}
    assert list(profiles) == list(frame.columns)
    kinds = {name: p.kind for name, p in profiles.items()}
    assert kinds == {
        "customer_id": "integer",
        "order_no": "integer",
        "label": "text",
        "amount": "numeric",
        "colour": "categorical",
        "flag": "boolean",
        "when": "datetime",
        "nothing": "empty",
        "gappy": "numeric",
    }
    id_like = {name for name, p in profiles.items() if p.id_like}
    assert id_like == {"customer_id", "label"}


def test_id_like_by_name_and_not_with_missing_or_repeats() -> None:
    df = pd.DataFrame(
        {
            "order_no": [5, 9, 2, 40],
            "OrderId": [5, 9, 2, 40],
            "code": ["a", "b", "a", "c"],
            "key": ["a", "b", None, "c"],
        }
    )
    flags = {p.name: p.id_like for p in profile_frame(df)}
    assert flags == {"order_no": False, "OrderId": True, "code": False, "key": False}


def test_all_missing_column_is_empty(frame: pd.DataFrame) -> None:
    nothing = next(p for p in profile_frame(frame) if p.name == "nothing")
    assert nothing.kind == "empty"
    assert nothing.missing_pct == 100.0 and nothing.n_unique == 0
    assert nothing.mean is None and nothing.top_values == []


def test_numeric_stats_match_pandas(frame: pd.DataFrame) -> None:
    gappy = next(p for p in profile_frame(frame) if p.name == "gappy")
    col = frame["gappy"].dropna()
    assert gappy.missing_pct == pytest.approx(100 * frame["gappy"].isna().mean())
    assert gappy.n_unique == col.nunique()
    assert gappy.mean == pytest.approx(col.mean())
    assert gappy.std == pytest.approx(col.std())
    assert gappy.median == pytest.approx(col.median())
    assert (gappy.min, gappy.max) == (col.min(), col.max())
    assert gappy.skew == pytest.approx(col.skew())


def test_top_values_are_ranked_by_count_then_value(frame: pd.DataFrame) -> None:
    colour = next(p for p in profile_frame(frame) if p.name == "colour")
    assert colour.top_values == ["red", "blue", "green"]
    assert colour.n_unique == 3


def test_non_finite_stats_become_none() -> None:
    df = pd.DataFrame({"x": [1.0, np.inf, 3.0]})
    (x,) = profile_frame(df)
    assert x.max is None and x.mean is None and x.min == 1.0
