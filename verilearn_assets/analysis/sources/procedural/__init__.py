"""Procedural question source: typed operators, grammar search, reduction, pandas compiler.

`generate_programs` turns a table profile into verified-later `Candidate`s: the grammar
grows typed skeletons, columns are bound from the profile only, programs are reduced to a
canonical form and de-duplicated, then compiled to hooked pandas code and worded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pandas as pd

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.procedural.compile import compile_program
from verilearn_assets.analysis.sources.procedural.coverage import (
    coverage_report,
    is_evidence_decision_chain,
)
from verilearn_assets.analysis.sources.procedural.dryrun import (
    AnswerUnusable,
    load_table,
    noop_steps,
    run_in_process,
)
from verilearn_assets.analysis.sources.procedural.operators import (
    BY_NAME,
    FAMILIES,
    OPERATORS,
    OpSpec,
)
from verilearn_assets.analysis.sources.procedural.program import (
    SOURCE,
    DeadCodeError,
    Node,
    Program,
    ProgramError,
    Step,
    linearize,
    validate,
)
from verilearn_assets.analysis.sources.procedural.reduce import dedupe, reduce_program
from verilearn_assets.analysis.sources.procedural.search import (
    ProgramSearchConfig,
    SearchResult,
    SearchStats,
    search_programs,
)
from verilearn_assets.analysis.sources.procedural.types import ANSWER_FORMATS
from verilearn_assets.analysis.sources.procedural.wording import (
    mechanical_question,
    natural_question,
)
from verilearn_assets.core.records import ColumnProfile

__all__ = [
    "FAMILIES",
    "OPERATORS",
    "DeadCodeError",
    "Node",
    "OpSpec",
    "Program",
    "ProgramError",
    "ProgramSearchConfig",
    "SearchResult",
    "SearchStats",
    "Step",
    "compile_program",
    "coverage_report",
    "dedupe",
    "generate_programs",
    "is_evidence_decision_chain",
    "linearize",
    "reduce_program",
    "search_programs",
    "to_candidate",
    "validate",
]


def _difficulty(program: Program) -> str:
    n = len(program.steps)
    if "decision" in program.families:
        return "hard" if n >= 7 else "medium"
    return "easy" if n <= 3 else "medium" if n <= 6 else "hard"


def to_candidate(program: Program, digits: int = 4) -> Candidate:
    """Compile and word one program."""
    return Candidate(
        source="procedural",
        program_ops=program.ops,
        op_families=program.families,
        question=natural_question(program, digits),
        question_mechanical=mechanical_question(program, digits),
        answer_schema=ANSWER_FORMATS[program.output_type].schema,
        code=compile_program(program, digits),
        n_steps=len(program.steps),
        difficulty=_difficulty(program),  # type: ignore[arg-type]
    )


def _dry_run(
    df: pd.DataFrame,
    digits: int,
    program: Program,
    seen: dict[str, Any] | None = None,
    probe: Callable[[str], str] | None = None,
) -> str | None:
    """Why the program's answer on the table is unusable or a step is a no-op, or None.
    `seen` receives the hooked values; `probe` rewrites the code first (the screen's tie
    probes, so the screen reuses this run instead of repeating it)."""
    seen = {} if seen is None else seen
    code = compile_program(program, digits)
    try:
        run_in_process(probe(code) if probe else code, df, seen)
    except AnswerUnusable:
        return "unusable_answer"
    except (
        ValueError,
        ZeroDivisionError,
        TypeError,
        KeyError,
        IndexError,
        FloatingPointError,
    ) as exc:
        return f"dry_run_{type(exc).__name__}"
    steps = [
        (
            f"x{i + 1}",
            BY_NAME[s.op].family,
            [None if r == SOURCE else f"x{r + 1}" for r in s.inputs],
        )
        for i, s in enumerate(program.steps)
    ]
    return noop_steps(steps, seen, len(df))


@dataclass
class ProgramGeneration:
    """Accepted candidates, candidates kept as rejected records (meaningless chains and
    degenerate steps, with `rejection_reason`), and the search's counts."""

    candidates: list[Candidate]
    rejected: list[Candidate]
    stats: SearchStats


# screens a compiled program on its table, given the dry run's hooked values: the candidate
# back with `rejection_reason` set when it is turned away (`analysis.sources.generate`)
ProgramScreen = Callable[[Program, Candidate, pd.DataFrame, dict[str, Any]], Candidate]


def generate_program_candidates(
    columns: list[ColumnProfile],
    table_path: str | None,
    cfg: ProgramSearchConfig | None = None,
    screen: ProgramScreen | None = None,
    ablates: bool = False,
    probe: Callable[[str], str] | None = None,
) -> ProgramGeneration:
    """Procedural candidates for one table, deterministic for a given profile and seed.

    Bindings use the profile only; when `table_path` is given (and `cfg.dry_run`), each
    program is also run in-process on the table and dropped if its answer is unusable,
    then passed to `screen`: a program the screen turns away counts as a search rejection,
    so the search goes on until `cfg.max_programs` pass it. `ablates` says the screen
    drops steps one at a time, which replaces the adjacent-pair rules of `chain_problem`;
    `probe` is the code rewrite of the dry run (see `_dry_run`).
    """
    cfg = cfg or ProgramSearchConfig()
    accept = None
    screened: dict[str, Candidate] = {}
    if table_path is not None and cfg.dry_run:
        df = load_table(table_path)
        dry = partial(_dry_run, df, cfg.digits, probe=probe)

        def accept(program: Program) -> str | None:
            seen: dict[str, Any] = {}
            reason = dry(program, seen)
            if reason is None and screen is not None:
                cand = screened[program.key] = screen(
                    program, to_candidate(program, cfg.digits), df, seen
                )
                reason = cand.rejection_reason
            return reason

    result = search_programs(columns, cfg, accept=accept, pair_rules=not (screen and ablates))

    def cand(p: Program) -> Candidate:
        return screened.get(p.key) or to_candidate(p, cfg.digits)

    rejected = [
        cand(p).model_copy(update={"rejection_reason": why}) for p, why in result.kept_rejections
    ]
    return ProgramGeneration([cand(p) for p in result.programs], rejected, result.stats)


def generate_programs(
    columns: list[ColumnProfile], table_path: str | None, cfg: ProgramSearchConfig | None = None
) -> list[Candidate]:
    """The accepted candidates of `generate_program_candidates`."""
    return generate_program_candidates(columns, table_path, cfg).candidates
