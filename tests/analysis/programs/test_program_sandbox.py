"""A handful of compiled programs through the real sandbox pool (Docker or bubblewrap)."""

from __future__ import annotations

import json
from pathlib import Path

from programs_harness import execute
from programs_tables import profile, statsmodels_table, write_parquet

from verilearn_assets.analysis.sources.procedural import (
    ProgramSearchConfig,
    generate_programs,
    is_evidence_decision_chain,
)
from verilearn_assets.core.records import canonical_json
from verilearn_assets.core.sandbox.config import load_sandbox_config
from verilearn_assets.core.sandbox.pool import run_programs_sync


def test_compiled_programs_run_in_the_sandbox(home: Path, tmp_path: Path) -> None:
    df = statsmodels_table("grunfeld")
    path = write_parquet(df, tmp_path, "grunfeld")
    cands = generate_programs(profile(df), path, ProgramSearchConfig(max_programs=40))
    chains = [c for c in cands if is_evidence_decision_chain(c)][:2]
    longest = sorted(cands, key=lambda c: -c.n_steps)[:2]
    picked = list({c.code: c for c in [*chains, *longest, *cands[:2]]}.values())
    assert chains and len(picked) >= 4
    results = run_programs_sync(load_sandbox_config(), [(c.code, path) for c in picked])
    for cand, res in zip(picked, results, strict=True):
        assert res.status == "ok", (cand.code, res.stderr)
        assert len(res.submissions) == 1, res.submissions
        expected = execute(cand.code, df).submissions[0]
        got = json.loads(res.submissions[0])
        if cand.answer_schema.kind == "number":
            assert abs(got - expected) <= 1e-4 + 1e-6 * abs(expected)
        else:
            assert canonical_json(got) == canonical_json(expected)
        assert {h.name for h in res.hooks} >= {f"x{i + 1}" for i in range(cand.n_steps)}
