"""Coverage of generated programs per operator family and per operator."""

from __future__ import annotations

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.procedural.operators import FAMILIES, OPERATORS

EVIDENCE_DECISION_CHAIN = ("evidence", "decision", "test")


def is_evidence_decision_chain(candidate: Candidate) -> bool:
    """True when evidence feeds a decision that a test then acts on."""
    return all(f in candidate.op_families for f in EVIDENCE_DECISION_CHAIN)


def coverage_report(candidates: list[Candidate]) -> dict[str, int]:
    """Counts of candidates using each family (`family:<f>`) and operator (`op:<name>`).

    Every known family and operator is listed, zero included, so gaps are visible; also
    `candidates`, `evidence_decision_chains` and `max_steps`.
    """
    report: dict[str, int] = {"candidates": len(candidates)}
    report["evidence_decision_chains"] = sum(is_evidence_decision_chain(c) for c in candidates)
    report["max_steps"] = max((c.n_steps for c in candidates), default=0)
    for family in FAMILIES:
        report[f"family:{family}"] = sum(family in c.op_families for c in candidates)
    for spec in OPERATORS:
        report[f"op:{spec.name}"] = sum(spec.name in c.program_ops for c in candidates)
    return report
