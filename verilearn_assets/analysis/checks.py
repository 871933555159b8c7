"""The analysis family's asset checks: its blocking rules (from `family.py`, wired by the
gate's check factory) and two drift warnings that compare with the previous run (the
gate's drift rule kind, `gate/drift.py`).

Blocking checks (severity ERROR) stop downstream steps in the same run; `sft_dataset`
re-reads their latest evaluations so a later run cannot slip past a failed one.
"""

from verilearn_assets.analysis.config import load_questions_config
from verilearn_assets.analysis.family import FAMILY
from verilearn_assets.core.contract import RuleContext
from verilearn_assets.gate.adapter import blocking_checks, drift_checks
from verilearn_assets.gate.drift import DriftRule


def alternatives_rate(ctx: RuleContext) -> float:
    """Share of accepted questions whose wording admits alternatives (ambiguity)."""
    accepted = [q for q in ctx.tasks() if q.status == "accepted"]
    return sum(bool(q.alternatives) for q in accepted) / len(accepted) if accepted else 0.0


def pass_rate(ctx: RuleContext) -> float:
    """Share of episodes whose answer was verified."""
    eps = ctx.rollouts()
    return sum(e.verified for e in eps) / len(eps) if eps else 0.0


DRIFT_RULES = (
    DriftRule(
        name="questions_ambiguity_drift",
        on="tasks",
        what="alternatives rate",
        metadata_key="alternatives_rate",
        measure=alternatives_rate,
        limit=lambda: load_questions_config().rules.drift.max_alternatives_rate_rise,
        worse_when_higher=True,
        description="Warns when the alternatives (ambiguity) rate rises more than "
        "configured versus the previous materialization.",
    ),
    DriftRule(
        name="episodes_pass_rate_drift",
        on="rollouts",
        what="pass rate",
        metadata_key="pass_rate",
        measure=pass_rate,
        limit=lambda: load_questions_config().rules.drift.max_pass_rate_drop,
        worse_when_higher=False,
        description="Warns when the pass rate drops more than configured versus the "
        "previous materialization.",
    ),
)

BLOCKING_CHECKS = blocking_checks(FAMILY)
ANALYSIS_CHECKS = [*BLOCKING_CHECKS, *drift_checks(FAMILY, DRIFT_RULES)]
