"""Run one template on a tiny hand-written table and return its answer and alternatives'."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from question_helpers import make_table, small_cfg

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.procedural.dryrun import run_in_process
from verilearn_assets.analysis.sources.template import REGISTRY
from verilearn_assets.analysis.sources.template.base import TableView


def build(name: str, frame: pd.DataFrame, tmp: Path, **template: Any) -> Candidate:
    """The template's first candidate on `frame` (loosened eligibility for tiny tables)."""
    table = make_table(frame, tmp, name)
    view = TableView(table.columns, table.n_rows, table.path, small_cfg(**template))
    found = REGISTRY[name].build(view)
    assert found, f"{name} gave no candidate"
    return found[0]


def answers(c: Candidate, frame: pd.DataFrame) -> tuple[Any, dict[str, Any]]:
    """(reference answer, {alternative description: answer}), run on `frame`."""
    return run_in_process(c.code, frame), {
        a.description: run_in_process(a.code, frame) for a in c.alternatives
    }


def verified(
    pool_runner: Any, name: str, frame: pd.DataFrame, tmp: Path, **template: Any
) -> tuple[Candidate, Any, dict[str, Any]]:
    """(candidate, answer, {alternative description: answer}) of the template's first
    candidate on `frame`, as the real sandbox verification records them (accepted)."""
    table = make_table(frame, tmp, name)
    cfg = small_cfg(**template)
    found = REGISTRY[name].build(TableView(table.columns, table.n_rows, table.path, cfg))
    assert found, f"{name} gave no candidate"
    (record,), _ = pool_runner.verify([(table, found[0])], cfg)
    assert record.status == "accepted", record.rejection_reason
    alts = {a.description: json.loads(a.answer) for a in record.alternatives}
    return found[0], json.loads(record.answer), alts
