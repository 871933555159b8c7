"""Floor policy and coverage: every eligible bundled table yields enough, including chains."""

from __future__ import annotations

from pathlib import Path

from programs_tables import STATSMODELS_TABLES, profile, statsmodels_table, write_parquet

from verilearn_assets.analysis.sources.procedural import (
    FAMILIES,
    OPERATORS,
    ProgramSearchConfig,
    coverage_report,
    generate_programs,
    is_evidence_decision_chain,
)

MIN_PROGRAMS_PER_TABLE = 30


def test_floor_on_bundled_tables_and_family_coverage(tmp_path: Path) -> None:
    all_candidates = []
    eligible = 0
    for name in STATSMODELS_TABLES:
        df = statsmodels_table(name)
        cols = profile(df)
        if sum(c.kind in ("numeric", "integer") for c in cols) < 2:
            continue
        eligible += 1
        cands = generate_programs(cols, write_parquet(df, tmp_path, name), ProgramSearchConfig())
        assert len(cands) >= MIN_PROGRAMS_PER_TABLE, (name, len(cands))
        assert any(is_evidence_decision_chain(c) for c in cands), name
        # long chains, but no padding: the meaningless-chain rule (issue 10) turns away
        # chains lengthened by repeated, cancelling or pointless steps, so 7 is the floor
        assert max(c.n_steps for c in cands) >= 7, name
        all_candidates += cands
    assert eligible >= 5
    report = coverage_report(all_candidates)
    assert report["candidates"] == len(all_candidates)
    for family in FAMILIES:
        assert report[f"family:{family}"] > 0, family
    used = sum(report[f"op:{s.name}"] > 0 for s in OPERATORS)
    assert used >= 0.9 * len(OPERATORS), {k: v for k, v in report.items() if v == 0}
    assert (
        report["evidence_decision_chains"]
        == sum(is_evidence_decision_chain(c) for c in all_candidates)
        >= eligible
    )
