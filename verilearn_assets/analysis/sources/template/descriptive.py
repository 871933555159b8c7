"""Descriptive statistics: location, spread, dispersion ranking, category shares."""

from __future__ import annotations

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.template.base import (
    INTEGER,
    NUMBER,
    STRING,
    ReferenceCode,
    TableView,
    Template,
    candidate,
    mapping,
    q,
    quoted_list,
)
from verilearn_assets.analysis.sources.template.steps import level_rows, nonmissing_values

FAMILY = "descriptive"


def mean_median_gap(v: TableView) -> list[Candidate]:
    out = []
    for col in v.per_template(v.need_numeric(1)):
        p = ReferenceCode().comment(f"Skew check for {col}: how far the mean sits from the median")
        nonmissing_values(p, col)
        p.step("mean_x = x.mean()", "mean", ["values"])
        p.step("median_x = x.median()", "median", ["values"])
        p.step("gap = mean_x - median_x", "gap", ["mean", "median"])
        code = p.submit("float(gap)")
        out.append(
            candidate(
                "mean_median_gap",
                FAMILY,
                "easy",
                f"How far is the mean of '{col}' from its median (mean minus median), "
                "ignoring missing values?",
                f"x = non-missing '{col}'; answer = mean(x) - median(x)",
                NUMBER,
                p,
                code,
                ops=["dropna", "mean", "median"],
            )
        )
    return out


def range_and_iqr(v: TableView) -> list[Candidate]:
    out = []
    for col in v.per_template(v.need_numeric_from_second()):
        p = ReferenceCode().comment(f"Spread of {col}: full range and interquartile range")
        nonmissing_values(p, col)
        p.step("value_range = x.max() - x.min()", "range", ["values"])
        p.step("q1, q3 = x.quantile([0.25, 0.75])", "quartiles", ["values"])
        p.step("iqr = q3 - q1", "iqr", ["quartiles"])
        code = p.submit('{"range": float(value_range), "iqr": float(iqr)}')
        out.append(
            candidate(
                "range_and_iqr",
                FAMILY,
                "easy",
                f"What are the range (max - min) and the interquartile range of '{col}', with the "
                "quartiles by linear interpolation?",
                f"x = non-missing '{col}'; range = max - min; iqr = Q3 - Q1 "
                "(pandas quantile, linear interpolation)",
                mapping(range=NUMBER, iqr=NUMBER),
                p,
                code,
                ops=["quantile", "max", "min"],
            )
        )
    return out


def _cv_program(cols: list[str], pick: str | None) -> tuple[ReferenceCode, str]:
    p = ReferenceCode().comment("Relative dispersion: coefficient of variation per column")
    p.step(f"num = df[{cols!r}].astype(float)", "numeric_block")
    p.step("cv = num.std() / num.mean().abs()", "cv", ["numeric_block"])
    p.choose("best", "cv.idxmax()", pick, "best_column", ["cv"])
    return p, p.submit('{"column": str(best), "cv": float(cv[best])}')


def highest_cv_column(v: TableView) -> list[Candidate]:
    v.need_numeric(2)
    df = v.frame()
    num = df[v.numeric].astype(float)
    means = num.mean().abs()
    cols = [c for c in v.numeric if means[c] > 1e-9 * max(1.0, float(num[c].abs().max()))]
    v.require(len(cols) >= 2, "needs 2 numeric columns with a non-zero mean")
    cols = cols[:8]
    cv = num[cols].std() / num[cols].mean().abs()
    p, code = _cv_program(cols, None)
    alts = [
        (f"tie: '{c}' has the same coefficient of variation", _cv_program(cols, c)[1])
        for c in v.other_ties(cv)
    ]
    return [
        candidate(
            "highest_cv_column",
            FAMILY,
            "medium",
            f"Among the columns {quoted_list(cols)}, which has the largest "
            "coefficient of variation "
            "(sample standard deviation divided by the absolute mean), and what is it?",
            "cv = std(ddof=1) / |mean| per column, missing values skipped; answer the argmax "
            "column and its cv",
            mapping(column=STRING, cv=NUMBER),
            p,
            code,
            alts,
            ops=["std", "mean", "idxmax"],
        )
    ]


def _top_share_program(col: str, pick: str | None) -> tuple[ReferenceCode, str]:
    p = ReferenceCode().comment(f"Most common level of {col} and its share")
    p.step(f"shares = df[{q(col)}].dropna().astype(str).value_counts(normalize=True)", "shares")
    p.choose("top", "shares.index[0]", pick, "top_level", ["shares"])
    return p, p.submit('{"level": str(top), "share": float(shares[top])}')


def top_category_share(v: TableView) -> list[Candidate]:
    out = []
    for col in v.need_categorical():
        if len(out) >= v.cfg.template.questions_per_template:
            break
        shares = v.frame()[col].dropna().astype(str).value_counts(normalize=True)
        if len(v.ties(shares)) > v.cfg.template.max_column_choices:
            continue  # more equally common values than a record accepts as answers
        p, code = _top_share_program(col, None)
        alts = [
            (f"tie: level '{t}' is as frequent", _top_share_program(col, t)[1])
            for t in v.other_ties(shares)
        ]
        out.append(
            candidate(
                "top_category_share",
                FAMILY,
                "easy",
                f"Which value of '{col}' is the most common, and what share of the non-missing "
                "rows has it?",
                f"value_counts(normalize=True) of non-missing '{col}' (as text); answer the top "
                "level and its share",
                mapping(level=STRING, share=NUMBER),
                p,
                code,
                alts,
                ops=["value_counts"],
            )
        )
    v.require(bool(out), "every categorical column has more tied top values than a record accepts")
    return out


def _group_mean_program(
    cat: str, num: str, levels: list[str], pick: str | None
) -> tuple[ReferenceCode, str]:
    p = ReferenceCode().comment(f"Mean of {num} per level of {cat}, groups of enough size only")
    level_rows(p, cat, [num], levels)
    p.step(
        f"means = sub[{q(num)}].astype(float).groupby(sub[{q(cat)}].astype(str)).mean()",
        "group_means",
        ["kept_rows"],
    )
    p.choose("best", "means.idxmax()", pick, "best_level", ["group_means"])
    return p, p.submit('{"level": str(best), "mean": float(means[best])}')


def group_mean_top_category(v: TableView) -> list[Candidate]:
    nums = v.need_numeric(1)
    out = []
    pairs = [(c, n) for c in v.need_categorical() for n in nums[:2]]
    for cat, num in pairs:
        levels = v.viable_groups(cat, num, 2)
        if not levels:
            continue
        sub = v.level_rows(cat, [num], levels)
        means = sub[num].astype(float).groupby(sub[cat].astype(str)).mean()
        p, code = _group_mean_program(cat, num, levels, None)
        alts = [
            (f"tie: level '{t}' has the same mean", _group_mean_program(cat, num, levels, t)[1])
            for t in v.other_ties(means)
        ]
        min_n = v.cfg.eligibility.min_group_size
        out.append(
            candidate(
                "group_mean_top_category",
                FAMILY,
                "medium",
                f"Which value of '{cat}' has the highest average '{num}'? Only consider values "
                f"with at least {min_n} rows where both are present.",
                f"rows with both '{cat}' and '{num}'; levels with >= {min_n} rows "
                f"({', '.join(levels)}); mean of '{num}' per level; answer argmax level and mean",
                mapping(level=STRING, mean=NUMBER),
                p,
                code,
                alts,
                ops=["dropna", "groupby", "mean", "idxmax"],
            )
        )
        if len(out) >= v.cfg.template.questions_per_template:
            break
    v.require(
        bool(out),
        f"no categorical column has 2 levels of >= {v.cfg.eligibility.min_group_size} rows",
    )
    return out


def _unique_count(v: TableView) -> list[Candidate]:
    """Distinct levels after trimming case and whitespace (easy, multi-step cleaning)."""
    out = []
    for col in v.per_template(v.need_categorical()):
        p = ReferenceCode().comment(f"Distinct values of {col} once case and spacing are ignored")
        p.step(f"raw = df[{q(col)}].dropna().astype(str)", "values")
        p.step("cleaned = raw.str.strip().str.lower()", "cleaned", ["values"])
        p.step("n_levels = cleaned.nunique()", "n_levels", ["cleaned"])
        code = p.submit("int(n_levels)")
        out.append(
            candidate(
                "distinct_levels_clean",
                FAMILY,
                "easy",
                f"How many distinct values does '{col}' have once surrounding spaces and letter "
                "case are ignored (missing values not counted)?",
                f"non-missing '{col}' as text, strip + lower, nunique",
                INTEGER,
                p,
                code,
                ops=["str.strip", "str.lower", "nunique"],
            )
        )
    return out


TEMPLATES = [
    Template("mean_median_gap", FAMILY, "easy", mean_median_gap),
    Template("range_and_iqr", FAMILY, "easy", range_and_iqr),
    Template("highest_cv_column", FAMILY, "medium", highest_cv_column),
    Template("top_category_share", FAMILY, "easy", top_category_share),
    Template("group_mean_top_category", FAMILY, "medium", group_mean_top_category),
    Template("distinct_levels_clean", FAMILY, "easy", _unique_count),
]
