"""Reference-code steps several templates share, so a computation reads the same wherever it is
asked (same code line, same variable, same hook name) and later steps can rely on them."""

from __future__ import annotations

from collections.abc import Sequence

from verilearn_assets.analysis.sources.template.base import ReferenceCode, q


def nonmissing_values(p: ReferenceCode, col: str) -> None:
    """`x`: the non-missing values of `col` as floats (hook "values")."""
    p.step(f"x = df[{q(col)}].dropna().astype(float)", "values")


def level_rows(p: ReferenceCode, cat: str, cols: Sequence[str], levels: list[str]) -> None:
    """`sub`: rows with `cat` and `cols` present, in the kept `levels` (hook "kept_rows")."""
    complete_rows(p, cat, cols)
    keep_levels(p, cat, levels, after="rows")


def complete_rows(p: ReferenceCode, cat: str, cols: Sequence[str]) -> None:
    """`sub`: the rows with `cat` and every one of `cols` present (hook "rows")."""
    p.step(f"sub = df[[{', '.join(q(c) for c in [cat, *cols])}]].dropna()", "rows")


def keep_levels(p: ReferenceCode, cat: str, levels: list[str], after: str) -> None:
    """Narrow `sub` to the rows whose `cat` (as text) is one of `levels`."""
    p.step(f"sub = sub[sub[{q(cat)}].astype(str).isin({levels!r})]", "kept_rows", [after])


def two_groups(p: ReferenceCode, cat: str, num: str) -> None:
    """`a`, `b`: `num` in the alphabetically first and second group of two-valued `cat`."""
    complete_rows(p, cat, [num])
    p.step(f"labels = sub[{q(cat)}].astype(str)", "group_labels", ["rows"])
    p.step("first, second = sorted(labels.unique())", "group_names", ["group_labels"])
    p.step(f"a = sub.loc[labels == first, {q(num)}].astype(float)", "group_a", ["group_names"])
    p.step(f"b = sub.loc[labels == second, {q(num)}].astype(float)", "group_b", ["group_names"])
