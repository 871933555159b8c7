"""Evaluation through the family contract, the parts that need no model: which roles each
family offers, clear refusals before anything is served, record ids per role, and the
warehouse reading records written before roles existed."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from verilearn_assets.cli import main
from verilearn_assets.core import lake
from verilearn_assets.core.eval_records import EVAL_ASSET, ModelEvalRecord
from verilearn_assets.core.family import family
from verilearn_assets.core.warehouse import build_all, reader, warehouse_path, writer
from verilearn_assets.training.config import load_training_config
from verilearn_assets.training.eval.evaluator import evaluate_model
from verilearn_assets.training.eval.request import EvalRequest
from verilearn_assets.training.eval.result import write_eval_records
from verilearn_assets.training.eval.single_turn import eval_roles, family_rows, family_stop


def test_roles_come_from_the_contract() -> None:
    assert eval_roles(family("dafny")) == (
        "writer",
        "annotator",
        "writer_cascade",
        "annotator_frozen_writer",
        "cascade",
    )
    assert eval_roles(family("refactor")) == ("default",)
    # requests carry the stop sequences the family's own teacher sends
    from verilearn_assets.dafny.prompts import load_prompt_config

    assert family_stop(family("dafny")) == load_prompt_config().stop != []
    from verilearn_assets.refactor.rollout.teachers import load_actors

    # refactor: a step ends at </state_update>, where its vLLM actors stop too (issue 28)
    assert family_stop(family("refactor")) == ["</state_update>"]
    assert all(a.stop == ["</state_update>"] for a in load_actors().actors)


def test_refusals_name_what_is_missing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(
        ValueError, match=r"no role 'judge' \(roles: writer, annotator, writer_cascade"
    ):
        family_rows(home, family("dafny"), "dev", "judge")
    with pytest.raises(ValueError, match="no accepted dafny tasks under .*dafny/tasks"):
        family_rows(home, family("dafny"), "dev", "writer")
    with pytest.raises(ValueError, match="one role, 'default'"):
        evaluate_model(EvalRequest(model="m", split="dev", home=home, role="writer"))

    base = str(load_training_config().base_model_dir())
    cases = [
        (["--family", "nope"], "--family 'nope' unknown"),
        (["--family", "dafny", "--role", "judge"], "--role 'judge': family dafny has roles"),
        (["--family", "dafny", "--role", "annotator"], "no accepted dafny tasks"),
    ]
    for extra, expected in cases:
        assert main(["eval", "--model", base, "--split", "dev", *extra]) == 2
        assert expected in capsys.readouterr().err


def _record(model: str, role: str, task: str, passed: bool) -> ModelEvalRecord:
    return ModelEvalRecord(
        id=ModelEvalRecord.make_id(model, task, "dafny", role),
        model=model,
        family="dafny",
        role=role,
        question_id=task,
        source="template",
        split="dev",
        dataset="dafny",
        template_family="template",
        difficulty="1.0",
        passed=passed,
    )


def test_roles_sit_side_by_side_and_old_records_read_as_default(home: Path) -> None:
    root = lake.lake_root(home)
    a = _record("m", "writer", "t1", True)
    b = _record("m", "annotator", "t1", False)
    assert a.id != b.id  # one id per (model, family, role, task)
    write_eval_records(home, "dev", [a])
    write_eval_records(home, "dev", [b])
    write_eval_records(home, "dev", [a.model_copy(update={"passed": False})])  # replaces a
    stored = lake.read_records(EVAL_ASSET, ModelEvalRecord, root, split="dev")
    assert sorted((r.role, r.passed) for r in stored) == [  # type: ignore[attr-defined]
        ("annotator", False),
        ("writer", False),
    ]

    # a partition written before the role column existed
    old = ModelEvalRecord.to_frame([_record("old", "default", "t2", True)]).drop("role")
    lake.write_partition(EVAL_ASSET, old, root, split="test")
    assert (
        "role"
        not in pl.read_parquet(next((root / EVAL_ASSET).glob("split=test/*.parquet"))).columns
    )
    db = warehouse_path(home)
    with writer(db, 60) as con:
        build_all(con, root)
    with reader(db, 60) as con:
        rows = con.execute(
            "SELECT model, family, role, n_questions, n_passed FROM mart_model_pass_rate "
            "WHERE source = '(all)' ORDER BY model, role"
        ).fetchall()
    assert rows == [
        ("m", "dafny", "annotator", 1, 0),
        ("m", "dafny", "writer", 1, 0),
        ("old", "dafny", "default", 1, 1),
    ]


def test_the_request_is_validated_and_the_hooks_come_from_the_family(home: Path) -> None:
    """`EvalRequest` refuses an unknown key; the family contract, not a family name, says
    which families run their own evaluation and which roles they offer."""
    from pydantic import ValidationError

    from verilearn_assets.training.families import default_family

    assert default_family() == "analysis"
    assert family("analysis").evaluation is not None
    assert eval_roles(family("analysis")) == ("default",)
    assert family("dafny").evaluation is None and family("refactor").evaluation is None
    with pytest.raises(ValidationError, match="question_ids"):
        EvalRequest(model="m", split="dev", home=home, question_ids=["q"])  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['teachr'\]"):
        evaluate_model(EvalRequest(model="m", split="dev", home=home, options={"teachr": 1}))
