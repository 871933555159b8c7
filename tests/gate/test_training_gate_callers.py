"""Every stage behind the gate asks the one training gate (`gate/training_gate.py`).

`sft_dataset`, `sft_model`, `grpo_model`, `model_eval` and `verilearn gate` each leave the
gate's evidence record (on a refusal's metadata, or in `verilearn gate --evidence FILE`),
and every record names a family's blocking checks, and `sft_dataset`'s, the same way: a
stage that went back to reading Dagster's evaluations on its own would leave no record (or
a different one) and fail here. Real Dagster runs in a fresh home, with the toy family
(`tests/platform/toy_family/`) materialized and passing; nothing else is, so every
training stage refuses before it loads a model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from run_dir_support import fake_run_dir

from verilearn_assets.training.run_dir import GateEvidence

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

SCRIPT = """
import json, sys
from dagster import materialize
from verilearn_assets.cli.orchestrate import instance_for_home, run_job
from verilearn_assets.core import lake
from verilearn_assets.definitions import RESOURCES
from verilearn_assets.gate.training_gate import evidence_from_failure_metadata
from verilearn_assets.training.sft.dataset_assets import sft_dataset
from verilearn_assets.training.eval.assets import model_eval
from verilearn_assets.training.grpo.assets import grpo_model
from verilearn_assets.training.sft.assets import sft_model

instance = instance_for_home(lake.home())
assert run_job(instance, "toy_job", "template|train").success


def refusal(assets, partition=None, run_config=None):
    out = materialize(assets, partition_key=partition, instance=instance, resources=RESOURCES,
                      run_config=run_config or {}, raise_on_error=False)
    (failed,) = [e for e in out.all_events if e.event_type_value == "STEP_FAILURE"]
    data = failed.event_specific_data.user_failure_data
    assert data is not None, failed.event_specific_data.error
    return evidence_from_failure_metadata(data.metadata).model_dump(mode="json")


eval_config = {"ops": {"model_eval": {"config": {"model": sys.argv[1]}}}}
print(json.dumps({
    "sft_dataset": refusal([sft_dataset], "train"),
    "sft_model": refusal([sft_model]),
    "grpo_model": refusal([grpo_model]),
    "model_eval": refusal([model_eval], "train", eval_config),
}))
"""


def _grpo_run(home: Path) -> Path:
    """A GRPO run directory whose evidence names the analysis train tasks it learned from
    (all `model_eval` reads before it asks the gate)."""
    partition = home / "lake" / "sft_dataset" / "split=train"
    partition.mkdir(parents=True)
    evidence = GateEvidence(
        split="train",
        partition_path=str(partition),
        rows_in_partition=0,
        rows_used=0,
        family="analysis",
        task_split="train",
        task_sources=["template"],
        tasks_used=3,
    )
    return fake_run_dir(home, "grpo-callers", evidence, kind="grpo")


def _of(record: dict, prefix: str) -> list[str]:
    return [c for c in record["checks"] if c.startswith(prefix)]


def test_every_stage_behind_the_gate_asks_the_one_training_gate(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = os.environ | {
        "VERILEARN_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "VERILEARN_FAMILIES": "toy_family",
        "PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "platform"), str(REPO)]),
    }
    model = _grpo_run(home)
    ran = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(model)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    got = json.loads(ran.stdout.strip().splitlines()[-1])

    evidence_file = tmp_path / "gate.json"
    cli = subprocess.run(
        [sys.executable, "-m", "verilearn_assets.cli", "gate", "--family", "toy"]
        + ["--sources", "template", "--splits", "train", "--evidence", str(evidence_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert "training gate [train] for toy: open" in cli.stdout
    (got["verilearn gate"],) = json.loads(evidence_file.read_text())

    assert set(got) == {"sft_dataset", "sft_model", "grpo_model", "model_eval", "verilearn gate"}
    assert all(r["split"] == "train" for r in got.values())
    # the family checks: what `sft_dataset` reads of a family, every other stage reads too
    toy = _of(got["sft_dataset"], "toy/")
    assert toy and _of(got["verilearn gate"], "toy/") == toy
    analysis = _of(got["sft_dataset"], "analysis/")
    assert analysis
    assert _of(got["grpo_model"], "analysis/") == _of(got["model_eval"], "analysis/") == analysis
    # the dataset checks: what `sft_model` reads of sft_dataset, GRPO and evaluation read too
    dataset = got["sft_model"]["checks"]
    assert dataset == ["sft_dataset:sft_dataset_trainable"]
    assert _of(got["grpo_model"], "sft_dataset:") == _of(got["model_eval"], "sft_dataset:")
    assert _of(got["grpo_model"], "sft_dataset:") == dataset
    # each refusal is the record's reasons; the open gate has none and read each toy check
    assert got["verilearn gate"]["reasons"] == []
    assert {e["status"] for e in got["verilearn gate"]["evaluations"]} == {"passed"}
    assert any("smoke_suite_passes" in r for r in got["sft_dataset"]["reasons"])
    assert any(
        "sft_dataset [train] was never materialized" in r for r in got["sft_model"]["reasons"]
    )
    assert any("analysis tasks [template|train]" in r for r in got["model_eval"]["reasons"])
