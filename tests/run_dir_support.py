"""A training run directory as the evaluation gate reads it, with no training: a model dir
(its config.json) and a result.json carrying the run's gate evidence. Shared by the gate
and evaluation tests, which only need what `gate_evidence` and `model_eval` read."""

from __future__ import annotations

from pathlib import Path

from vllm_fixtures import tiny_model_path

from verilearn_assets.training.run_dir import GateEvidence, RunResult


def fake_run_dir(home: Path, run_id: str, evidence: GateEvidence | None, kind: str = "sft") -> Path:
    """`<home>/runs/<run_id>` holding a model dir and the `result.json` a `kind` run writes
    (its base model the tiny model, `$VERILEARN_TINY_MODEL` honoured); returns the model
    dir, the path a user passes to `verilearn eval --model`."""
    run = home / "runs" / run_id
    model = run / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text('{"model_type": "qwen2"}\n')
    result = RunResult(
        run_id=run_id,
        kind=kind,
        model_dir=str(model),
        merged=True,
        base_model=str(tiny_model_path()),
        steps=1,
        final_loss=1.0,
        train_seconds=1.0,
        evidence=evidence,
    )
    (run / "result.json").write_text(result.model_dump_json(indent=2))
    return model
