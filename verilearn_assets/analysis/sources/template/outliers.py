"""Outliers: the IQR fence, z-scores, and iterative trimming until nothing is extreme."""

from __future__ import annotations

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.template.base import (
    INTEGER,
    NUMBER,
    ReferenceCode,
    TableView,
    Template,
    candidate,
    mapping,
)
from verilearn_assets.analysis.sources.template.steps import nonmissing_values

FAMILY = "outliers"


def _iqr_fence(p: ReferenceCode, col: str) -> None:
    nonmissing_values(p, col)
    p.step("q1, q3 = x.quantile([0.25, 0.75])", "quartiles", ["values"])
    p.step("iqr = q3 - q1", "iqr", ["quartiles"])
    p.step("low, high = q1 - 1.5 * iqr, q3 + 1.5 * iqr", "fences", ["iqr"])
    p.step("is_out = (x < low) | (x > high)", "outlier_mask", ["values", "fences"])


def iqr_outlier_count(v: TableView) -> list[Candidate]:
    out = []
    for col in v.per_template(v.need_numeric(1)):
        p = ReferenceCode().comment(f"Tukey fences on {col}")
        _iqr_fence(p, col)
        p.step("n_out = int(is_out.sum())", "n_outliers", ["outlier_mask"])
        code = p.submit("n_out")
        out.append(
            candidate(
                "iqr_outlier_count",
                FAMILY,
                "easy",
                f"How many values of '{col}' are outliers by the 1.5 x IQR rule, with the "
                "quartiles by linear interpolation?",
                f"x = non-missing '{col}'; Q1, Q3 by pandas quantile (linear); count x < Q1 - "
                "1.5 IQR or x > Q3 + 1.5 IQR",
                INTEGER,
                p,
                code,
                ops=["quantile", "filter", "count"],
            )
        )
    return out


def zscore_outlier_count(v: TableView) -> list[Candidate]:
    out = []
    for col in v.per_template(v.need_numeric(1)):
        p = ReferenceCode().comment(f"z-scores of {col} with the sample standard deviation")
        nonmissing_values(p, col)
        p.step("z = (x - x.mean()) / x.std(ddof=1)", "z_scores", ["values"])
        p.step("n_out = int((z.abs() > 3).sum())", "n_outliers", ["z_scores"])
        p.step("share = n_out / len(x)", "share", ["n_outliers", "values"])
        code = p.submit('{"count": n_out, "share": float(share)}')
        out.append(
            candidate(
                "zscore_outlier_count",
                FAMILY,
                "easy",
                f"How many values of '{col}' lie more than 3 standard deviations from its mean "
                "(sample standard deviation), and what share of the non-missing values is that?",
                f"x = non-missing '{col}'; z = (x - mean) / std(ddof=1); count |z| > 3; share = "
                "count / len(x)",
                mapping(count=INTEGER, share=NUMBER),
                p,
                code,
                ops=["zscore", "filter", "count"],
            )
        )
    return out


def iterative_trimming(v: TableView) -> list[Candidate]:
    out = []
    for col in v.per_template(v.need_numeric(1)):
        p = ReferenceCode().comment(f"Trim |z| > 3 from {col} repeatedly until none is left")
        nonmissing_values(p, col)
        p.line(
            "rounds = 0\n"
            "while len(x) > 2 and rounds < 50:\n"
            "    z = (x - x.mean()) / x.std(ddof=1)\n"
            "    keep = ~(z.abs() > 3)\n"
            "    if keep.all():\n"
            "        break\n"
            "    x = x[keep]\n"
            "    rounds += 1"
        )
        p.step("trimmed_mean = x.mean()", "trimmed_mean")
        code = p.submit('{"rounds": rounds, "remaining": int(len(x)), "mean": float(trimmed_mean)}')
        out.append(
            candidate(
                "iterative_trimming",
                FAMILY,
                "hard",
                f"Repeatedly remove values of '{col}' whose z-score exceeds 3 in absolute value "
                "(recomputing mean and sample std each round) until none remain (a constant "
                "remainder has no extreme values). How many rounds "
                "removed something, how many values are left, and what is their mean?",
                f"x = non-missing '{col}'; loop: z with std(ddof=1); stop when all |z| <= 3 "
                "(at most 50 rounds); answer rounds, len(x), mean(x)",
                mapping(rounds=INTEGER, remaining=INTEGER, mean=NUMBER),
                p,
                code,
                ops=["zscore", "filter", "loop", "mean"],
            )
        )
    return out


def iqr_trimmed_mean_shift(v: TableView) -> list[Candidate]:
    out = []
    for col in v.per_template(v.need_numeric_from_second()):
        p = ReferenceCode().comment(f"Effect of dropping IQR outliers on the mean of {col}")
        _iqr_fence(p, col)
        p.step("kept = x[~is_out]", "kept_values", ["outlier_mask"])
        p.step("shift = kept.mean() - x.mean()", "mean_shift", ["kept_values", "values"])
        code = p.submit("float(shift)")
        out.append(
            candidate(
                "iqr_trimmed_mean_shift",
                FAMILY,
                "medium",
                f"By how much does the mean of '{col}' change when its 1.5 x IQR outliers "
                "(quartiles by linear interpolation) are removed, as mean after minus mean "
                "before?",
                f"x = non-missing '{col}'; Tukey fences (pandas quantile); mean(x inside fences) "
                "- mean(x)",
                NUMBER,
                p,
                code,
                ops=["quantile", "filter", "mean"],
            )
        )
    return out


TEMPLATES = [
    Template("iqr_outlier_count", FAMILY, "easy", iqr_outlier_count),
    Template("zscore_outlier_count", FAMILY, "easy", zscore_outlier_count),
    Template("iterative_trimming", FAMILY, "hard", iterative_trimming),
    Template("iqr_trimmed_mean_shift", FAMILY, "medium", iqr_trimmed_mean_shift),
]
