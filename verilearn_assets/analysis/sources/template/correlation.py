"""Correlation: strongest pair, rank correlation with a target, robustness to outliers,
and how correlations move under a log transform.

`spearman_rank_correlation` and `correlation_change_analysis` come in three wordings: the
base question (ambiguous where a person would be: its alternatives accept each reading),
an *exclude-target* wording that says the target itself is not a candidate, and a
*method-explicit* wording that names the exact method so only ties remain open.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

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

FAMILY = "correlation"
PAIR = AnswerSchema(kind="list", items=STRING, ordered=False)


def _pair_program(cols: list[str], pick: tuple[str, str] | None) -> tuple[ReferenceCode, str]:
    p = ReferenceCode().comment("Pairwise Pearson correlations; strongest by absolute value")
    p.step(f"corr = df[{cols!r}].astype(float).corr(method='pearson')", "corr_matrix")
    p.step(
        "pairs = corr.where(np.triu(np.ones(corr.shape, dtype=bool), k=1)).stack()",
        "upper_pairs",
        ["corr_matrix"],
    )
    if pick is None:
        p.step("a, b = pairs.abs().idxmax()", "best_pair", ["upper_pairs"])
    else:
        p.step(f"a, b = {pick[0]!r}, {pick[1]!r}", "best_pair", ["upper_pairs"])
    return p, p.submit('{"columns": sorted([str(a), str(b)]), "r": float(corr.loc[a, b])}')


def pearson_strongest_pair(v: TableView) -> list[Candidate]:
    cols = v.need_numeric(2)[:8]
    corr = v.frame()[cols].astype(float).corr(method="pearson")
    pairs = corr.where(np.triu(np.ones(corr.shape, dtype=bool), k=1)).stack()
    v.require(not pairs.dropna().empty, "no pair of numeric columns has a defined correlation")
    p, code = _pair_program(cols, None)
    alts = [
        (f"tie: pair {t} is as strongly correlated", _pair_program(cols, t)[1])
        for t in v.other_ties(pairs.abs())
    ]
    return [
        candidate(
            "pearson_strongest_pair",
            FAMILY,
            "medium",
            f"Among {quoted_list(cols)}, which two columns are most strongly correlated "
            "(Pearson, by "
            "absolute value), and what is their correlation?",
            "pandas corr(method='pearson') with pairwise-complete rows; argmax |r| over pairs "
            "i<j; answer the pair (sorted) and signed r",
            mapping(columns=PAIR, r=STAT),
            p,
            code,
            alts,
            ops=["corr", "abs", "idxmax"],
        )
    ]


# --- rank correlation with a target ---------------------------------------------------
def _spearman_program(
    target: str, cols: list[str], signed: bool, pick: str | None
) -> tuple[ReferenceCode, str]:
    p = ReferenceCode().comment(f"Spearman rank correlation of each column with {target}")
    p.step(
        f"rho = df[{cols!r}].astype(float).corrwith(df[{q(target)}].astype(float), "
        "method='spearman')",
        "rho",
    )
    score = "rho" if signed else "rho.abs()"
    p.choose("best", f"{score}.idxmax()", pick, "best_column", ["rho"])
    return p, p.submit('{"column": str(best), "rho": float(rho[best])}')


def _spearman_scores(v: TableView, target: str, cols: list[str]) -> pd.Series:
    df = v.frame()
    return df[cols].astype(float).corrwith(df[target].astype(float), method="spearman")


def _spearman(variant: str) -> Template:
    name = variant_name("spearman_rank_correlation", variant)

    def build(v: TableView) -> list[Candidate]:
        nums = v.need_numeric(3)
        out = []
        for target in nums:
            if len(out) >= v.cfg.template.questions_per_template:
                break
            # every other numeric column, as the wording says: no cap, no cardinality floor
            cols, thin = v.supported(target, [c for c in v.numeric_any if c != target])
            rho = _spearman_scores(v, target, cols)
            if rho.dropna().empty:
                continue
            if (v.rounded(rho.abs().dropna()) >= 1).any():
                continue  # a monotone function of the target (its log): rho is 1 by construction
            readings = [(False, "strongest by absolute rho", rho.abs())]
            if variant != "method_explicit":  # explicit wording: largest absolute rho
                readings.append((True, "strongest read as the largest positive rho", rho))
            p, code = _spearman_program(target, cols, False, None)
            alts = [
                (desc, _spearman_program(target, cols, signed, t)[1])
                for signed, desc, t in v.reading_ties(readings)
            ]
            listed = quoted_list(cols)
            question = {
                "base": f"Which other numeric column has the strongest rank correlation with "
                f"'{target}', and what is the correlation?{v.id_clause()}{thin}",
                "exclude_target": f"Excluding '{target}' itself, which of the other numeric "
                f"columns has the strongest Spearman rank correlation with "
                f"'{target}', and what is it?{v.id_clause()}{thin}",
                "method_explicit": f"Compute Spearman's rho between '{target}' and each of "
                f"{listed} (pairwise-complete rows). Which column has the "
                "largest absolute rho, and what is its signed value?",
            }[variant]
            out.append(
                candidate(
                    name,
                    FAMILY,
                    "medium",
                    question,
                    f"candidates {cols}; Spearman rho with '{target}' on pairwise-complete rows; "
                    "argmax |rho|; answer column and signed rho",
                    mapping(column=STRING, rho=STAT),
                    p,
                    code,
                    alts,
                    ops=["rank", "corrwith", "idxmax"],
                )
            )
        v.require(bool(out), "no defined rank correlation with any target")
        return out

    return variant_template(
        "spearman_rank_correlation",
        variant,
        FAMILY,
        "medium",
        build,
        excludes=(("strongest read as the largest positive rho", "largest absolute rho"),),
    )


# --- correlation after removing outliers -------------------------------------------------
def correlation_after_outlier_removal(v: TableView) -> list[Candidate]:
    x, y = v.need_numeric(2)[:2]
    p = ReferenceCode().comment(f"Pearson r of {x} and {y}, before and after dropping IQR outliers")
    p.step(f"pair = df[[{q(x)}, {q(y)}]].dropna().astype(float)", "pair_rows")
    p.step(f"r_before = pair[{q(x)}].corr(pair[{q(y)}])", "r_before", ["pair_rows"])
    p.step("q1, q3 = pair.quantile(0.25), pair.quantile(0.75)", "quartiles", ["pair_rows"])
    p.step("iqr = q3 - q1", "iqr", ["quartiles"])
    p.step(
        "inside = ((pair >= q1 - 1.5 * iqr) & (pair <= q3 + 1.5 * iqr)).all(axis=1)",
        "inside_mask",
        ["iqr"],
    )
    p.step("clean = pair[inside]", "clean_rows", ["inside_mask"])
    p.step(f"r_after = clean[{q(x)}].corr(clean[{q(y)}])", "r_after", ["clean_rows"])
    code = p.submit(
        '{"r_before": float(r_before), "r_after": float(r_after), '
        '"rows_removed": int(len(pair) - len(clean))}'
    )
    return [
        candidate(
            "correlation_after_outlier_removal",
            FAMILY,
            "medium",
            f"What is the Pearson correlation between '{x}' and '{y}' before and after removing "
            "rows where either value is a 1.5 x IQR outlier (quartiles by linear interpolation), "
            "and how many rows are removed?",
            "rows with both present; Tukey fences per column (pandas quantile); drop rows outside "
            "either fence; Pearson r before/after and rows removed",
            mapping(r_before=STAT, r_after=STAT, rows_removed=AnswerSchema(kind="integer")),
            p,
            code,
            ops=["corr", "quantile", "filter"],
        )
    ]


# --- correlation change under a log transform ------------------------------------------------
def _log_change_program(
    target: str, cols: list[str], fn: str, pick: str | None
) -> tuple[ReferenceCode, str]:
    p = ReferenceCode().comment(f"Pearson r with {target} on raw and {fn}-transformed values")
    p.step(f"block = df[{cols + [target]!r}].astype(float)", "numeric_block")
    p.step(f"r_raw = block[{cols!r}].corrwith(block[{q(target)}])", "r_raw", ["numeric_block"])
    p.step(f"logged = {fn}(block)", "logged", ["numeric_block"])
    p.step(f"r_log = logged[{cols!r}].corrwith(logged[{q(target)}])", "r_log", ["logged"])
    p.step("change = r_log - r_raw", "change", ["r_raw", "r_log"])
    p.choose("best", "change.abs().idxmax()", pick, "best_column", ["change"])
    return p, p.submit('{"column": str(best), "change": float(change[best])}')


def _log_change_scores(v: TableView, target: str, cols: list[str], fn) -> pd.Series:
    block = v.frame()[cols + [target]].astype(float)
    logged = fn(block)
    return logged[cols].corrwith(logged[target]) - block[cols].corrwith(block[target])


def _corr_change(variant: str) -> Template:
    name = variant_name("correlation_change_analysis", variant)

    def build(v: TableView) -> list[Candidate]:
        pos = v.positive
        v.require(len(pos) >= 3, f"needs 3 strictly positive numeric columns, found {len(pos)}")
        out = []
        for target in pos:  # the first targets that give a question
            if len(out) >= v.cfg.template.questions_per_template:
                break
            # every other positive numeric column, as the wording says: no cap, no floor
            cols, thin = v.supported(target, [c for c in v.positive_any if c != target])
            change = _log_change_scores(v, target, cols, np.log)
            if change.dropna().empty:
                continue
            readings = [("np.log", "natural log", change.abs())]
            if variant != "method_explicit":  # explicit wording: natural log, np.log
                readings.append(
                    (
                        "np.log1p",
                        "log read as log(1 + x)",
                        _log_change_scores(v, target, cols, np.log1p).abs(),
                    )
                )
            p, code = _log_change_program(target, cols, "np.log", None)
            alts = [
                (desc, _log_change_program(target, cols, fn, t)[1])
                for fn, desc, t in v.reading_ties(readings)
            ]
            listed = quoted_list(cols)
            question = {
                "base": f"Which other positive numeric column's correlation with '{target}' "
                "changes the most when both are log-transformed, and by how much does it "
                f"change?{v.id_clause()}{thin}",
                "exclude_target": f"Leaving '{target}' itself out, which other positive "
                f"numeric column's Pearson correlation with '{target}' "
                "changes most after log-transforming both, and what is the "
                f"change?{v.id_clause()}{thin}",
                "method_explicit": f"For each of {listed}, compute Pearson r with '{target}' "
                "on raw values and on natural-log values (np.log of both). "
                "Which column has the largest |r_log - r_raw|, and what is "
                "r_log - r_raw?",
            }[variant]
            out.append(
                candidate(
                    name,
                    FAMILY,
                    "hard",
                    question,
                    f"candidates {cols}; Pearson r with '{target}' raw and after np.log; change = "
                    "r_log - r_raw; argmax |change|; answer column and signed change",
                    mapping(column=STRING, change=STAT),
                    p,
                    code,
                    alts,
                    ops=["log", "corrwith", "subtract", "idxmax"],
                )
            )
        v.require(bool(out), "no defined correlation change")
        return out

    return variant_template(
        "correlation_change_analysis",
        variant,
        FAMILY,
        "hard",
        build,
        excludes=(("log read as log(1 + x)", "natural-log values (np.log"),),
    )


TEMPLATES = [
    Template("pearson_strongest_pair", FAMILY, "medium", pearson_strongest_pair),
    *(_spearman(variant) for variant in VARIANTS),
    Template(
        "correlation_after_outlier_removal", FAMILY, "medium", correlation_after_outlier_removal
    ),
    *(_corr_change(variant) for variant in VARIANTS),
]
