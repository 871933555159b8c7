"""Candidate generation for one table, from the template library or the procedural search.

Generation only proposes; `analysis.verify` decides. The procedural generator lives in
`analysis.programs` and is imported lazily, so the template source works on its own.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from verilearn_assets.analysis.candidate import Candidate
from verilearn_assets.analysis.programs.dryrun import load_table
from verilearn_assets.analysis.questions_config import QuestionsConfig
from verilearn_assets.analysis.screen import screen
from verilearn_assets.analysis.templates import apply_templates
from verilearn_assets.core.records import TableRecord

GENERATED_SOURCES = ("template", "procedural")


@dataclass
class Generation:
    """What one table yielded: candidates that go on to verification, candidates turned
    away before it (each with `rejection_reason`), why the other templates did not apply,
    and the search-stage rejection counts of the procedural source."""

    candidates: list[Candidate] = field(default_factory=list)
    not_applicable: dict[str, str] = field(default_factory=dict)
    rejected: list[Candidate] = field(default_factory=list)
    search_rejected: Counter[str] = field(default_factory=Counter)


def generate(table: TableRecord, source: str, cfg: QuestionsConfig) -> Generation:
    """Candidates for one table from one source, screened (see `analysis.screen`)."""
    if source == "template":
        outcome = apply_templates(table.columns, table.n_rows, table.path, cfg)
        gen = Generation(outcome.candidates, outcome.not_applicable)
    elif source == "procedural":
        from verilearn_assets.analysis.programs import generate_program_candidates

        found = generate_program_candidates(table.columns, table.path, cfg.procedural)
        gen = Generation(
            found.candidates, rejected=found.rejected, search_rejected=found.stats.rejected
        )
    else:
        raise ValueError(
            f"question source {source!r} cannot be generated here "
            f"(choose one of {list(GENERATED_SOURCES)})"
        )
    if gen.candidates and cfg.screen.enabled:
        passed, turned_away = screen(gen.candidates, load_table(table.path), cfg.screen)
        gen.candidates = passed
        gen.rejected.extend(turned_away)
    return gen


def generate_candidates(table: TableRecord, source: str, cfg: QuestionsConfig) -> list[Candidate]:
    """Candidates for `table` from `source` ('template' or 'procedural')."""
    return generate(table, source, cfg).candidates
