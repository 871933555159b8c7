"""`model_eval` (and `verilearn eval`) refuse a trained model whose data did not pass the gate.

The refusal happens before anything is served, so these tests need no model server: a run
directory with a model dir (its config.json) and a result.json is all the gate reads.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dagster import materialize

from resources.home import HomeResource
from verilearn_assets.cli import main
from verilearn_assets.training.eval_assets import model_eval
from verilearn_assets.training.evaluate import UngatedModel, gate_evidence, resolve_model
from verilearn_assets.training.run_dir import GateEvidence, RunResult


def _run_dir(home: Path, run_id: str, evidence: GateEvidence | None) -> Path:
    run = home / "runs" / run_id
    model = run / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text('{"model_type": "qwen2"}\n')
    result = RunResult(
        run_id=run_id,
        kind="sft",
        model_dir=str(model),
        merged=True,
        base_model=".verilearn/models/tiny-qwen2",
        steps=1,
        final_loss=1.0,
        train_seconds=1.0,
        evidence=evidence,
    )
    (run / "result.json").write_text(result.model_dump_json(indent=2))
    return model


def _evidence(home: Path, partition: Path, rows_used: int = 3) -> GateEvidence:
    return GateEvidence(
        split="train",
        partition_path=str(partition),
        rows_in_partition=3,
        rows_used=rows_used,
    )


def _materialize(home: Path, model: Path):  # -> ExecuteInProcessResult
    return materialize(
        [model_eval],
        partition_key="dev",
        resources={"home": HomeResource(path=str(home))},
        run_config={"ops": {"model_eval": {"config": {"model": str(model)}}}},
        raise_on_error=False,
    )


def _failure(result) -> str:  # noqa: ANN001
    failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failures, "model_eval should have failed"
    return str(failures[0].event_specific_data.error.message)


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("no_evidence", "field 'evidence' is empty"),
        ("partition_gone", "does not exist"),
        ("nothing_used", "rows_used is 0"),
        ("never_gated", "was never materialized"),
    ],
)
def test_model_eval_refuses_ungated_training_data(home: Path, case: str, expected: str) -> None:
    partition = home / "lake" / "sft_dataset" / "split=train"
    if case != "partition_gone":
        partition.mkdir(parents=True)
    evidence = {
        "no_evidence": None,
        "partition_gone": _evidence(home, partition),
        "nothing_used": _evidence(home, partition, rows_used=0),
        "never_gated": _evidence(home, partition),  # looks right; Dagster never gated it
    }[case]
    model = _run_dir(home, f"sft-{case}", evidence)
    result = _materialize(home, model)
    assert not result.success
    message = _failure(result)
    assert "refuses" in message and f"sft-{case}" in message and expected in message


def test_cli_eval_refuses_too_and_the_base_model_is_the_baseline(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _run_dir(home, "sft-handmade", None)
    assert main(["eval", "--model", str(model), "--split", "dev"]) == 2
    err = capsys.readouterr().err
    assert "refusing sft-handmade" in err and "evidence" in err
    with pytest.raises(UngatedModel, match="evidence"):
        gate_evidence(resolve_model(model))
    # a model directory outside any run (the base) has no training data: allowed
    base = home / "base"
    shutil.copytree(model, base)
    assert resolve_model(base).run_dir is None and gate_evidence(resolve_model(base)) is None
