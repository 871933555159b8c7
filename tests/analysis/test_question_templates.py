"""The template library: size, family coverage, and applicability on awkward tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from question_helpers import make_table, small_cfg

from verilearn_assets.analysis.sources.generate import generate
from verilearn_assets.analysis.sources.template import REGISTRY
from verilearn_assets.analysis.sources.template.base import ReferenceCode
from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.read_table import read_typed

FAMILIES = {
    "descriptive",
    "missingness",
    "outliers",
    "correlation",
    "group_comparison",
    "normality",
    "regression",
    "bootstrap",
    "binning",
    "imputation",
    "segment",
    "adaptive",
}


def test_library_covers_every_family():
    assert len(REGISTRY) >= 32
    assert {t.family for t in REGISTRY.values()} == FAMILIES
    for base in (
        "ttest_discovered_groups",
        "spearman_rank_correlation",
        "regression_most_predictive",
        "correlation_change_analysis",
    ):
        assert {f"{base}__exclude_target", f"{base}__method_explicit"} <= set(REGISTRY)
        assert REGISTRY[f"{base}__method_explicit"].variant_of == base


def test_hook_code_line_is_the_exact_line():
    p = ReferenceCode()
    p.step("q1, q3 = x.quantile([0.25, 0.75])", "quartiles", ["values"])
    code = p.submit("q1")
    lines = code.splitlines()
    assert lines[1] == (
        "hook((q1, q3), 'q1, q3 = x.quantile([0.25, 0.75])', "
        "name='quartiles', depends_on=['values'])"
    )
    assert compile(code, "<t>", "exec")


def _awkward_frame(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "flag": rng.random(n) > 0.5,
            "when": pd.date_range("2024-01-01", periods=n, freq="D"),
            "nothing": pd.Series([np.nan] * n, dtype="float64"),
            "row_id": np.arange(n),
        }
    )


def test_booleans_datetimes_empty_and_ids_are_not_applicable(tmp_path):
    table = make_table(_awkward_frame(), tmp_path)
    out = generate(table, "template", small_cfg())
    # most_missing_column and duplicate_rows read every column; the rest need eligible ones
    made = {c.template for c in [*out.candidates, *out.rejected]}  # screened out or not
    assert made <= {"most_missing_column", "duplicate_rows"}
    assert set(out.not_applicable) | made == set(REGISTRY)
    assert "needs" in out.not_applicable["mean_median_gap"]


def test_single_column_table_is_not_applicable(tmp_path):
    table = make_table(pd.DataFrame({"x": np.arange(50, dtype=float) ** 1.5}), tmp_path)
    out = generate(table, "template", small_cfg())
    assert out.candidates == []
    assert set(out.not_applicable) == set(REGISTRY)
    assert all("1 column" in r for r in out.not_applicable.values())


def test_tab_separated_file_is_typed_and_profiled(tmp_path):
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {"g": rng.choice(["u", "v"], 30), "a": rng.normal(size=30), "b": rng.normal(size=30)}
    )
    tsv = tmp_path / "t.tsv"
    frame.to_csv(tsv, sep="\t", index=False)
    ds = load_datasets_config()
    typed = read_typed(tsv, ds.read, ds.limits.max_table_bytes)
    assert list(typed.columns) == ["g", "a", "b"]
    out = generate(make_table(typed, tmp_path), "template", small_cfg())
    assert "mean_median_gap" in {c.template for c in out.candidates}


def test_unknown_template_in_config_is_an_error(tmp_path):
    table = make_table(pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0], "b": list("abcab")}), tmp_path)
    with pytest.raises(ValueError, match="unknown template"):
        generate(table, "template", small_cfg(enabled=["no_such_template"]))
