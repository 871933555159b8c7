"""`train_sft` on real rows: finite, falling loss; a merged model that loads and differs
from the base; a complete run directory; the adapter variant."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import yaml
from transformers import AutoModelForCausalLM

from verilearn_assets.core.family import SftRow
from verilearn_assets.training.config import TrainingConfig
from verilearn_assets.training.sft.trainer import train_sft


def _config(model: Path, **sft: object) -> TrainingConfig:
    settings = {
        "learning_rate": 5e-3,
        "lora_r": 8,
        "lora_alpha": 16,
        "logging_steps": 1,
        "cpu_threads": 1,  # a shared 2-core machine: two threads thrash (run_dir docs)
    }
    return TrainingConfig.model_validate({"base_model": str(model), "sft": settings | sft})


@pytest.fixture(scope="module")
def two_rows(sft_rows_real: list[SftRow]) -> list[SftRow]:
    """One row per question (each weighs 1 question): two rows, one per question."""
    seen: dict[str, SftRow] = {}
    for r in sft_rows_real:
        seen.setdefault(r.task_id, r)
    return list(seen.values())


def test_loss_falls_and_the_merged_model_is_new(
    tiny_model_dir: Path, two_rows: list[SftRow], home: Path
) -> None:
    assert len(two_rows) == 2
    config = _config(tiny_model_dir, weighting="one_per_task")
    run = train_sft(config, two_rows, home=home, max_steps=20)
    assert run.steps == 20 and len(run.losses) == 20
    assert all(math.isfinite(x) for x in run.losses)
    assert sum(run.losses[-3:]) / 3 < run.losses[0] - 0.2, run.losses
    assert run.rows_used == 2 and run.merged and run.model_dir == run.run_dir / "model"

    base = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    trained = AutoModelForCausalLM.from_pretrained(str(run.model_dir))
    assert not any("lora" in k for k in trained.state_dict())  # merged: a plain model
    changed = [
        k for k, v in trained.state_dict().items() if not torch.equal(v, base.state_dict()[k])
    ]
    assert changed and any("proj" in k for k in changed)
    assert (run.model_dir / "chat_template.jinja").is_file()

    d = run.run_dir
    assert d.parent == home / "runs"
    cfg = yaml.safe_load((d / "config.yaml").read_text())
    assert cfg["base_model"] == str(tiny_model_dir) and cfg["sft"]["lora_r"] == 8
    assert json.loads((d / "seeds.json").read_text())["seed"] == 0
    system = json.loads((d / "system.json").read_text())
    assert system["versions"]["trl"] and system["versions"]["torch"] and system["device"]
    metrics = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in metrics if "loss" in m]
    assert [m["step"] for m in steps] == list(range(1, 21))
    assert all("learning_rate" in m and m["num_input_tokens_seen"] > 0 for m in steps)
    assert (d / "plots" / "loss.png").read_bytes()[:4] == b"\x89PNG"
    result = json.loads((d / "result.json").read_text())
    assert result["model_dir"] == str(run.model_dir) and result["steps"] == 20
    assert result["extra"]["rows_used"] == 2


def test_adapter_only_when_merge_is_off(
    tiny_model_dir: Path, sft_rows_real: list[SftRow], home: Path
) -> None:
    run = train_sft(_config(tiny_model_dir, merge=False), sft_rows_real, home=home, max_steps=2)
    assert not run.merged and run.model_dir.name == "adapter"
    adapter = json.loads((run.model_dir / "adapter_config.json").read_text())
    assert adapter["r"] == 8 and Path(adapter["base_model_name_or_path"]) == tiny_model_dir
    assert (run.model_dir / "adapter_model.safetensors").is_file()
    # the K=2 traces of one question were drawn as one row, the other question as one
    assert run.result is not None and run.result.extra["tasks"] == 2
    assert run.rows_used == 2 and run.result.extra["rows_in_split"] == 3


def test_full_fine_tuning_refuses_to_keep_an_adapter() -> None:
    with pytest.raises(ValueError, match=r"sft\.method is 'full' but sft\.merge is false"):
        TrainingConfig.model_validate({"sft": {"method": "full", "merge": False}})
    assert TrainingConfig.model_validate({"sft": {"method": "full"}}).sft.merge


def test_full_fine_tuning_saves_a_plain_model_with_every_weight_trained(
    tiny_model_dir: Path, two_rows: list[SftRow], home: Path
) -> None:
    config = _config(tiny_model_dir, method="full", weighting="one_per_task")
    run = train_sft(config, two_rows, home=home, max_steps=2)
    assert run.merged and run.model_dir == run.run_dir / "model" and run.steps == 2
    assert not (run.model_dir / "adapter_config.json").exists()
    assert run.result is not None and run.result.extra["method"] == "full"
    base = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)).state_dict()
    trained = AutoModelForCausalLM.from_pretrained(str(run.model_dir)).state_dict()
    assert trained.keys() == base.keys()
    # LoRA never touches the embeddings or the norms; full fine-tuning does
    assert not torch.equal(trained["model.embed_tokens.weight"], base["model.embed_tokens.weight"])
    assert any(not torch.equal(v, base[k]) for k, v in trained.items() if "norm" in k)
