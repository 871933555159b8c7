"""Normality: Kolmogorov-Smirnov (method stated explicitly), Shapiro-Wilk, and normality
within each group of a categorical column."""

from __future__ import annotations

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.template.base import (
    BOOLEAN,
    PVALUE,
    STAT,
    AnswerSchema,
    NotApplicable,
    ReferenceCode,
    TableView,
    Template,
    candidate,
    mapping,
    q,
)
from verilearn_assets.analysis.sources.template.steps import level_rows, nonmissing_values

FAMILY = "normality"
SHAPIRO_MAX_N = 5000  # scipy warns that p-values are unreliable beyond this


def ks_normality_test(v: TableView) -> list[Candidate]:
    out = []
    for col in v.per_template(v.need_numeric(1)):
        p = ReferenceCode().comment(f"KS test of standardised {col} against N(0, 1)")
        nonmissing_values(p, col)
        p.step("z = (x - x.mean()) / x.std(ddof=1)", "standardised", ["values"])
        p.step("res = stats.kstest(z, 'norm')", "ks_test", ["standardised"])
        code = p.submit('{"statistic": float(res.statistic), "p_value": float(res.pvalue)}')
        out.append(
            candidate(
                "ks_normality_test",
                FAMILY,
                "medium",
                f"Test whether '{col}' is normally distributed with a one-sample "
                "Kolmogorov-Smirnov test: standardise the non-missing values with their mean and "
                "sample standard deviation (ddof=1) and compare them with the standard normal "
                "(scipy.stats.kstest(z, 'norm'), two-sided, default method). What are D and p?",
                f"x = non-missing '{col}'; z = (x - mean) / std(ddof=1); scipy.stats.kstest(z, "
                "'norm')",
                mapping(statistic=STAT, p_value=PVALUE),
                p,
                code,
                ops=["standardise", "kstest"],
            )
        )
    return out


def shapiro_normality(v: TableView) -> list[Candidate]:
    v.require(
        v.n_rows <= SHAPIRO_MAX_N,
        f"more than {SHAPIRO_MAX_N} rows: Shapiro-Wilk p-values are unreliable",
    )
    out = []
    for col in v.per_template(v.need_numeric_from_second()):
        p = ReferenceCode().comment(f"Shapiro-Wilk normality test of {col}")
        nonmissing_values(p, col)
        p.step("res = stats.shapiro(x)", "shapiro", ["values"])
        p.step("normal = bool(res.pvalue > 0.05)", "looks_normal", ["shapiro"])
        code = p.submit(
            '{"statistic": float(res.statistic), "p_value": float(res.pvalue), '
            '"normal_at_5pct": normal}'
        )
        out.append(
            candidate(
                "shapiro_normality",
                FAMILY,
                "easy",
                f"Is '{col}' normally distributed according to the Shapiro-Wilk test at the 5% "
                "level? Report W, the p-value and the verdict.",
                f"x = non-missing '{col}'; scipy.stats.shapiro(x); normal = p > 0.05",
                mapping(statistic=STAT, p_value=PVALUE, normal_at_5pct=BOOLEAN),
                p,
                code,
                ops=["shapiro"],
            )
        )
    return out


def conditional_normality(v: TableView) -> list[Candidate]:
    nums = v.need_numeric(1)
    for num in nums[:3]:
        for cat in v.categorical:
            levels = v.viable_groups(cat, num, 2, v.cfg.eligibility.max_categories)
            df = v.frame()
            if not levels:
                continue
            sizes = df[[cat, num]].dropna()[cat].astype(str).value_counts()
            if sizes[levels].max() > SHAPIRO_MAX_N:
                continue
            p = ReferenceCode().comment(f"Shapiro-Wilk of {num} within each level of {cat}")
            level_rows(p, cat, [num], levels)
            p.step(
                f"p_values = sub.groupby(sub[{q(cat)}].astype(str))[{q(num)}].apply("
                "lambda g: stats.shapiro(g.astype(float)).pvalue)",
                "p_values",
                ["kept_rows"],
            )
            p.step("normal = p_values > 0.05", "normal_mask", ["p_values"])
            code = p.submit("{str(k): bool(val) for k, val in normal.items()}")
            return [
                candidate(
                    "conditional_normality",
                    FAMILY,
                    "hard",
                    f"Within each value of '{cat}' (values with at least "
                    f"{v.cfg.eligibility.min_group_size} rows), is '{num}' normally distributed "
                    "according to Shapiro-Wilk at the 5% level? Answer per value.",
                    f"levels {levels}; per level scipy.stats.shapiro on '{num}'; normal = p > 0.05",
                    AnswerSchema(kind="mapping", items=BOOLEAN),
                    p,
                    code,
                    ops=["groupby", "shapiro"],
                )
            ]
    raise NotApplicable("no categorical column with 2+ levels of enough (<= 5000) rows")


TEMPLATES = [
    Template("ks_normality_test", FAMILY, "medium", ks_normality_test),
    Template("shapiro_normality", FAMILY, "easy", shapiro_normality),
    Template("conditional_normality", FAMILY, "hard", conditional_normality),
]
