"""Candidate generation for one table, from the template library or the procedural search.

Generation only proposes; `analysis.verify.verifier` decides. The procedural generator lives in
`analysis.sources.procedural` and is imported lazily, so the template source works on its own.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from verilearn_assets.analysis.config import QuestionsConfig
from verilearn_assets.analysis.screen.config import ScreenConfig
from verilearn_assets.analysis.screen.conventions import TIE_MARK, RunCache, probed
from verilearn_assets.analysis.screen.metamorphic import TableTrials
from verilearn_assets.analysis.screen.run import screen, screen_one
from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.generation_stats import shortfall
from verilearn_assets.analysis.sources.id_columns import numeric_id_columns
from verilearn_assets.analysis.sources.procedural import ProgramScreen, generate_program_candidates
from verilearn_assets.analysis.sources.procedural.dryrun import load_table
from verilearn_assets.analysis.sources.procedural.program import Program
from verilearn_assets.analysis.sources.template import apply_templates
from verilearn_assets.core.answers import parse_answer
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
    """Candidates for one table from one source, screened (see `analysis.screen.run`)."""
    if source == "template":
        outcome = apply_templates(table.columns, table.n_rows, table.path, cfg)
        gen = Generation(outcome.candidates, outcome.not_applicable)
        if gen.candidates and cfg.screen.enabled:
            passed, turned_away = screen(gen.candidates, load_table(table.path), cfg.screen)
            gen.candidates = passed
            gen.rejected.extend(turned_away)
        return gen
    if source == "procedural":
        return _procedural(table, cfg)
    raise ValueError(
        f"question source {source!r} cannot be generated here "
        f"(choose one of {list(GENERATED_SOURCES)})"
    )


def _procedural(table: TableRecord, cfg: QuestionsConfig) -> Generation:
    """The search screens each program as it finds it (`ProgramScreen`), so a program the
    screen turns away makes room for another: the search runs until the table has
    `generation.target_per_table` candidates (or `procedural.max_programs`, if larger) or
    its skeleton budget is spent; a table left short says why in `search_rejected`."""
    target = cfg.generation.target_per_table
    pcfg = cfg.procedural.model_copy(
        update={"max_programs": max(cfg.procedural.max_programs, target)}
    )
    program_screen = _program_screen(cfg.screen, pcfg.digits) if cfg.screen.enabled else None
    found = generate_program_candidates(
        table.columns,
        table.path,
        pcfg,
        program_screen,
        ablates=cfg.screen.metamorphic,
        probe=probed if program_screen and cfg.screen.probe_ties else None,
    )
    gen = Generation(
        found.candidates, rejected=found.rejected, search_rejected=found.stats.rejected
    )
    why = shortfall(table, len(gen.candidates), cfg.generation, cfg.procedural, found.stats)
    if why:
        gen.search_rejected[why] += target - len(gen.candidates)
    return gen


def _program_screen(cfg: ScreenConfig, digits: int) -> ProgramScreen:
    """`screen_one` with the per-table state (ID columns, run cache, perturbed tables)
    built on the first program of a table and reused for the rest. The dry run ran the
    probed code (`seen`: its hooks and tie marks), so the reference is not run again."""
    state: dict[int, tuple[list[str], RunCache | None, TableTrials | None]] = {}

    def run(program: Program, cand: Candidate, df: pd.DataFrame, seen: dict[str, Any]) -> Candidate:
        if id(df) not in state:
            state.clear()  # one table at a time: the frame of the last table is dropped
            state[id(df)] = (
                numeric_id_columns(df),
                RunCache() if cfg.probe_ties else None,
                TableTrials(df, cfg.perturbations, cfg.seed) if cfg.metamorphic else None,
            )
        ids, cache, trials = state[id(df)]
        if cache is not None and "final" in seen:
            ties = frozenset(k[len(TIE_MARK) :] for k in seen if k.startswith(TIE_MARK))
            reference = parse_answer(json.dumps(seen["final"]))
            cache.get("probed", cand.code, lambda: (reference, ties))
        return screen_one(cand, df, cfg, ids, cache, trials, program, digits, seen)

    return run


def generate_candidates(table: TableRecord, source: str, cfg: QuestionsConfig) -> list[Candidate]:
    """Candidates for `table` from `source` ('template' or 'procedural')."""
    return generate(table, source, cfg).candidates
