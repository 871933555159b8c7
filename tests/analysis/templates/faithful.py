"""An analyst who reads only the words: the answers a template's question admits.

Each reader takes a question's text and the table and computes, with its own code (never
the template's), every answer the wording admits: for a "which column ..." question the
argmax over every column the words allow (ties included), for a fixed computation its one
value. `check` then demands that each admitted answer is the template's reference answer
or one of its recorded alternatives (issue 24: a template may not narrow its candidates
in code — a cap, a cardinality floor, a dtype filter — unless the wording says so).

The column names come from the question (quoted `'name'`); the identifier clause
("Identifier columns ('id') are not candidates.") is the only exclusion a reader applies
beyond what each wording states.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.procedural.dryrun import run_in_process
from verilearn_assets.core.answers import answers_match, parse_answer

TIE_DIGITS = 10  # the library's default: equal to 10 significant digits is a tie
_ID_CLAUSE = re.compile(r"\s*Identifier columns \((.*?)\) are not candidates\.")
# a quote opening after a non-word character ("column's" is not a name)
_QUOTED = re.compile(r"(?<!\w)'([^']*)'(?!\w)")
Reader = Callable[[str, pd.DataFrame], list[Any]]


# --- reading the words ----------------------------------------------------------------------
def named(question: str) -> list[str]:
    """Quoted column names in the question, in order, the identifier clause left out."""
    return _QUOTED.findall(_ID_CLAUSE.sub("", question))


def identifiers(question: str) -> set[str]:
    m = _ID_CLAUSE.search(question)
    return set(_QUOTED.findall(m.group(1))) if m else set()


def min_rows(question: str) -> int:
    m = re.search(r"at least (\d+)", question)
    assert m, f"no 'at least N rows' in {question!r}"
    return int(m.group(1))


def numeric_columns(df: pd.DataFrame, question: str, but: str) -> list[str]:
    """'Other numeric columns': numbers (not booleans) other than `but` and the stated
    identifiers, with two or more distinct values (a constant has no correlation), and
    sharing enough rows with `but` when the wording says how many."""
    ids = identifiers(question)
    m = re.search(rf"present together with '{re.escape(but)}' on fewer than (\d+) rows", question)
    overlap = int(m.group(1)) if m else 0
    return [
        str(c)
        for c in df.columns
        if c != but
        and c not in ids
        and pd.api.types.is_numeric_dtype(df[c])
        and not pd.api.types.is_bool_dtype(df[c])
        and df[c].nunique() >= 2
        and int((df[c].notna() & df[but].notna()).sum()) >= overlap
    ]


def listed_or_all(question: str, df: pd.DataFrame, target: str) -> list[str]:
    """The candidates a wording lists ("each of 'b', 'c'") or, if it lists none, every
    other numeric column."""
    rest = [n for n in named(question)[1:] if n != target]
    return rest or numeric_columns(df, question, target)


def best(scores: dict[Any, float], largest: bool = True) -> list[Any]:
    """Every label tied for the best score (to TIE_DIGITS significant digits)."""
    kept = {k: float(f"{v:.{TIE_DIGITS}g}") for k, v in scores.items() if np.isfinite(v)}
    assert kept, "no defined score: the table does not exercise this question"
    top = max(kept.values()) if largest else min(kept.values())
    return [k for k, v in kept.items() if v == top]


def quartiles(x: pd.Series) -> tuple[float, float]:
    """Linear interpolation (R type 7), as the wordings state."""
    v = np.sort(x.dropna().to_numpy(dtype=float))
    return float(np.quantile(v, 0.25)), float(np.quantile(v, 0.75))


def as_text(s: pd.Series) -> pd.Series:
    return s.astype(str).where(s.notna())


# --- readers, one per template (variants share their base's) --------------------------------
def _mean_median_gap(q: str, df: pd.DataFrame) -> list[Any]:
    x = df[named(q)[0]].dropna().astype(float)
    return [float(x.mean() - x.median())]


def _range_and_iqr(q: str, df: pd.DataFrame) -> list[Any]:
    x = df[named(q)[0]].dropna().astype(float)
    q1, q3 = quartiles(x)
    return [{"range": float(x.max() - x.min()), "iqr": q3 - q1}]


def _highest_cv(q: str, df: pd.DataFrame) -> list[Any]:
    cv = {c: df[c].astype(float).std() / abs(df[c].astype(float).mean()) for c in named(q)}
    return [{"column": c, "cv": cv[c]} for c in best(cv)]


def _top_share(q: str, df: pd.DataFrame) -> list[Any]:
    x = df[named(q)[0]].dropna().astype(str)
    share = {k: n / len(x) for k, n in x.value_counts().items()}
    return [{"level": k, "share": share[k]} for k in best(share)]


def _group_mean_top(q: str, df: pd.DataFrame) -> list[Any]:
    cat, num = named(q)[:2]
    sub = df[[cat, num]].dropna()
    means = {
        k: float(g[num].astype(float).mean())
        for k, g in sub.groupby(sub[cat].astype(str))
        if len(g) >= min_rows(q)
    }
    return [{"level": k, "mean": means[k]} for k in best(means)]


def _distinct_clean(q: str, df: pd.DataFrame) -> list[Any]:
    return [int(df[named(q)[0]].dropna().astype(str).str.strip().str.lower().nunique())]


def _most_missing(q: str, df: pd.DataFrame) -> list[Any]:
    miss = {str(c): int(df[c].isna().sum()) for c in df.columns}
    return [{"column": c, "missing": miss[c]} for c in best(miss)]


def _duplicates(q: str, df: pd.DataFrame) -> list[Any]:
    cols = named(q) if q.startswith("Looking only at") else list(df.columns)
    seen: set[tuple] = set()
    dup = 0
    for row in df[cols].itertuples(index=False):
        key = tuple("<NA>" if pd.isna(v) else v for v in row)
        dup += key in seen
        seen.add(key)
    return [{"duplicates": dup, "unique_rows": len(df) - dup}]


def _complete_case(q: str, df: pd.DataFrame) -> list[Any]:
    miss, target = named(q)[:2]
    kept = df[df[miss].notna() & df[target].notna()]
    shift = kept[target].astype(float).mean() - df[target].astype(float).mean()
    return [{"rows_kept": len(kept), "shift": float(shift)}]


def _missing_by_group(q: str, df: pd.DataFrame) -> list[Any]:
    cat, col = named(q)[:2]
    sub = df[df[cat].notna()]
    rates = {
        k: float(g[col].isna().mean())
        for k, g in sub.groupby(sub[cat].astype(str))
        if len(g) >= min_rows(q)
    }
    return [{"level": k, "missing_rate": rates[k]} for k in best(rates)]


def _iqr_count(q: str, df: pd.DataFrame) -> list[Any]:
    x = df[named(q)[0]].dropna().astype(float)
    q1, q3 = quartiles(x)
    return [int(((x < q1 - 1.5 * (q3 - q1)) | (x > q3 + 1.5 * (q3 - q1))).sum())]


def _zscore_count(q: str, df: pd.DataFrame) -> list[Any]:
    x = df[named(q)[0]].dropna().astype(float)
    n = int((((x - x.mean()) / x.std(ddof=1)).abs() > 3).sum())
    return [{"count": n, "share": n / len(x)}]


def _trimming(q: str, df: pd.DataFrame) -> list[Any]:
    x = df[named(q)[0]].dropna().astype(float).to_numpy()
    rounds = 0
    while len(x) > 2 and rounds < 50:
        sd = x.std(ddof=1)
        z = (x - x.mean()) / sd if sd > 0 else np.zeros_like(x)
        if not (np.abs(z) > 3).any():
            break
        x = x[np.abs(z) <= 3]
        rounds += 1
    return [{"rounds": rounds, "remaining": len(x), "mean": float(x.mean())}]


def _iqr_shift(q: str, df: pd.DataFrame) -> list[Any]:
    x = df[named(q)[0]].dropna().astype(float)
    q1, q3 = quartiles(x)
    inside = x[(x >= q1 - 1.5 * (q3 - q1)) & (x <= q3 + 1.5 * (q3 - q1))]
    return [float(inside.mean() - x.mean())]


def _pair_r(df: pd.DataFrame, a: str, b: str, method: str = "pearson") -> float:
    pair = df[[a, b]].dropna().astype(float)
    if len(pair) < 2 or pair[a].nunique() < 2 or pair[b].nunique() < 2:
        return float("nan")
    if method == "spearman":
        return float(stats.spearmanr(pair[a], pair[b]).statistic)
    return float(np.corrcoef(pair[a], pair[b])[0, 1])


def _strongest_pair(q: str, df: pd.DataFrame) -> list[Any]:
    cols = named(q)
    r = {(a, b): _pair_r(df, a, b) for i, a in enumerate(cols) for b in cols[i + 1 :]}
    return [{"columns": sorted(p), "r": r[p]} for p in best({p: abs(v) for p, v in r.items()})]


def _spearman(q: str, df: pd.DataFrame) -> list[Any]:
    target = named(q)[0]
    rho = {c: _pair_r(df, c, target, "spearman") for c in listed_or_all(q, df, target)}
    return [{"column": c, "rho": rho[c]} for c in best({c: abs(v) for c, v in rho.items()})]


def _outlier_corr(q: str, df: pd.DataFrame) -> list[Any]:
    x, y = named(q)[:2]
    pair = df[[x, y]].dropna().astype(float)
    keep = pd.Series(True, index=pair.index)
    for c in (x, y):
        q1, q3 = quartiles(pair[c])
        keep &= (pair[c] >= q1 - 1.5 * (q3 - q1)) & (pair[c] <= q3 + 1.5 * (q3 - q1))
    clean = pair[keep]
    return [
        {
            "r_before": float(np.corrcoef(pair[x], pair[y])[0, 1]),
            "r_after": float(np.corrcoef(clean[x], clean[y])[0, 1]),
            "rows_removed": int(len(pair) - len(clean)),
        }
    ]


def _log_change(q: str, df: pd.DataFrame) -> list[Any]:
    m = re.search(r"with '([^']*)'", q)  # "correlation with 'T'" / "Pearson r with 'T'"
    assert m, q
    target = m.group(1)
    listed = [n for n in named(q) if n != target] if q.startswith("For each of") else []
    cols = listed or [c for c in numeric_columns(df, q, target) if df[c].min() > 0]
    change = {}
    for c in cols:
        pair = df[[c, target]].dropna().astype(float)
        change[c] = float(
            np.corrcoef(np.log(pair[c]), np.log(pair[target]))[0, 1]
            - np.corrcoef(pair[c], pair[target])[0, 1]
        )
    return [
        {"column": c, "change": change[c]} for c in best({c: abs(v) for c, v in change.items()})
    ]


def _single_predictor(q: str, df: pd.DataFrame) -> list[Any]:
    target = named(q)[0]
    r2 = {}
    for c in listed_or_all(q, df, target):
        pair = df[[c, target]].dropna().astype(float)
        if pair[c].nunique() >= 2:
            r2[c] = float(stats.linregress(pair[c], pair[target]).rvalue ** 2)
    return [{"predictor": c, "r_squared": r2[c]} for c in best(r2)]


def _two_predictors(q: str, df: pd.DataFrame) -> list[Any]:
    listed = _QUOTED.findall(q.split("take the two")[0])
    m = re.search(r"correlation with '([^']*)'", q)
    assert m, q
    target = m.group(1)
    r = {c: abs(_pair_r(df, c, target)) for c in listed}
    top = sorted(r, key=lambda c: -r[c])[:2]
    data = df[[*top, target]].dropna().astype(float)
    x = np.column_stack([np.ones(len(data)), data[top].to_numpy()])
    y = data[target].to_numpy()
    resid = y - x @ np.linalg.lstsq(x, y, rcond=None)[0]
    r2 = 1 - (resid**2).sum() / ((y - y.mean()) ** 2).sum()
    n, k = len(y), 2
    return [
        {
            "predictors": sorted(top),
            "r_squared": r2,
            "adj_r_squared": 1 - (1 - r2) * (n - 1) / (n - k - 1),
        }
    ]


def _groups_of(df: pd.DataFrame, cat: str, num: str) -> tuple[pd.Series, pd.Series]:
    """`num` in the alphabetically first and second level (as text) of two-valued `cat`."""
    sub = df[[cat, num]].dropna()
    labels = sub[cat].astype(str)
    first, second = sorted(labels.unique())
    return sub.loc[labels == first, num].astype(float), sub.loc[labels == second, num].astype(float)


def _ttest(q: str, df: pd.DataFrame) -> list[Any]:
    """Every column with exactly two values is "the column" a reader may find; the
    method-explicit wording names Welch, the others admit it (Student is an alternative)."""
    num = named(q)[0]
    out = []
    for c in df.columns:
        if c != num and df[c].nunique() == 2:
            a, b = _groups_of(df, c, num)
            res = stats.ttest_ind(a, b, equal_var=False)
            out.append({"statistic": float(res.statistic), "p_value": float(res.pvalue)})
    return out


def _mann_whitney(q: str, df: pd.DataFrame) -> list[Any]:
    num, cat = named(q)[:2]
    res = stats.mannwhitneyu(*_groups_of(df, cat, num), alternative="two-sided")
    return [{"u_statistic": float(res.statistic), "p_value": float(res.pvalue)}]


def _level_groups(q: str, df: pd.DataFrame, num: str, cat: str) -> list[pd.Series]:
    sub = df[[cat, num]].dropna()
    return [
        g[num].astype(float) for _, g in sub.groupby(sub[cat].astype(str)) if len(g) >= min_rows(q)
    ]


def _anova(q: str, df: pd.DataFrame) -> list[Any]:
    num, cat = named(q)[:2]
    groups = _level_groups(q, df, num, cat)
    y = pd.concat(groups)
    eta = sum(len(g) * (g.mean() - y.mean()) ** 2 for g in groups) / ((y - y.mean()) ** 2).sum()
    res = stats.f_oneway(*groups)
    return [{"f_statistic": res.statistic, "p_value": res.pvalue, "eta_squared": eta}]


def _levene(q: str, df: pd.DataFrame) -> list[Any]:
    num, cat = named(q)[:2]
    res = stats.levene(*_level_groups(q, df, num, cat), center="median")
    return [
        {"statistic": res.statistic, "p_value": res.pvalue, "equal_variances": res.pvalue > 0.05}
    ]


def _chi2(q: str, df: pd.DataFrame) -> list[Any]:
    a, b = named(q)[:2]
    res = stats.chi2_contingency(pd.crosstab(as_text(df[a]), as_text(df[b])))
    return [{"chi2": res.statistic, "dof": int(res.dof), "p_value": res.pvalue}]


def _ks(q: str, df: pd.DataFrame) -> list[Any]:
    x = df[named(q)[0]].dropna().astype(float)
    res = stats.kstest((x - x.mean()) / x.std(ddof=1), "norm")
    return [{"statistic": res.statistic, "p_value": res.pvalue}]


def _shapiro(q: str, df: pd.DataFrame) -> list[Any]:
    res = stats.shapiro(df[named(q)[0]].dropna().astype(float))
    return [
        {"statistic": res.statistic, "p_value": res.pvalue, "normal_at_5pct": res.pvalue > 0.05}
    ]


def _conditional_normality(q: str, df: pd.DataFrame) -> list[Any]:
    cat, num = named(q)[:2]
    sub = df[[cat, num]].dropna()
    return [
        {
            k: bool(stats.shapiro(g[num].astype(float)).pvalue > 0.05)
            for k, g in sub.groupby(sub[cat].astype(str))
            if len(g) >= min_rows(q)
        }
    ]


def _bootstrap(q: str, df: pd.DataFrame) -> list[Any]:
    x = df[named(q)[0]].dropna().astype(float).to_numpy()
    rng = np.random.default_rng(0)
    boot = [rng.choice(x, size=len(x), replace=True).mean() for _ in range(1000)]
    lower, upper = np.percentile(boot, [2.5, 97.5])
    return [{"lower": lower, "upper": upper}]


def _binning(q: str, df: pd.DataFrame) -> list[Any]:
    x, y = named(q)[:2]
    bins = pd.qcut(df[x].astype(float), 4, labels=["Q1", "Q2", "Q3", "Q4"])
    means = df[y].astype(float).groupby(bins, observed=False).mean()
    return [{**{k: float(means[k]) for k in means.index}, "q4_minus_q1": means["Q4"] - means["Q1"]}]


def _impute_spread(q: str, df: pd.DataFrame) -> list[Any]:
    x = df[named(q)[0]].astype(float)
    return [
        {
            "std_observed": x.std(),
            "std_mean_imputed": x.fillna(x.mean()).std(),
            "std_median_imputed": x.fillna(x.median()).std(),
        }
    ]


def _impute_group(q: str, df: pd.DataFrame) -> list[Any]:
    col, _, cat = named(q)[:3]
    x = df[col].astype(float)
    filled = x.copy()
    medians = x.groupby(as_text(df[cat])).median()
    for i in x.index[x.isna()]:
        key = as_text(df[cat])[i]
        m = medians.get(key, np.nan) if isinstance(key, str) else np.nan
        filled[i] = m if np.isfinite(m) else x.median()
    return [
        {
            "mean_observed": x.mean(),
            "mean_imputed": filled.mean(),
            "change": filled.mean() - x.mean(),
        }
    ]


def _segment_corr(q: str, df: pd.DataFrame) -> list[Any]:
    cat, x, y = named(q)[:3]
    sizes = as_text(df[cat]).value_counts()
    out = []
    for seg in best({k: float(n) for k, n in sizes.items()}):
        part = df[as_text(df[cat]) == seg]
        out.append({"segment": seg, "r": _pair_r(part, x, y)})
    return out


def _steepest(q: str, df: pd.DataFrame) -> list[Any]:
    cat, y, x = named(q)[:3]
    sub = df[[cat, x, y]].dropna()
    slopes = {
        k: float(stats.linregress(g[x].astype(float), g[y].astype(float)).slope)
        for k, g in sub.groupby(sub[cat].astype(str))
        if len(g) >= min_rows(q) and g[x].nunique() > 1
    }
    return [{"segment": k, "slope": slopes[k]} for k in best(slopes)]


def _adaptive(q: str, df: pd.DataFrame) -> list[Any]:
    num, cat = named(q)[:2]
    a, b = _groups_of(df, cat, num)
    if not (stats.shapiro(a).pvalue > 0.05 and stats.shapiro(b).pvalue > 0.05):
        method, res = "mann-whitney", stats.mannwhitneyu(a, b, alternative="two-sided")
    elif stats.levene(a, b, center="median").pvalue > 0.05:
        method, res = "student", stats.ttest_ind(a, b, equal_var=True)
    else:
        method, res = "welch", stats.ttest_ind(a, b, equal_var=False)
    return [{"method": method, "p_value": float(res.pvalue)}]


READERS: dict[str, Reader] = {
    "mean_median_gap": _mean_median_gap,
    "range_and_iqr": _range_and_iqr,
    "highest_cv_column": _highest_cv,
    "top_category_share": _top_share,
    "group_mean_top_category": _group_mean_top,
    "distinct_levels_clean": _distinct_clean,
    "most_missing_column": _most_missing,
    "duplicate_rows": _duplicates,
    "complete_case_shift": _complete_case,
    "missing_rate_by_group": _missing_by_group,
    "iqr_outlier_count": _iqr_count,
    "zscore_outlier_count": _zscore_count,
    "iterative_trimming": _trimming,
    "iqr_trimmed_mean_shift": _iqr_shift,
    "pearson_strongest_pair": _strongest_pair,
    "spearman_rank_correlation": _spearman,
    "correlation_after_outlier_removal": _outlier_corr,
    "correlation_change_analysis": _log_change,
    "ttest_discovered_groups": _ttest,
    "mann_whitney_groups": _mann_whitney,
    "anova_effect_size": _anova,
    "levene_variance_test": _levene,
    "chi2_independence": _chi2,
    "ks_normality_test": _ks,
    "shapiro_normality": _shapiro,
    "conditional_normality": _conditional_normality,
    "regression_most_predictive": _single_predictor,
    "multiple_regression_top_predictors": _two_predictors,
    "bootstrap_mean_ci": _bootstrap,
    "quantile_binning": _binning,
    "imputation_mean_vs_median": _impute_spread,
    "imputation_group_median_effect": _impute_group,
    "segment_then_correlate": _segment_corr,
    "segment_steepest_slope": _steepest,
    "adaptive_two_sample_test": _adaptive,
}


def reader_for(template: str) -> Reader | None:
    """A variant (`base__variant`) is read by its base's reader: the same computation."""
    return READERS.get(template.split("__", 1)[0])


def _json(value: Any) -> Any:
    import json

    return parse_answer(json.dumps(value, default=lambda o: o.item()))  # numpy scalars


def unfaithful(cand: Candidate, df: pd.DataFrame) -> list[str]:
    """The admitted answers that neither the reference nor an alternative gives: each
    one is a reading of the words the template's code does not consider."""
    reader = reader_for(cand.template or "")
    assert reader is not None, f"no reader for template {cand.template!r}"
    given = [_json(run_in_process(cand.code, df))]
    given += [_json(run_in_process(a.code, df)) for a in cand.alternatives]
    missing = []
    for want in reader(cand.question, df):
        want = _json(want)
        if not any(answers_match(want, got, cand.answer_schema) for got in given):
            missing.append(f"{want} (template gives {given[0]})")
    return missing
