"""Run one template on a tiny hand-written table and return its answer and alternatives'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from question_helpers import make_table, small_cfg

from verilearn_assets.analysis.candidate import Candidate
from verilearn_assets.analysis.programs.dryrun import run_in_process
from verilearn_assets.analysis.templates import REGISTRY
from verilearn_assets.analysis.templates.base import TableView


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
