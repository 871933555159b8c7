"""The lake rows of real repositories' profiles (`refactor/repo_profile`), kept apart from
the mining code so the family can register them without importing the jail."""

from __future__ import annotations

from typing import Literal

from verilearn_assets.core.records import Record, Source, Split

PROFILE_LAKE = "refactor/repo_profile"
Measure = Literal["files", "tests", "sites", "skipped"]


class RepoProfileRow(Record):
    """One count of one repository: `measure` files, tests (per status: `key`), sites (per
    rule: `key`, in package files or tests: `scope`) or skipped (`key`: the reason)."""

    id: str
    source: Source
    split: Split
    repo: str
    origin: str
    measure: Measure
    key: str = ""
    scope: str = ""
    n: int
    profiled_at: str  # UTC ISO time of the profile (the mart keeps each repository's latest)
