"""Prompt config, few-shot pairs (train split only) and answer extraction."""

from __future__ import annotations

from pathlib import Path

import pytest

from verilearn_assets.core.config import ConfigError
from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.records import DafnyTask

REPO = Path(__file__).resolve().parents[2]


def _task(split: str, name: str = "multiply.Multiply") -> DafnyTask:
    ex = next(e for e in load_bundled() if e.name == name)
    return DafnyTask(
        id=f"{split}-{name}", source="template", split=split, status="accepted",
        role="annotator", example_id=ex.id, name=ex.name, program=ex.program,
        n_lines=ex.n_lines, prefix=ex.prefix, suffix=ex.suffix, spec=ex.spec, body=ex.body,
        target=ex.annotated_body, annotated_body=ex.annotated_body,
        gold_program=ex.gold_program, gold_status="verified", input_program=ex.gold_program,
    )  # fmt: skip


def test_shipped_config_loads_and_unknown_keys_fail(tmp_path: Path) -> None:
    cfg = prompts.load_prompt_config(REPO / "configs")
    assert cfg.stop and set(cfg.system) == {"writer", "annotator"}
    assert cfg.generation.as_request()["min_p"] == cfg.generation.min_p
    (tmp_path / "dafny_prompts.yaml").write_text("variant: strict\nfew_shots: 2\n")
    with pytest.raises(ConfigError, match="few_shots"):
        prompts.load_prompt_config(tmp_path)


def test_few_shot_pairs_only_from_train() -> None:
    train = [_task("train"), _task("train", "power.ComputePow")]
    pairs = prompts.few_shot_pairs(train, "annotator", 1, seed=0)
    assert len(pairs) == 1 and "invariant" in pairs[0][1]
    with pytest.raises(ValueError, match="train split"):
        prompts.few_shot_pairs([*train, _task("test")], "annotator", 1)
    msgs = prompts.messages(_task("dev"), "annotator", shots=pairs)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert "Method body to annotate" in msgs[-1]["content"]


def test_permissive_variant_and_answer_extraction() -> None:
    cfg = prompts.PromptConfig(variant="permissive")
    msgs = prompts.messages(_task("dev"), "writer", config=cfg)
    assert msgs[0]["content"].endswith(cfg.permissive_suffix)
    said = "Reasoning...\n```dafny\n{ draft }\n```\nBetter:\n```dafny\n{\n  y := 1;\n}\n```"
    assert prompts.answer(said) == "{\n  y := 1;\n}"
    assert prompts.answer("{ no fence }") == "{ no fence }"
