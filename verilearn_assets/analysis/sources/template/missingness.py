"""Missing values and duplicates: where data is absent, repeated, or lost by dropping."""

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
)
from verilearn_assets.analysis.sources.template.steps import keep_levels

FAMILY = "missingness"


def _most_missing_program(pick: str | None) -> tuple[ReferenceCode, str]:
    p = ReferenceCode().comment("Count missing cells per column and find the worst column")
    p.step("missing = df.isna().sum()", "missing_per_column")
    p.choose("worst", "missing.idxmax()", pick, "worst_column", ["missing_per_column"])
    return p, p.submit('{"column": str(worst), "missing": int(missing[worst])}')


def most_missing_column(v: TableView) -> list[Candidate]:
    """Ties between columns are enumerated as alternatives (multi-path selection)."""
    v.require(any(c.missing_pct > 0 for c in v.columns), "no column has missing values")
    missing = v.frame().isna().sum()
    p, code = _most_missing_program(None)
    alts = [
        (f"tie: '{c}' has as many missing values", _most_missing_program(str(c))[1])
        for c in v.other_ties(missing.astype(float))
    ]
    return [
        candidate(
            "most_missing_column",
            FAMILY,
            "easy",
            "Which column has the most missing values, and how many does it have?",
            "df.isna().sum() per column; answer the argmax column and its count",
            mapping(column=STRING, missing=INTEGER),
            p,
            code,
            alts,
            ops=["isna", "sum", "idxmax"],
        )
    ]


def _repeating_pair(v: TableView) -> list[str]:
    """The least varied pair of columns (identifiers and constants left out) in which some
    combination of values never occurs: where every combination occurs, the count of
    repeats is fixed by the two cardinalities and the row count, not by the data."""
    kept = sorted(
        (c for c in v.columns if c.n_unique >= 2 and not c.id_like and c.name not in v.id_columns),
        key=lambda c: (c.n_unique, c.name),
    )[:6]
    df = v.frame()
    for i, a in enumerate(kept):
        for b in kept[i + 1 :]:
            combos = len(df[[a.name, b.name]].drop_duplicates())
            if combos < min(a.n_unique * b.n_unique, len(df)):
                return [a.name, b.name]
    return []


def duplicate_rows(v: TableView) -> list[Candidate]:
    """Whole-row duplicates where the table has some; otherwise duplicates over a pair of
    columns (named in the question, `_repeating_pair`). Most tables repeat no whole row,
    and a question whose answer is 0 on nearly every table teaches nothing (issue 24: 26
    of 32 were 0)."""
    df = v.frame()
    if bool(df.duplicated().any()):
        cols: list[str] = []
    else:
        cols = _repeating_pair(v)
        v.require(
            bool(cols),
            "no row repeats an earlier one, and no pair of columns has missing combinations",
        )
    subset = f"subset={cols!r}, " if cols else ""
    p = ReferenceCode().comment(
        "Rows that repeat an earlier row in "
        + ("the columns " + ", ".join(cols) if cols else "every column")
    )
    p.step(f"dup_mask = df.duplicated({subset}keep='first')", "duplicate_mask")
    p.step("n_dup = dup_mask.sum()", "n_duplicates", ["duplicate_mask"])
    p.step("n_unique_rows = len(df) - n_dup", "n_unique_rows", ["n_duplicates"])
    code = p.submit('{"duplicates": int(n_dup), "unique_rows": int(n_unique_rows)}')
    named = " and ".join(f"'{c}'" for c in cols)
    question = (
        "How many rows are exact duplicates of an earlier row, and how many distinct rows "
        "remain after removing them?"
        if not cols
        else f"Looking only at {named} (a missing value counts as a value), how many rows "
        "repeat the values of an earlier row, and how many distinct "
        + ("combinations" if len(cols) > 1 else "values")
        + " are there?"
    )
    return [
        candidate(
            "duplicate_rows",
            FAMILY,
            "easy",
            question,
            f"df.duplicated({subset}keep='first').sum(); unique_rows = len(df) - duplicates",
            mapping(duplicates=INTEGER, unique_rows=INTEGER),
            p,
            code,
            ops=["duplicated", "sum"],
        )
    ]


def complete_case_shift(v: TableView) -> list[Candidate]:
    """How much listwise deletion on a partner column moves a mean (medium)."""
    with_missing = v.need_with_missing()
    v.need_numeric(2)
    out = []
    for miss in v.per_template(with_missing):
        target = next(c for c in v.numeric if c != miss)
        p = ReferenceCode().comment(
            f"Mean of {target} before and after dropping rows missing {miss}"
        )
        p.step(f"before = df[{q(target)}].astype(float).mean()", "mean_all")
        p.step(f"complete = df.dropna(subset=[{q(miss)}, {q(target)}])", "complete_rows")
        p.step(
            f"after = complete[{q(target)}].astype(float).mean()",
            "mean_complete",
            ["complete_rows"],
        )
        p.step("shift = after - before", "shift", ["mean_all", "mean_complete"])
        code = p.submit('{"rows_kept": int(len(complete)), "shift": float(shift)}')
        out.append(
            candidate(
                "complete_case_shift",
                FAMILY,
                "medium",
                f"If we drop every row where '{miss}' or '{target}' is missing, how many rows "
                f"remain and by how much does the mean of '{target}' change (after minus before)?",
                f"before = mean of '{target}' (missing skipped); rows with both present; after = "
                "their mean; answer rows kept and after - before",
                mapping(rows_kept=INTEGER, shift=NUMBER),
                p,
                code,
                ops=["dropna", "mean"],
            )
        )
    return out


def _missing_by_group_program(
    cat: str, col: str, levels: list[str], pick: str | None
) -> tuple[ReferenceCode, str]:
    p = ReferenceCode().comment(f"Share of missing {col} within each level of {cat}")
    p.step(f"sub = df[df[{q(cat)}].notna()]", "rows_with_group")
    keep_levels(p, cat, levels, after="rows_with_group")
    p.step(
        f"rates = sub[{q(col)}].isna().groupby(sub[{q(cat)}].astype(str)).mean()",
        "missing_rates",
        ["kept_rows"],
    )
    p.choose("worst", "rates.idxmax()", pick, "worst_level", ["missing_rates"])
    return p, p.submit('{"level": str(worst), "missing_rate": float(rates[worst])}')


def missing_rate_by_group(v: TableView) -> list[Candidate]:
    col = v.need_with_missing()[0]
    out = []
    for cat in v.need_categorical():
        levels = v.viable_groups(cat, None, 2)
        if not levels:
            continue
        df = v.frame()
        sub = df[df[cat].notna()]
        sub = sub[sub[cat].astype(str).isin(levels)]
        rates = sub[col].isna().groupby(sub[cat].astype(str)).mean()
        p, code = _missing_by_group_program(cat, col, levels, None)
        alts = [
            (
                f"tie: level '{t}' has the same missing rate",
                _missing_by_group_program(cat, col, levels, t)[1],
            )
            for t in v.other_ties(rates)
        ]
        out.append(
            candidate(
                "missing_rate_by_group",
                FAMILY,
                "medium",
                f"For which value of '{cat}' is '{col}' most often missing, and at what rate? "
                f"Only consider values of '{cat}' with at least "
                f"{v.cfg.eligibility.min_group_size} rows.",
                f"rows with '{cat}' present, levels {levels}; per level mean of isna('{col}'); "
                "answer argmax level and its rate",
                mapping(level=STRING, missing_rate=NUMBER),
                p,
                code,
                alts,
                ops=["isna", "groupby", "mean", "idxmax"],
            )
        )
        if len(out) >= v.cfg.template.questions_per_template:
            break
    v.require(bool(out), "no categorical column has 2 levels of enough rows")
    return out


TEMPLATES = [
    Template("most_missing_column", FAMILY, "easy", most_missing_column),
    Template("duplicate_rows", FAMILY, "easy", duplicate_rows),
    Template("complete_case_shift", FAMILY, "medium", complete_case_shift),
    Template("missing_rate_by_group", FAMILY, "medium", missing_rate_by_group),
]
