"""The pre-verification screen: degenerate answers, unstated conventions, metamorphic tests.

Runs each candidate in-process on its table (our own generated code, as the procedural dry
run does), then turns away the ones whose answer is degenerate, moves under a named
convention the question leaves open, or fails a metamorphic screen (`analysis.screen.metamorphic`:
the same on every same-shape perturbed table, a redundant procedural step, a tautology).
Turned-away candidates keep their reason and become rejected records, so the diagnostics
mart counts them; the sandbox still decides the rest. Procedural candidates are screened
inside the search (`generate`), so a turned-away program makes room for another.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from verilearn_assets.analysis.screen.config import ScreenConfig
from verilearn_assets.analysis.screen.conventions import (
    RunCache,
    check_conventions,
    probed_reference,
)
from verilearn_assets.analysis.screen.degenerate import constant_reason, zero_reason
from verilearn_assets.analysis.screen.metamorphic import TableTrials
from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.id_columns import numeric_id_columns
from verilearn_assets.analysis.sources.procedural.dryrun import run_in_process
from verilearn_assets.analysis.sources.procedural.program import Program
from verilearn_assets.analysis.sources.template import REGISTRY
from verilearn_assets.core.answers import parse_answer


def _reference(cand: Candidate, df: pd.DataFrame) -> Any:
    return parse_answer(json.dumps(run_in_process(cand.code, df)))


def screen_one(
    cand: Candidate,
    df: pd.DataFrame,
    cfg: ScreenConfig,
    id_columns: list[str] | None = None,
    cache: RunCache | None = None,
    trials: TableTrials | None = None,
    program: Program | None = None,
    digits: int = 4,
    seen: dict[str, Any] | None = None,
) -> Candidate:
    """A copy of `cand` with `conventions` and, if it fails the screen, `rejection_reason`.

    The reference runs once, through the tie probes, so tie variants run only where the
    reference met a tie; `id_columns`, `cache` and `trials` (the perturbed tables) are the
    caller's, once per table. `program` (procedural candidates) enables step ablation;
    `seen`, the hooked values of a run of it on `df`, spares the ablation that run.
    """
    try:
        if cfg.probe_ties:
            answer, ties = probed_reference(cand.code, df, cache)
        else:
            answer, ties = _reference(cand, df), None
    except Exception as exc:  # verification in the sandbox rejects it with the full reason
        return cand.model_copy(update={"conventions": [f"reference:{type(exc).__name__}"]})
    reason = zero_reason(answer)
    report = check_conventions(cand, df, answer, id_columns=id_columns, ties=ties, cache=cache)
    reason = reason or report.rejection
    if reason is None and cfg.metamorphic:
        trials = trials or TableTrials(df, cfg.perturbations, cfg.seed)
        reason = trials.screen(cand, answer, program, shape_only(cand), digits, seen)
    elif reason is None and cand.source in cfg.perturb_sources:
        reason = constant_reason(
            cand, df, answer, cfg.perturbations, cfg.perturb_fraction, cfg.seed
        )
    return cand.model_copy(update={"conventions": report.tried, "rejection_reason": reason})


def shape_only(cand: Candidate) -> bool:
    """Whether the candidate's template declares its answer a property of the shape."""
    if cand.template is None:
        return False
    return getattr(REGISTRY.get(cand.template), "shape_only", False)


def screen(
    candidates: list[Candidate], df: pd.DataFrame, cfg: ScreenConfig
) -> tuple[list[Candidate], list[Candidate]]:
    """(passed, turned away) — every candidate lands in exactly one list."""
    if not cfg.enabled:
        return candidates, []
    ids = numeric_id_columns(df)  # once per table, not per candidate
    cache = RunCache() if cfg.probe_ties else None
    trials = TableTrials(df, cfg.perturbations, cfg.seed) if cfg.metamorphic else None
    done = [screen_one(c, df, cfg, ids, cache, trials) for c in candidates]
    return [c for c in done if c.rejection_reason is None], [c for c in done if c.rejection_reason]
