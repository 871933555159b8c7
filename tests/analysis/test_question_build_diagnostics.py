"""`build_generated` keeps screened-out candidates as rejected records and returns the
diagnostics the questions asset reports (search-stage rejections, operator coverage)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from question_helpers import make_table, small_cfg

from verilearn_assets.analysis.sources.build import build_generated, summarize


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    n = 40
    return pd.DataFrame(
        {
            "x": np.linspace(1.0, 2.0, n) ** 2,  # smooth: no value beyond the Tukey fences
            "y": rng.gamma(2.0, 1.5, n),
            "g": rng.choice(["a", "b", "c"], n),
        }
    )


def test_screened_candidates_become_rejected_records(tmp_path, pool_runner):
    table = make_table(_frame(), tmp_path)
    cfg = small_cfg(enabled=["iqr_outlier_count", "mean_median_gap"])
    built = pool_runner.run(build_generated([table], "template", "train", cfg, pool_runner.pool))
    by_reason = {r.template: (r.status, r.rejection_reason) for r in built.records}
    status, reason = by_reason["iqr_outlier_count"]
    assert status == "rejected" and reason.startswith("degenerate: the answer is exactly 0")
    assert by_reason["mean_median_gap"][0] == "accepted"
    assert built.candidates == len(built.records) == 2
    assert summarize(built.records)["rejection_reasons"] == {"degenerate": 1}
    assert built.coverage == {}  # coverage is for procedural programs


def test_procedural_partition_reports_search_rejections_and_coverage(tmp_path, pool_runner):
    table = make_table(_frame(), tmp_path)
    cfg = small_cfg()
    cfg.procedural.max_programs = 4
    built = pool_runner.run(build_generated([table], "procedural", "train", cfg, pool_runner.pool))
    accepted = built.accepted
    assert accepted and built.coverage["candidates"] == len(accepted)
    used = {op for r in accepted for op in r.program_ops}
    assert {
        k.removeprefix("op:") for k, v in built.coverage.items() if k.startswith("op:") and v
    } == used
    assert sum(built.search_rejected.values()) > 0  # duplicates at least: the search says why
    # per dataset too (the lake rows of mart_generation_diagnostics): the same counts
    assert list(built.search_rejected_by_dataset) == [table.dataset]
    assert built.search_rejected_by_dataset[table.dataset] == built.search_rejected
    assert len({r.id for r in built.records}) == len(built.records)
    assert all(r.conventions is not None and 1.0 <= r.readability <= 5.0 for r in accepted)
