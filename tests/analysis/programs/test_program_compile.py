"""Compiled programs run on real tables: grounded hooks, one submission of the right type."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from programs_harness import execute
from programs_tables import mixed_table, profile, statsmodels_table, write_parquet

from verilearn_assets.analysis.sources.procedural import ProgramSearchConfig, generate_programs

KIND_CHECKS = {
    "number": lambda v: isinstance(v, float) and math.isfinite(v),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "string": lambda v: isinstance(v, str) and v != "",
    "mapping": lambda v: (
        isinstance(v, dict)
        and v
        and all(isinstance(k, str) and isinstance(x, float) for k, x in v.items())
    ),
}


@pytest.mark.parametrize("name", ["fair", "grunfeld", "statecrime", "mixed"])
def test_compiled_programs_execute_with_grounded_hooks(name: str, tmp_path: Path) -> None:
    df = mixed_table() if name == "mixed" else statsmodels_table(name)
    path = write_parquet(df, tmp_path, name)
    cands = generate_programs(profile(df), path, ProgramSearchConfig(max_programs=50))
    assert len(cands) >= 20
    for cand in cands:
        run = execute(cand.code, df)
        assert len(run.submissions) == 1, cand.code
        answer = run.submissions[0]
        assert KIND_CHECKS[cand.answer_schema.kind](answer), (cand.code, answer)
        names = [h["name"] for h in run.hooks]
        assert names == [f"x{i + 1}" for i in range(cand.n_steps)] + ["final"]
        for i, h in enumerate(run.hooks):
            assert set(h["depends_on"]) <= set(names[:i]), h
        assert cand.code.count("submit(") == 1
        assert cand.question and cand.question_mechanical.count(" = ") == cand.n_steps + 1
        assert len(cand.program_ops) == cand.n_steps
        assert cand.source == "procedural"


def test_without_a_table_programs_are_still_valid_code(tmp_path: Path) -> None:
    df = statsmodels_table("macrodata")
    cands = generate_programs(profile(df), None, ProgramSearchConfig(max_programs=30))
    ran = 0
    for cand in cands:
        run = execute(cand.code, df)
        assert len(run.submissions) == 1
        ran += 1
    assert ran == len(cands) >= 20


def test_missing_table_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.parquet"):
        generate_programs(profile(mixed_table()), str(tmp_path / "nope.parquet"))
