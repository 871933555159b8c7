"""Candidate generation for one table, from the template library or the procedural search.

Generation only proposes; `analysis.verify` decides. The procedural generator lives in
`analysis.programs` and is imported lazily, so the template source works on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verilearn_assets.analysis.candidate import Candidate
from verilearn_assets.analysis.questions_config import QuestionsConfig
from verilearn_assets.analysis.templates import apply_templates
from verilearn_assets.core.records import TableRecord

GENERATED_SOURCES = ("template", "procedural")


@dataclass
class Generation:
    """What one table yielded: candidates, and why the other templates did not apply."""

    candidates: list[Candidate] = field(default_factory=list)
    not_applicable: dict[str, str] = field(default_factory=dict)


def generate(table: TableRecord, source: str, cfg: QuestionsConfig) -> Generation:
    if source == "template":
        outcome = apply_templates(table.columns, table.n_rows, table.path, cfg)
        return Generation(outcome.candidates, outcome.not_applicable)
    if source == "procedural":
        from verilearn_assets.analysis.programs import generate_programs

        return Generation(generate_programs(table.columns, table.path, cfg.procedural))
    raise ValueError(
        f"question source {source!r} cannot be generated here "
        f"(choose one of {list(GENERATED_SOURCES)})"
    )


def generate_candidates(table: TableRecord, source: str, cfg: QuestionsConfig) -> list[Candidate]:
    """Candidates for `table` from `source` ('template' or 'procedural')."""
    return generate(table, source, cfg).candidates
