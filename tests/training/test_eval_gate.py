"""`model_eval` (and `verilearn eval`) refuse a trained model whose data did not pass the gate,
and a model outside any run that is not a configured baseline (a trained model copied out of
its run directory must not pass as "base").

The refusal happens before anything is served, so these tests need no model server: a run
directory with a model dir (its config.json) and a result.json is all the gate reads.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dagster import materialize
from run_dir_support import fake_run_dir

from resources.home import HomeResource
from verilearn_assets.cli import main
from verilearn_assets.training.config import load_training_config
from verilearn_assets.training.eval.assets import model_eval
from verilearn_assets.training.eval.evidence import NotABaseline, UngatedModel, gate_evidence
from verilearn_assets.training.eval.serving import resolve_model
from verilearn_assets.training.run_dir import GateEvidence


def _evidence(home: Path, partition: Path, rows_used: int = 3) -> GateEvidence:
    return GateEvidence(
        split="train",
        partition_path=str(partition),
        rows_in_partition=3,
        rows_used=rows_used,
    )


def _gate(model: Path, base_model: Path | str | None = None, baselines: list[str] | None = None):
    """`gate_evidence` as the CLI and the asset call it (configs/training.yaml by default)."""
    cfg = load_training_config()
    return gate_evidence(
        resolve_model(model),
        base_model=base_model or cfg.base_model_dir(),
        baselines=cfg.eval.baselines if baselines is None else baselines,
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
        (
            "never_gated",
            "its training data does not pass the gate: sft_dataset [train] was never materialized",
        ),
        ("copied_out", "not a baseline"),
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
        "copied_out": _evidence(home, partition),  # its run is fine: the copy has none
    }[case]
    model = fake_run_dir(home, f"sft-{case}", evidence)
    if case == "copied_out":  # a trained model moved out of its run: no run, not the base
        model = Path(shutil.copytree(model, home / "elsewhere" / f"sft-{case}"))
    result = _materialize(home, model)
    assert not result.success
    message = _failure(result)
    assert "refuses" in message and f"sft-{case}" in message and expected in message
    if case == "copied_out":
        assert str(model) in message and "eval.baselines" in message


def test_cli_eval_refuses_too_and_only_configured_baselines_pass(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = fake_run_dir(home, "sft-handmade", None)
    assert main(["eval", "--model", str(model), "--split", "dev"]) == 2
    err = capsys.readouterr().err
    assert "refusing sft-handmade" in err and "evidence" in err
    with pytest.raises(UngatedModel, match="evidence"):
        _gate(model)

    # the trained model copied out of its run directory: no run, and not a baseline
    copy = home / "copy"
    shutil.copytree(model, copy)
    assert resolve_model(copy).run_dir is None
    for family in ("analysis", "dafny"):
        assert main(["eval", "--model", str(copy), "--split", "dev", "--family", family]) == 2
        err = capsys.readouterr().err
        assert "refusing copy" in err and str(copy) in err and "eval.baselines" in err
    with pytest.raises(NotABaseline, match="not a baseline"):
        _gate(copy)
    with pytest.raises(NotABaseline, match="served model 'somename'"):
        _gate(Path("somename"))  # a bare name: a served model, unlisted

    # the configured base model, or a directory / served name listed in eval.baselines
    assert _gate(copy, base_model=copy) is None
    assert _gate(copy, baselines=[str(copy)]) is None
    assert _gate(Path("somename"), baselines=["somename"]) is None
    with pytest.raises(NotABaseline):  # a listed name does not let a directory through
        _gate(copy, baselines=["copy"])
