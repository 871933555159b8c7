"""Regression: the single most predictive column, and a multiple regression on the top
predictors.

`regression_most_predictive` has three wordings like the correlation templates: base
(ambiguous about rows: pairwise-complete or complete cases over every candidate — both are
accepted), exclude-target, and method-explicit.
"""

from __future__ import annotations

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.template.base import (
    STAT,
    STRING,
    VARIANTS,
    AnswerSchema,
    ReferenceCode,
    TableView,
    Template,
    candidate,
    mapping,
    q,
    quoted_list,
    variant_name,
    variant_template,
)

FAMILY = "regression"


def _r2_program(
    target: str, cols: list[str], listwise: bool, pick: str | None
) -> tuple[ReferenceCode, str]:
    p = ReferenceCode().comment(f"R^2 of a simple linear regression of {target} on each column")
    if listwise:
        p.step(f"block = df[{cols + [target]!r}].dropna().astype(float)", "complete_rows")
    else:
        p.step(f"block = df[{cols + [target]!r}].astype(float)", "numeric_block")
    p.line(
        "r2 = {}\n"
        f"for col in {cols!r}:\n"
        f"    pair = block[[col, {q(target)}]].dropna()\n"
        "    if pair[col].nunique() < 2:  # a constant predictor has no line to fit\n"
        "        continue\n"
        f"    fit = stats.linregress(pair[col], pair[{q(target)}])\n"
        "    r2[col] = fit.rvalue ** 2"
    )
    p.step("r2 = pd.Series(r2)", "r_squared")
    p.choose("best", "r2.idxmax()", pick, "best_predictor", ["r_squared"])
    return p, p.submit('{"predictor": str(best), "r_squared": float(r2[best])}')


def _r2_scores(v: TableView, target: str, cols: list[str], listwise: bool):
    block = v.frame()[cols + [target]].astype(float)
    if listwise:
        block = block.dropna()
    corr = block[cols].corrwith(block[target])
    return corr**2


def _regression(variant: str) -> Template:
    name = variant_name("regression_most_predictive", variant)

    def build(v: TableView) -> list[Candidate]:
        nums = v.need_numeric(3)
        out = []
        for target in nums:  # the first targets that give a question
            if len(out) >= v.cfg.template.questions_per_template:
                break
            # every other numeric column, as the wording says: no cap, no cardinality floor
            cols, thin = v.supported(target, [c for c in v.numeric_any if c != target])
            if not cols:
                continue
            readings = [(False, "pairwise-complete rows", _r2_scores(v, target, cols, False))]
            if variant != "method_explicit":  # explicit wording: pairwise-complete rows
                readings.append(
                    (
                        True,
                        "rows complete in every candidate column",
                        _r2_scores(v, target, cols, True),
                    )
                )
            p, code = _r2_program(target, cols, False, None)
            alts = [
                (desc, _r2_program(target, cols, listwise, t)[1])
                for listwise, desc, t in v.reading_ties(readings)
            ]
            listed = quoted_list(cols)
            question = {
                "base": f"Which other single numeric column best predicts '{target}' in a "
                f"simple linear regression, and what R^2 does it reach?{v.id_clause()}{thin}",
                "exclude_target": f"Not counting '{target}' itself, which single numeric "
                f"column best predicts '{target}' with a one-predictor "
                f"linear regression, and what is its R^2?{v.id_clause()}{thin}",
                "method_explicit": f"Fit an ordinary least squares line (with intercept) of "
                f"'{target}' on each of {listed} separately, using the rows "
                "where both values are present. Which predictor gives the "
                "highest R^2, and what is it?",
            }[variant]
            out.append(
                candidate(
                    name,
                    FAMILY,
                    "medium",
                    question,
                    f"candidates {cols}; per candidate OLS with intercept on pairwise-complete "
                    "rows (scipy.stats.linregress); R^2 = r^2; argmax",
                    mapping(predictor=STRING, r_squared=STAT),
                    p,
                    code,
                    alts,
                    ops=["linregress", "loop", "idxmax"],
                )
            )
        return out

    return variant_template(
        "regression_most_predictive",
        variant,
        FAMILY,
        "medium",
        build,
        excludes=(("rows complete in every candidate column", "where both values are present"),),
    )


def _multi_program(
    target: str, cols: list[str], pick: tuple[str, str] | None
) -> tuple[ReferenceCode, str]:
    p = ReferenceCode().line("import statsmodels.api as sm")
    p.comment(f"Pick the two columns most correlated with {target}, then fit OLS")
    p.step(
        f"r = df[{cols!r}].astype(float).corrwith(df[{q(target)}].astype(float)).abs()",
        "abs_correlations",
    )
    if pick is None:
        p.step(
            "top = list(r.sort_values(ascending=False, kind='stable').index[:2])",
            "top_predictors",
            ["abs_correlations"],
        )
    else:
        p.step(f"top = {list(pick)!r}", "top_predictors", ["abs_correlations"])
    p.step(
        f"data = df[top + [{q(target)}]].dropna().astype(float)", "model_rows", ["top_predictors"]
    )
    p.step(
        f"model = sm.OLS(data[{q(target)}], sm.add_constant(data[top])).fit()",
        "ols_fit",
        ["model_rows"],
    )
    return p, p.submit(
        '{"predictors": sorted(top), "r_squared": float(model.rsquared), '
        '"adj_r_squared": float(model.rsquared_adj)}'
    )


def multiple_regression_top_predictors(v: TableView) -> list[Candidate]:
    nums = v.need_numeric(3)
    target = nums[0]
    cols = [c for c in nums if c != target][:8]
    df = v.frame()
    r = df[cols].astype(float).corrwith(df[target].astype(float)).abs()
    ranked = r.sort_values(ascending=False, kind="stable")
    v.require(ranked.notna().sum() >= 2, "fewer than two defined correlations with the target")
    p, code = _multi_program(target, cols, None)
    # a tie at the second place makes several top-2 sets valid
    rounded = v.rounded(ranked.dropna())
    second = rounded.iloc[1]
    first = rounded.index[0]
    tied_second = [c for c in rounded.index[1:] if rounded[c] == second]
    if rounded.iloc[0] == second:
        tied_second = [c for c in rounded.index if rounded[c] == second]
        pairs = [(a, b) for i, a in enumerate(tied_second) for b in tied_second[i + 1 :]]
    else:
        pairs = [(first, b) for b in tied_second]
    v.require(
        len(pairs) <= v.cfg.template.max_column_choices,
        f"{len(pairs)} predictor pairs tie, more than a record accepts",
    )
    alts = [
        (f"tie: predictors {sorted(pr)}", _multi_program(target, cols, pr)[1]) for pr in pairs[1:]
    ]
    listed = quoted_list(cols)
    return [
        candidate(
            "multiple_regression_top_predictors",
            FAMILY,
            "hard",
            f"Of {listed}, take the two columns with the strongest absolute Pearson correlation "
            f"with '{target}' and fit a linear regression of '{target}' on both (with intercept, "
            "rows complete in all three). Which predictors are they, and what are R^2 and "
            "adjusted R^2?",
            "|corrwith| pairwise-complete; top 2; statsmodels OLS with constant on complete rows",
            mapping(
                predictors=AnswerSchema(kind="list", items=STRING, ordered=False),
                r_squared=STAT,
                adj_r_squared=STAT,
            ),
            p,
            code,
            alts,
            ops=["corrwith", "sort_values", "ols"],
        )
    ]


TEMPLATES = [
    *(_regression(variant) for variant in VARIANTS),
    Template(
        "multiple_regression_top_predictors", FAMILY, "hard", multiple_regression_top_predictors
    ),
]
