"""Group comparisons: t-test on discovered groups, Mann-Whitney, ANOVA with effect size,
Levene, and chi-squared independence.

Group order is always alphabetical on the level's text, so signed statistics have one
meaning and no sign folding is ever needed when answers are compared.
"""

from __future__ import annotations

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.template.base import (
    BOOLEAN,
    INTEGER,
    PVALUE,
    STAT,
    VARIANTS,
    NotApplicable,
    ReferenceCode,
    TableView,
    Template,
    candidate,
    mapping,
    q,
    text_col,
    variant_name,
    variant_template,
)
from verilearn_assets.analysis.sources.template.steps import level_rows, two_groups

FAMILY = "group_comparison"


def two_valued_columns(v: TableView, num: str) -> list[str]:
    """Every column but `num` with exactly two distinct present values: what "the column
    that splits the rows into exactly two groups" admits, whatever its type or gaps."""
    return [c.name for c in v.columns if c.name != num and c.n_unique == 2]


def binary_columns(v: TableView, num: str) -> list[str]:
    """The two-valued columns (other than `num`) when each splits `num` into two groups of
    enough rows, else none: a wording that says "the column" must not leave out one that
    a reader would find, so a table with an unusable or a surplus two-valued column is
    not asked (issue 24)."""
    cols = two_valued_columns(v, num)
    if not cols or len(cols) > v.cfg.template.max_column_choices:
        return []
    viable = viable_two_valued(v, num)
    return cols if viable == cols else []


def viable_two_valued(v: TableView, num: str) -> list[str]:
    """Two-valued columns (other than `num`) splitting `num` into two groups of enough rows."""
    return [c for c in two_valued_columns(v, num) if v.viable_groups(c, num, 2, 2)]


def binary_splits(v: TableView) -> list[tuple[str, str]]:
    """Every `(num, cat)`: a numeric column and a two-valued column that splits it in two
    groups of enough rows, numeric columns in eligibility order. The question names both."""
    return [(num, cat) for num in v.need_numeric(1) for cat in viable_two_valued(v, num)]


def first_binary_split(v: TableView) -> tuple[str, str]:
    """`(num, cat)`: the first numeric column that a two-valued column splits in two."""
    splits = binary_splits(v)
    if not splits:
        raise NotApplicable("no two-valued column with enough rows per group")
    return splits[0]


def _ttest_program(cat: str, num: str, equal_var: bool) -> tuple[ReferenceCode, str]:
    p = ReferenceCode().comment(f"Does {num} differ between the two groups of {cat}?")
    two_groups(p, cat, num)
    p.step(f"res = stats.ttest_ind(a, b, equal_var={equal_var})", "t_test", ["group_a", "group_b"])
    return p, p.submit('{"statistic": float(res.statistic), "p_value": float(res.pvalue)}')


def _ttest(variant: str) -> Template:
    name = variant_name("ttest_discovered_groups", variant)

    def build(v: TableView) -> list[Candidate]:
        nums = v.need_numeric(1)
        out = []
        for num in nums:
            cols = v.limit(binary_columns(v, num))
            if not cols:
                continue
            p, code = _ttest_program(cols[0], num, False)
            alts = [
                (f"groups from '{c}' (another two-valued column)", _ttest_program(c, num, False)[1])
                for c in cols[1:]
            ]
            if variant != "method_explicit":  # the explicit wording names Welch's test
                alts += [
                    (
                        f"Student's t-test (equal variances), groups from '{c}'",
                        _ttest_program(c, num, True)[1],
                    )
                    for c in cols
                ]
            question = {
                "base": f"Find the column that splits the rows into exactly two groups and "
                f"test whether '{num}' differs between them with a t-test. What are the "
                "t statistic (alphabetically first group minus second) and the p-value?",
                "exclude_target": f"Among the columns other than '{num}', find one that "
                f"takes exactly two values and compare '{num}' between its "
                "two groups with a t-test. What are t (alphabetically first "
                "group minus second) and the p-value?",
                "method_explicit": f"Find the column with exactly two values and run Welch's "
                f"t-test (unequal variances, two-sided) on '{num}' between "
                "its groups, alphabetically first group minus second. "
                "What are t and p?",
            }[variant]
            out.append(
                candidate(
                    name,
                    FAMILY,
                    "medium",
                    question,
                    f"group column among {cols}; rows with both present; groups by text, sorted; "
                    "scipy.stats.ttest_ind(first, second, equal_var=False); statistic, pvalue",
                    mapping(statistic=STAT, p_value=PVALUE),
                    p,
                    code,
                    alts,
                    ops=["discover_groups", "ttest_ind"],
                )
            )
            if len(out) >= v.cfg.template.questions_per_template:
                break
        v.require(bool(out), "no two-valued column with enough rows per group")
        return out

    return variant_template(
        "ttest_discovered_groups",
        variant,
        FAMILY,
        "medium",
        build,
        excludes=(("Student's t-test", "Welch's t-test (unequal variances"),),
    )


def mann_whitney_groups(v: TableView) -> list[Candidate]:
    num, cat = first_binary_split(v)
    p = ReferenceCode().comment(f"Rank-based comparison of {num} across {cat}")
    two_groups(p, cat, num)
    p.step(
        "res = stats.mannwhitneyu(a, b, alternative='two-sided')",
        "mann_whitney",
        ["group_a", "group_b"],
    )
    code = p.submit('{"u_statistic": float(res.statistic), "p_value": float(res.pvalue)}')
    return [
        candidate(
            "mann_whitney_groups",
            FAMILY,
            "medium",
            f"Compare '{num}' between the two groups of '{cat}' with a two-sided Mann-Whitney "
            "U test. What are U (for the alphabetically first group) and the p-value?",
            f"rows with both present; groups of '{cat}' as text, sorted; scipy.stats."
            "mannwhitneyu(first, second, alternative='two-sided')",
            mapping(u_statistic=STAT, p_value=PVALUE),
            p,
            code,
            ops=["mannwhitneyu"],
        )
    ]


def _multi_groups(v: TableView) -> tuple[str, str, list[str]]:
    for num in v.need_numeric(1)[:3]:
        for cat in v.categorical:
            levels = v.viable_groups(cat, num, 3, v.cfg.eligibility.max_categories)
            if levels:
                return cat, num, levels
    raise NotApplicable("no categorical column with 3+ levels of enough rows")


def _group_arrays(p: ReferenceCode, cat: str, num: str, levels: list[str]) -> None:
    level_rows(p, cat, [num], levels)
    p.step(
        f"groups = [g[{q(num)}].astype(float) for _, g in sub.groupby(sub[{q(cat)}].astype(str))]",
        "groups",
        ["kept_rows"],
    )


def anova_effect_size(v: TableView) -> list[Candidate]:
    cat, num, levels = _multi_groups(v)
    p = ReferenceCode().comment(f"One-way ANOVA of {num} across {cat}, with eta squared")
    _group_arrays(p, cat, num, levels)
    p.step("res = stats.f_oneway(*groups)", "anova", ["groups"])
    p.step(f"y = sub[{q(num)}].astype(float)", "values", ["kept_rows"])
    p.step(
        "ss_between = sum(len(g) * (g.mean() - y.mean()) ** 2 for g in groups)",
        "ss_between",
        ["groups", "values"],
    )
    p.step("ss_total = ((y - y.mean()) ** 2).sum()", "ss_total", ["values"])
    p.step("eta_sq = ss_between / ss_total", "eta_squared", ["ss_between", "ss_total"])
    code = p.submit(
        '{"f_statistic": float(res.statistic), "p_value": float(res.pvalue), '
        '"eta_squared": float(eta_sq)}'
    )
    return [
        candidate(
            "anova_effect_size",
            FAMILY,
            "hard",
            f"Does the mean of '{num}' differ across the values of '{cat}' (only values with at "
            f"least {v.cfg.eligibility.min_group_size} rows)? Run a one-way ANOVA and report F, "
            "the p-value and the effect size eta squared.",
            f"levels {levels}; scipy.stats.f_oneway; eta^2 = SS_between / SS_total",
            mapping(f_statistic=STAT, p_value=PVALUE, eta_squared=STAT),
            p,
            code,
            ops=["groupby", "f_oneway", "effect_size"],
        )
    ]


def levene_variance_test(v: TableView) -> list[Candidate]:
    cat, num, levels = _multi_groups(v)
    p = ReferenceCode().comment(f"Are the spreads of {num} equal across {cat}?")
    _group_arrays(p, cat, num, levels)
    p.step("res = stats.levene(*groups, center='median')", "levene", ["groups"])
    p.step("equal_var = bool(res.pvalue > 0.05)", "equal_variances", ["levene"])
    code = p.submit(
        '{"statistic": float(res.statistic), "p_value": float(res.pvalue), '
        '"equal_variances": equal_var}'
    )
    return [
        candidate(
            "levene_variance_test",
            FAMILY,
            "medium",
            f"Is the variance of '{num}' the same across the values of '{cat}' (values with at "
            f"least {v.cfg.eligibility.min_group_size} rows)? Use Levene's test (median-centred) "
            "and say whether equal variances hold at the 5% level.",
            f"levels {levels}; scipy.stats.levene(center='median'); equal = p > 0.05",
            mapping(statistic=STAT, p_value=PVALUE, equal_variances=BOOLEAN),
            p,
            code,
            ops=["groupby", "levene"],
        )
    ]


def _chi2_code(p: ReferenceCode, a: str, b: str, correction: bool) -> str:
    p.step(f"table = pd.crosstab({text_col(a)}, {text_col(b)})", "contingency")
    args = "table" if correction else "table, correction=False"
    p.step(f"res = stats.chi2_contingency({args})", "chi2", ["contingency"])
    return p.submit(
        '{"chi2": float(res.statistic), "dof": int(res.dof), "p_value": float(res.pvalue)}'
    )


def chi2_independence(v: TableView) -> list[Candidate]:
    cats = v.categorical
    v.require(len(cats) >= 2, f"needs 2 categorical columns, found {len(cats)}")
    a, b = cats[0], cats[1]
    p = ReferenceCode().comment(f"Are {a} and {b} independent?")
    code = _chi2_code(p, a, b, correction=True)
    alt_code = _chi2_code(ReferenceCode(), a, b, correction=False)
    return [
        candidate(
            "chi2_independence",
            FAMILY,
            "medium",
            f"Are '{a}' and '{b}' independent? Run a chi-squared test of independence on their "
            "contingency table and report the statistic, degrees of freedom and p-value.",
            f"pd.crosstab of non-missing '{a}' x '{b}' (as text); scipy.stats.chi2_contingency "
            "(default Yates correction for 2x2)",
            mapping(chi2=STAT, dof=INTEGER, p_value=PVALUE),
            p,
            code,
            [("no continuity correction for a 2x2 table", alt_code)],
            ops=["crosstab", "chi2_contingency"],
        )
    ]


TEMPLATES = [
    *(_ttest(variant) for variant in VARIANTS),
    Template("mann_whitney_groups", FAMILY, "medium", mann_whitney_groups),
    Template("anova_effect_size", FAMILY, "hard", anova_effect_size),
    Template("levene_variance_test", FAMILY, "medium", levene_variance_test),
    Template("chi2_independence", FAMILY, "medium", chi2_independence),
]
