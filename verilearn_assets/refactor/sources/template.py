"""The `template` generator: one catalog rule over a whole repository, where it changes
package code (a rule that changes only test files makes no task)."""

from __future__ import annotations

from collections.abc import Iterator

from verilearn_assets.refactor.sources.candidate import Candidate, RuleScan, only_tests
from verilearn_assets.refactor.sources.catalog import CatalogRule, Repo


def template_candidates(
    repo: Repo, matched: dict[str, RuleScan], by_id: dict[str, CatalogRule]
) -> Iterator[Candidate]:
    """One candidate per rule of `matched` (rule id → where it changes `repo`) whose
    changes are not all in test files."""
    for rule_id, scan in matched.items():
        if not only_tests(scan.files):
            yield Candidate(repo, "template", ((by_id[rule_id], ()),))
