"""A GRPO-trained model is evaluable: its run carries gate evidence — the SFT run's it
continued (those rows are in its weights) plus the task partitions its prompts came from —
and the eval gate checks both in the Dagster instance.

Real components throughout: the tiny model trains 1 SFT step and 1 GRPO step (rewards from
the bwrap sandbox), on a question verified in that sandbox; the SFT check is the real
`trainable_result`. The family's blocking checks are recorded as decided (passed, then
failed) — what they decide is tested with the family; here only the gate's reading matters.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from gate_support import (
    check_sft_rows,
    decide_family_gate,
    instance_with_sft_rows,
    use_tiny_config_dir,
)
from grpo_support import verified_question, write_question, write_table
from run_dir_support import fake_run_dir

from verilearn_assets.cli import main
from verilearn_assets.core.family import SftRow
from verilearn_assets.core.sandbox.config import load_sandbox_config
from verilearn_assets.core.sandbox.pool import SandboxPool
from verilearn_assets.training.config import load_training_config
from verilearn_assets.training.eval.assets import learned_tasks
from verilearn_assets.training.eval.evidence import gate_evidence
from verilearn_assets.training.eval.serving import resolve_model
from verilearn_assets.training.grpo.trainer import StartModel, grpo_evidence
from verilearn_assets.training.run_dir import GateEvidence, RunResult
from verilearn_assets.training.sft.assets import training_data_gate

GRPO = {
    "max_steps": 1,
    "num_generations": 2,
    "per_device_train_batch_size": 2,
    "max_completion_length": 16,
    "cpu_threads": 1,
}


def _result(run_dir: Path) -> RunResult:
    return RunResult.model_validate_json((run_dir / "result.json").read_text())


def test_grpo_model_passes_the_eval_gate_with_inherited_evidence(
    home: Path,
    tmp_path: Path,
    tiny_model_dir: Path,
    sft_rows_real: list[SftRow],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_tiny_config_dir(monkeypatch, tmp_path / "configs", tiny_model_dir, grpo=GRPO)
    table = write_table(home)

    async def verify():
        async with SandboxPool(load_sandbox_config()) as pool:
            return await verified_question(pool, table)

    question = asyncio.run(verify())
    write_question(home, question)
    instance = instance_with_sft_rows(home, sft_rows_real)
    assert check_sft_rows(instance, home).passed
    decide_family_gate(instance, "analysis", "template", "train", passed=True)

    assert main(["train", "sft", "--max-steps", "1"]) == 0
    assert main(["train", "grpo", "--max-steps", "1"]) == 0
    capsys.readouterr()
    (sft_dir,) = (home / "runs").glob("sft-*")
    (grpo_dir,) = (home / "runs").glob("grpo-*")
    sft, grpo = _result(sft_dir), _result(grpo_dir)
    assert grpo.extra["start"] == "sft" and grpo.extra["sft_run_id"] == sft.run_id

    # the evidence is the SFT run's (its rows are in these weights) plus GRPO's tasks
    ev = grpo.evidence
    assert ev is not None and sft.evidence is not None
    assert ev.inherited_from == sft.run_id
    assert ev.partition_path == sft.evidence.partition_path
    assert ev.rows_used == sft.evidence.rows_used >= 1
    assert ev.materialization_run_id == sft.evidence.materialization_run_id
    assert (ev.family, ev.task_split, ev.task_sources, ev.tasks_used) == (
        "analysis",
        "train",
        ["template"],
        1,
    )

    # the file gate (both the CLI's and model_eval's) and the instance gate let it through
    config = load_training_config()
    mut = resolve_model(grpo_dir / "model")
    assert mut.run_dir == grpo_dir
    passed = gate_evidence(mut, base_model=config.base_model_dir(), baselines=config.eval.baselines)
    assert passed == ev
    assert training_data_gate(instance, home, ev.split, config, learned_tasks(ev)).reasons == []

    # the task partitions GRPO learned from fail their checks now: evaluation refuses
    decide_family_gate(instance, "analysis", "template", "train", passed=False)
    reasons = training_data_gate(instance, home, ev.split, config, learned_tasks(ev)).reasons
    assert reasons and all("template|train" in r and "FAILED" in r for r in reasons)
    assert main(["eval", "--model", str(grpo_dir / "model"), "--split", "train"]) == 2
    err = capsys.readouterr().err
    assert f"refusing {grpo_dir.name}" in err and "does not pass the gate" in err


def test_grpo_evidence_from_the_base_model_and_from_an_ungated_sft_run(tmp_path: Path) -> None:
    from verilearn_assets.analysis.records import QuestionRecord

    gated = GateEvidence(
        split="train",
        partition_path=str(tmp_path),
        materialization_run_id="run-1",
        rows_in_partition=5,
        rows_used=4,
    )
    tasks = [  # only id and source matter to the evidence
        QuestionRecord.model_construct(id="q1", source="template", split="train"),
        QuestionRecord.model_construct(id="q2", source="procedural", split="train"),
        QuestionRecord.model_construct(id="q3", source="llm", split="train"),
    ]
    rows = [{"task_id": "q1"}, {"task_id": "q2"}]  # q3 filtered out (max_tasks, curriculum)

    base = StartModel(tmp_path, "base")
    ev = grpo_evidence(base, gated, "analysis", "train", tasks, rows)
    assert ev is not None and ev.inherited_from is None
    assert (ev.rows_used, ev.tasks_used, ev.task_sources) == (0, 2, ["procedural", "template"])
    assert ev.materialization_run_id == "run-1"  # the sft_dataset gate the run passed
    assert grpo_evidence(base, None, "analysis", "train", tasks, rows) is None  # nobody gated

    ungated_sft = StartModel(tmp_path, "sft", sft_run_id="sft-x", evidence=None)
    assert grpo_evidence(ungated_sft, gated, "analysis", "train", tasks, rows) is None

    # a base-start run's evidence passes the file gate on its tasks, not on rows
    model = fake_run_dir(tmp_path, "grpo-base", ev, kind="grpo")
    assert gate_evidence(resolve_model(model), base_model=tmp_path) == ev
    # tasks claimed without naming their partitions: refused
    result_file = model.parent / "result.json"
    result = RunResult.model_validate_json(result_file.read_text())
    result.evidence = ev.model_copy(update={"task_sources": []})
    result_file.write_text(json.dumps(result.model_dump(mode="json")))
    with pytest.raises(ValueError, match="task_sources"):
        gate_evidence(resolve_model(model), base_model=tmp_path)
