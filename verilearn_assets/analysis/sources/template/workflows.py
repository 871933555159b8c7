"""Multi-step workflows: bootstrap intervals, quantile binning, imputation effects,
segment-then-analyze, and an adaptive two-sample test that picks its method from evidence."""

from __future__ import annotations

import pandas as pd
from scipy import stats

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.template.base import (
    NUMBER,
    PVALUE,
    STAT,
    STRING,
    NotApplicable,
    ReferenceCode,
    TableView,
    Template,
    candidate,
    mapping,
    q,
    text_col,
)
from verilearn_assets.analysis.sources.template.groups import binary_splits
from verilearn_assets.analysis.sources.template.steps import level_rows, two_groups

BOOT = 1000


def bootstrap_mean_ci(v: TableView) -> list[Candidate]:
    out = []
    for col in v.per_template(v.need_numeric(1)):
        p = ReferenceCode().comment(f"Percentile bootstrap of the mean of {col} (seeded)")
        p.step(f"x = df[{q(col)}].dropna().astype(float).to_numpy()", "values")
        p.step("rng = np.random.default_rng(0)", "rng")
        p.step(
            f"boot = np.array([rng.choice(x, size=len(x), replace=True).mean() "
            f"for _ in range({BOOT})])",
            "boot_means",
            ["values", "rng"],
        )
        p.step("lower, upper = np.percentile(boot, [2.5, 97.5])", "interval", ["boot_means"])
        code = p.submit('{"lower": float(lower), "upper": float(upper)}')
        out.append(
            candidate(
                "bootstrap_mean_ci",
                "bootstrap",
                "medium",
                "What is the 95% percentile bootstrap confidence interval for the mean of "
                f"'{col}', from {BOOT} resamples of the non-missing values drawn with "
                "np.random.default_rng(0) via rng.choice(x, size=len(x), replace=True), one after "
                "another, as the 2.5th and 97.5th percentiles of the resampled means?",
                f"x = non-missing '{col}' as array; rng = default_rng(0); {BOOT} x "
                "rng.choice(x, len(x)).mean(); np.percentile [2.5, 97.5]",
                mapping(lower=NUMBER, upper=NUMBER),
                p,
                code,
                ops=["resample", "percentile"],
            )
        )
    return out


def quantile_binning(v: TableView) -> list[Candidate]:
    nums = v.need_numeric(2)
    df = v.frame()
    for x in nums:
        try:
            bins = pd.qcut(df[x].astype(float), 4, labels=["Q1", "Q2", "Q3", "Q4"])
        except ValueError:
            continue  # repeated quantile edges: quartiles are not defined
        y = next(c for c in nums if c != x)
        counts = df[y].notna().groupby(bins, observed=False).sum()
        if (counts == 0).any():
            continue
        p = ReferenceCode().comment(f"Mean of {y} within quartile bins of {x}")
        p.step(
            f"bins = pd.qcut(df[{q(x)}].astype(float), 4, labels=['Q1', 'Q2', 'Q3', 'Q4'])",
            "quartile_bins",
        )
        p.step(
            f"means = df[{q(y)}].astype(float).groupby(bins, observed=False).mean()",
            "bin_means",
            ["quartile_bins"],
        )
        p.step("spread = means['Q4'] - means['Q1']", "top_minus_bottom", ["bin_means"])
        code = p.submit(
            '{"Q1": float(means["Q1"]), "Q2": float(means["Q2"]), '
            '"Q3": float(means["Q3"]), "Q4": float(means["Q4"]), '
            '"q4_minus_q1": float(spread)}'
        )
        return [
            candidate(
                "quantile_binning",
                "binning",
                "medium",
                f"Split the rows into quartiles of '{x}' (Q1 lowest; edges by linear "
                f"interpolation, as pandas qcut). What is the mean of '{y}' in each quartile, "
                "and the difference between the top and bottom quartile?",
                f"pd.qcut('{x}', 4, labels Q1..Q4); mean of '{y}' per bin; Q4 - Q1",
                mapping(Q1=NUMBER, Q2=NUMBER, Q3=NUMBER, Q4=NUMBER, q4_minus_q1=NUMBER),
                p,
                code,
                ops=["qcut", "groupby", "mean"],
            )
        ]
    raise NotApplicable("no numeric column with four distinct quartile bins")


def imputation_mean_vs_median(v: TableView) -> list[Candidate]:
    out = []
    for col in v.per_template(v.need_with_missing()):
        p = ReferenceCode().comment(f"How imputation choice changes the spread of {col}")
        p.step(f"x = df[{q(col)}].astype(float)", "values")
        p.step("std_observed = x.std()", "std_observed", ["values"])
        p.step("std_mean_filled = x.fillna(x.mean()).std()", "std_mean_imputed", ["values"])
        p.step("std_median_filled = x.fillna(x.median()).std()", "std_median_imputed", ["values"])
        code = p.submit(
            '{"std_observed": float(std_observed), '
            '"std_mean_imputed": float(std_mean_filled), '
            '"std_median_imputed": float(std_median_filled)}'
        )
        out.append(
            candidate(
                "imputation_mean_vs_median",
                "imputation",
                "medium",
                f"What is the sample standard deviation of '{col}' on the observed values, after "
                "filling missing values with the mean, and after filling them with the median?",
                f"x = '{col}'; std(ddof=1) of observed, of fillna(mean), of fillna(median)",
                mapping(std_observed=NUMBER, std_mean_imputed=NUMBER, std_median_imputed=NUMBER),
                p,
                code,
                ops=["fillna", "std"],
            )
        )
    return out


def imputation_group_median_effect(v: TableView) -> list[Candidate]:
    col, cat = v.need_with_missing()[0], v.need_categorical()[0]
    p = ReferenceCode().comment(f"Fill {col} with the median of its {cat} group")
    p.step(f"x = df[{q(col)}].astype(float)", "values")
    p.step(
        f"group_median = x.groupby({text_col(cat)}).transform('median')",
        "group_medians",
        ["values"],
    )
    p.step("filled = x.fillna(group_median).fillna(x.median())", "filled", ["group_medians"])
    p.step("change = filled.mean() - x.mean()", "mean_change", ["filled", "values"])
    code = p.submit(
        '{"mean_observed": float(x.mean()), "mean_imputed": float(filled.mean()), '
        '"change": float(change)}'
    )
    return [
        candidate(
            "imputation_group_median_effect",
            "imputation",
            "hard",
            f"Fill the missing values of '{col}' with the median of '{col}' within the row's "
            f"'{cat}' group (rows whose group has no median, or no group, get the overall median). "
            "What are the mean before and after, and the change?",
            f"x = '{col}'; groupby('{cat}' as text).transform('median'); fillna, then overall "
            "median; means and difference",
            mapping(mean_observed=NUMBER, mean_imputed=NUMBER, change=NUMBER),
            p,
            code,
            ops=["groupby", "transform", "fillna", "mean"],
        )
    ]


def _segment_program(cat: str, x: str, y: str, pick: str | None) -> tuple[ReferenceCode, str]:
    p = ReferenceCode().comment(f"Largest segment of {cat}, then correlate {x} and {y} inside it")
    p.step(f"sizes = df[{q(cat)}].dropna().astype(str).value_counts()", "segment_sizes")
    p.choose("segment", "sizes.index[0]", pick, "largest_segment", ["segment_sizes"])
    p.step(f"part = df[{text_col(cat)} == segment]", "segment_rows", ["largest_segment"])
    p.step(
        f"r = part[{q(x)}].astype(float).corr(part[{q(y)}].astype(float))", "r", ["segment_rows"]
    )
    return p, p.submit('{"segment": str(segment), "r": float(r)}')


def segment_then_correlate(v: TableView) -> list[Candidate]:
    x, y = v.need_numeric(2)[:2]
    cats = v.need_categorical()
    df = v.frame()
    for cat in cats:
        sizes = df[cat].dropna().astype(str).value_counts()
        ties = v.ties(sizes.astype(float))
        if len(ties) > v.cfg.template.max_column_choices:
            continue  # more equally common values than a record accepts as answers
        ok = []
        for t in ties:
            part = df[df[cat].astype(str).where(df[cat].notna()) == t]
            pair = part[[x, y]].dropna().astype(float)
            if len(pair) >= 3 and pair[x].std() > 0 and pair[y].std() > 0:
                ok.append(t)
        if len(ok) != len(ties):
            continue
        p, code = _segment_program(cat, x, y, None)
        alts = [
            (f"tie: segment '{t}' is as large", _segment_program(cat, x, y, t)[1]) for t in ties[1:]
        ]
        return [
            candidate(
                "segment_then_correlate",
                "segment",
                "medium",
                f"Take the most common value of '{cat}'. Within those rows only, what is the "
                f"Pearson correlation between '{x}' and '{y}'?",
                f"largest level of '{cat}' (value_counts, text); Pearson r of '{x}', '{y}' in it",
                mapping(segment=STRING, r=STAT),
                p,
                code,
                alts,
                ops=["value_counts", "filter", "corr"],
            )
        ]
    raise NotApplicable("no segment with a defined correlation")


def _slope_program(
    cat: str, x: str, y: str, levels: list[str], pick: str | None
) -> tuple[ReferenceCode, str]:
    p = ReferenceCode().comment(f"Slope of {y} on {x} within each level of {cat}")
    level_rows(p, cat, [x, y], levels)
    p.step(
        f"slopes = sub.groupby(sub[{q(cat)}].astype(str)).apply(lambda g: stats.linregress("
        f"g[{q(x)}].astype(float), g[{q(y)}].astype(float)).slope)",
        "slopes",
        ["kept_rows"],
    )
    p.choose("best", "slopes.idxmax()", pick, "steepest", ["slopes"])
    return p, p.submit('{"segment": str(best), "slope": float(slopes[best])}')


def segment_steepest_slope(v: TableView) -> list[Candidate]:
    x, y = v.need_numeric(2)[:2]
    for cat in v.need_categorical():
        levels = v.viable_groups(cat, None, 2)
        sub = v.level_rows(cat, [x, y], levels)
        g = sub.groupby(sub[cat].astype(str))
        sizes = g.size()
        levels = [
            lv
            for lv in levels
            if sizes.get(lv, 0) >= v.cfg.eligibility.min_group_size
            and g.get_group(lv)[x].astype(float).nunique() > 1
        ]
        if len(levels) < 2:
            continue
        sub = sub[sub[cat].astype(str).isin(levels)]
        slopes = {}
        for lv, part in sub.groupby(sub[cat].astype(str)):
            xs, ys = part[x].astype(float), part[y].astype(float)
            slopes[lv] = ((xs - xs.mean()) * (ys - ys.mean())).sum() / ((xs - xs.mean()) ** 2).sum()
        p, code = _slope_program(cat, x, y, levels, None)
        alts = [
            (f"tie: segment '{t}' is as steep", _slope_program(cat, x, y, levels, t)[1])
            for t in v.other_ties(pd.Series(slopes))
        ]
        return [
            candidate(
                "segment_steepest_slope",
                "segment",
                "hard",
                f"Within each value of '{cat}' (values with at least "
                f"{v.cfg.eligibility.min_group_size} complete rows), "
                f"fit a straight line of '{y}' on "
                f"'{x}'. Which value has the largest (most positive) slope, and what is it?",
                f"levels {levels}; per level scipy.stats.linregress(x, y).slope; argmax",
                mapping(segment=STRING, slope=STAT),
                p,
                code,
                alts,
                ops=["groupby", "linregress", "idxmax"],
            )
        ]
    raise NotApplicable("no categorical column with 2 levels where a slope is defined")


def _chosen_method(v: TableView, num: str, cat: str) -> str | None:
    """The branch the adaptive rule takes on this split (the reference recomputes it), or
    None where a group is too small for Shapiro-Wilk (the reference would fail there)."""
    sub = v.frame()[[cat, num]].dropna()
    labels = sub[cat].astype(str)
    first, second = sorted(labels.unique())
    a = sub.loc[labels == first, num].astype(float)
    b = sub.loc[labels == second, num].astype(float)
    if min(len(a), len(b)) < 3:
        return None
    if not (stats.shapiro(a).pvalue > 0.05 and stats.shapiro(b).pvalue > 0.05):
        return "mann-whitney"
    return "student" if stats.levene(a, b, center="median").pvalue > 0.05 else "welch"


def adaptive_two_sample_test(v: TableView) -> list[Candidate]:
    """On real tables the rule nearly always picks Mann-Whitney (7 of 7 in the bundled
    catalog), so a split where it picks a t-test is preferred, and a table where every
    split picks Mann-Whitney is asked only if rationed in (1 table in 4: issue 24)."""
    methods = {split: _chosen_method(v, *split) for split in binary_splits(v)}
    splits = [split for split, m in methods.items() if m is not None]
    v.require(bool(splits), "no two-valued column with 3+ rows in each group")
    other = [split for split in splits if methods[split] != "mann-whitney"]
    v.require(
        bool(other) or v.rationed("adaptive_two_sample_test"),
        "every split picks mann-whitney: an answer class this common is asked on 1 table in 4",
    )
    num, cat = (other or splits)[0]
    p = ReferenceCode().comment(f"Choose the test for {num} across {cat} from the evidence")
    two_groups(p, cat, num)
    p.step(
        "normal = stats.shapiro(a).pvalue > 0.05 and stats.shapiro(b).pvalue > 0.05",
        "both_normal",
        ["group_a", "group_b"],
    )
    p.step(
        "equal_var = stats.levene(a, b, center='median').pvalue > 0.05",
        "equal_variances",
        ["group_a", "group_b"],
    )
    p.line(
        "if not normal:\n"
        "    method = 'mann-whitney'\n"
        "    res = stats.mannwhitneyu(a, b, alternative='two-sided')\n"
        "elif equal_var:\n"
        "    method = 'student'\n"
        "    res = stats.ttest_ind(a, b, equal_var=True)\n"
        "else:\n"
        "    method = 'welch'\n"
        "    res = stats.ttest_ind(a, b, equal_var=False)"
    )
    code = p.submit('{"method": method, "p_value": float(res.pvalue)}')
    return [
        candidate(
            "adaptive_two_sample_test",
            "adaptive",
            "hard",
            f"Compare '{num}' between the two groups of '{cat}' (alphabetical order), choosing "
            "the test from the evidence: if Shapiro-Wilk gives p > 0.05 in both groups, run "
            "Levene's test (median-centred); with p > 0.05 use Student's t-test, otherwise "
            "Welch's t-test; if either group is not normal use a two-sided Mann-Whitney U "
            "test. Which method (mann-whitney, student or welch) and which p-value?",
            "shapiro both > 0.05 ? (levene > 0.05 ? student : welch) : mann-whitney; "
            "scipy.stats defaults",
            mapping(method=STRING, p_value=PVALUE),
            p,
            code,
            ops=["shapiro", "levene", "branch", "ttest_ind|mannwhitneyu"],
        )
    ]


TEMPLATES = [
    Template("bootstrap_mean_ci", "bootstrap", "medium", bootstrap_mean_ci),
    Template("quantile_binning", "binning", "medium", quantile_binning),
    Template("imputation_mean_vs_median", "imputation", "medium", imputation_mean_vs_median),
    Template(
        "imputation_group_median_effect", "imputation", "hard", imputation_group_median_effect
    ),
    Template("segment_then_correlate", "segment", "medium", segment_then_correlate),
    Template("segment_steepest_slope", "segment", "hard", segment_steepest_slope),
    Template("adaptive_two_sample_test", "adaptive", "hard", adaptive_two_sample_test),
]
