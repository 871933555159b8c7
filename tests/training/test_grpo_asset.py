"""`grpo_model` refuses to train unless its data passed the gate (a real Dagster instance)."""

from __future__ import annotations

from pathlib import Path

from dagster import DagsterInstance, materialize

from resources.home import HomeResource
from verilearn_assets.training.config import load_training_config
from verilearn_assets.training.grpo_assets import grpo_gate_reasons, grpo_job, grpo_model


def test_grpo_model_refuses_ungated_data(home: Path) -> None:
    with DagsterInstance.ephemeral() as instance:
        reasons = grpo_gate_reasons(instance, home, load_training_config())
        assert any("sft_dataset [train] was never materialized" in r for r in reasons)
        assert any("no partition of analysis/questions for split 'train'" in r for r in reasons)
        result = materialize(
            [grpo_model],
            instance=instance,
            resources={"home": HomeResource(path=str(home))},
            raise_on_error=False,
        )
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    text = str(failure.event_specific_data.error)
    assert "grpo_model refuses: the gate did not pass" in text
    assert not (home / "runs").exists()  # nothing was trained
    assert grpo_job.name == "grpo_job"
