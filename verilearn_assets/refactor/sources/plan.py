"""Which candidates a source yields: each repository scanned once (`matching_files`: where
every rule of its language changes it), then handed to the source's generator."""

from __future__ import annotations

from collections.abc import Iterator

from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.sources.candidate import Candidate, matching_files
from verilearn_assets.refactor.sources.catalog import CatalogRule, Repo
from verilearn_assets.refactor.sources.procedural import procedural_candidates
from verilearn_assets.refactor.sources.template import template_candidates


def candidates(
    source: str,
    repos: list[Repo],
    rules: list[CatalogRule],
    config: RefactorConfig,
    max_pairs_per_repo: int = 30,
    seed: int = 0,
) -> Iterator[Candidate]:
    """Every candidate of one source (`template` or `procedural`); none whose target could
    only touch tests (a rule that changes only test files, a file or function scope inside
    a test file)."""
    if source not in ("template", "procedural"):
        raise ValueError(f"no candidate generator for source {source!r}")
    by_id = {r.id: r for r in rules}
    for repo in repos:
        matched = matching_files(repo, rules, config)
        if source == "template":
            yield from template_candidates(repo, matched, by_id)
        else:
            yield from procedural_candidates(
                repo, matched, by_id, config.generation, max_pairs_per_repo, seed
            )
