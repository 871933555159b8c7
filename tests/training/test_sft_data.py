"""Mixture and weighting: what enters SFT, how often, and the split boundary."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from verilearn_assets.core import lake
from verilearn_assets.core.config import ConfigError, load_yaml_model
from verilearn_assets.core.family import SftRow
from verilearn_assets.training.config import TrainingConfig, load_training_config
from verilearn_assets.training.sft.data import (
    SftDataMissing,
    apply_weights,
    load_sft_rows,
    select_mixture,
)


def _row(family: str, task: str, trace: int, k: int, **kw: object) -> SftRow:
    rid = f"{task}-{trace}"
    return SftRow(
        id=SftRow.make_id(family, rid),
        family=family,
        task_id=task,
        rollout_id=rid,
        source=kw.get("source", "template"),
        split=kw.get("split", "train"),
        teacher="program",
        messages=[{"role": "user", "content": task}, {"role": "assistant", "content": rid}],
        n_messages=2,
        weight=1.0 / k,
        template=kw.get("template"),
    )


def _rows() -> list[SftRow]:
    rows = [_row("analysis", f"q{i}", t, 3) for i in range(40) for t in range(3)]
    rows += [_row("dafny", f"d{i}", 0, 1, template="writer") for i in range(10)]
    return rows


def test_k_traces_enter_once_per_question_each_with_equal_chance() -> None:
    cfg = TrainingConfig()
    sel = apply_weights(select_mixture(_rows(), cfg.mixture, "train"), cfg.sft)
    per_task = Counter(r.task_id for r in sel.rows)
    assert set(per_task.values()) == {1} and len(per_task) == 50 == sel.tasks
    traces = Counter(r.rollout_id.split("-")[1] for r in sel.rows if r.family == "analysis")
    assert set(traces) == {"0", "1", "2"}  # every trace can be the one drawn
    again = apply_weights(select_mixture(_rows(), cfg.mixture, "train"), cfg.sft)
    assert [r.id for r in again.rows] == [r.id for r in sel.rows]  # seeded


def test_family_weights_and_filters() -> None:
    cfg = TrainingConfig.model_validate(
        {"mixture": {"family_weights": {"dafny": 2.0, "analysis": 0.5}}}
    )
    sel = apply_weights(select_mixture(_rows(), cfg.mixture, "train"), cfg.sft)
    fams = Counter(r.family for r in sel.rows)
    assert fams["dafny"] == 20  # weight 2: every task twice
    assert 10 <= fams["analysis"] <= 30  # weight 0.5: each question with probability 1/2
    only = TrainingConfig.model_validate({"mixture": {"families": ["dafny"]}})
    assert {r.family for r, _ in select_mixture(_rows(), only.mixture, "train")} == {"dafny"}
    tmpl = TrainingConfig.model_validate({"mixture": {"templates": ["writer"]}})
    assert len(select_mixture(_rows(), tmpl.mixture, "train")) == 10
    off = TrainingConfig.model_validate({"mixture": {"family_weights": {"dafny": 0}}})
    assert "dafny" not in {r.family for r, _ in select_mixture(_rows(), off.mixture, "train")}
    one = TrainingConfig.model_validate({"sft": {"weighting": "one_per_task"}})
    sel = apply_weights(select_mixture(_rows(), one.mixture, "train"), one.sft)
    assert sorted(r.rollout_id for r in sel.rows if r.family == "analysis")[0] == "q0-0"
    assert len(sel.rows) == 50


def test_a_row_from_another_split_is_refused() -> None:
    rows = [*_rows(), _row("analysis", "qx", 0, 1, split="test")]
    with pytest.raises(ValueError, match="field 'split' is 'test'"):
        select_mixture(rows, TrainingConfig().mixture, "train")


def test_missing_partition_is_named(home: Path) -> None:
    with pytest.raises(SftDataMissing, match="split=train"):
        load_sft_rows(home, "train")
    lake.write_records("sft_dataset", _rows()[:3], SftRow, lake.lake_root(home), split="train")
    assert len(load_sft_rows(home, "train")) == 3


def test_shipped_config_loads_and_unknown_keys_are_errors(tmp_path: Path) -> None:
    shipped = load_training_config()
    assert shipped.base_model_dir().name == "tiny-qwen2" and shipped.sft.merge
    bad = tmp_path / "training.yaml"
    bad.write_text("sft:\n  lora_rank: 8\n")
    with pytest.raises(ConfigError, match=r"training.yaml: field 'sft.lora_rank'"):
        load_yaml_model(bad, TrainingConfig)
    bad.write_text("mixture:\n  sources: [web]\n")
    with pytest.raises(ConfigError, match="unknown source"):
        load_yaml_model(bad, TrainingConfig)
    assert TrainingConfig().runs_root(tmp_path) == tmp_path / "runs"
