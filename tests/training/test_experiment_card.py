"""Experiment cards: every shipped card validates; a bad card stops before anything trains,
with an error naming the card file, the arm and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from verilearn_assets.cli import main
from verilearn_assets.core.config import ConfigError
from verilearn_assets.training.config import TrainingConfig
from verilearn_assets.training.experiments.card import (
    CARDS_DIR,
    ArmSpec,
    arm_training_config,
    load_card,
    write_config_overlay,
)

GOOD = {
    "name": "probe",
    "hypothesis": "b beats a",
    "arms": {
        "a": {"train": ["sft"], "set": {"mixture.sources": ["template"]}},
        "b": {"train": ["sft", "grpo"], "set": {"grpo.process_reward": True}},
    },
    "evaluation": {"splits": ["test"], "n": 2},
    "metrics": ["pass@1", "pass@2"],
    "success": {"treatment": {"arm": "b"}, "control": {"arm": "a"}, "min_points": 5},
}


def write(tmp_path: Path, **changes) -> Path:
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    for key, value in changes.items():
        node = data
        *parents, last = key.split("/")
        for p in parents:
            node = node[p]
        if value is None:
            del node[last]
        else:
            node[last] = value
    path = tmp_path / "card.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_shipped_cards_validate_with_their_arm_deltas() -> None:
    cards = sorted(CARDS_DIR.glob("*.yaml"))
    names = {p.stem for p in cards}
    assert {
        "orm_vs_prm",
        "source_comparison",
        "holdout_generalization",
        "hint_ablation",
        "dafny_writer_vs_cascade",
    } <= names
    for path in cards:
        card = load_card(path)
        assert card.name == path.stem and card.hypothesis.strip()
        base = TrainingConfig()
        configs = {a: arm_training_config(base, s, card.set) for a, s in card.arms.items()}
        assert len({c.model_dump_json() for c in configs.values()} | {"x"}) >= 2
    prm = arm_training_config(TrainingConfig(), load_card("orm_vs_prm").arms["prm"])
    assert prm.grpo.process_reward is True
    both = load_card("source_comparison")
    assert arm_training_config(TrainingConfig(), both.arms["both"], both.set).mixture.sources == [
        "template",
        "procedural",
    ]


def test_hint_ablation_arms_set_the_analysis_prompt_hints(tmp_path: Path) -> None:
    from verilearn_assets.analysis.rollout.config import load_analysis_prompts

    card = load_card("hint_ablation")
    seen = {}
    for name, arm in card.arms.items():
        d = write_config_overlay(arm, tmp_path / name)
        seen[name] = load_analysis_prompts(d).hints
    assert seen["no_hints"] != seen["hints"]
    assert not seen["no_hints"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hypothesis": None}, "field 'hypothesis': Field required"),
        ({"arms/b/set": {"grpo.proces_reward": True}}, "arm 'b': field 'grpo.proces_reward'"),
        ({"arms/a/set": {"mixture.sources": ["web"]}}, "arm 'a': field 'mixture'"),
        ({"arms/a/set": {"sft.lora_r.x": 1}}, "'sft.lora_r' is not a section"),
        ({"arms/a/train": ["grpo", "sft"]}, "field 'arms.a.train'"),
        ({"arms/b": None}, "at least two"),
        ({"success/treatment/arm": "c"}, "success.treatment.arm 'c' is not an arm"),
        ({"metrics": ["pass@4"]}, "pass@4: k=4 needs evaluation.n >= 4"),
        ({"metrics": ["top1"]}, "expected pass@K or pass^K"),
        ({"success/control/split": "dev"}, "success.control.split 'dev' is not evaluated"),
        ({"arms/a/configs": {"teacher_prompts": {"analysis.hintz": False}}}, "'analysis.hintz'"),
        ({"arms/a/configs": {"datasets": {"x": 1}}}, "cannot be overridden"),
        ({"success/min_points": -1}, "field 'success.min_points'"),
        ({"evaluation/role": "writer"}, "field 'evaluation.role': analysis has roles"),
        ({"evaluation/family": "chess"}, "field 'evaluation.family': 'chess' unknown"),
        # an arm judged more leniently (more turns) than the other is no comparison
        ({"arms/b/set": {"eval.max_turns": 50}}, "compared on one evaluation"),
    ],
)
def test_bad_card_names_file_and_field(tmp_path: Path, changes: dict, message: str) -> None:
    path = write(tmp_path, **changes)
    with pytest.raises(ConfigError) as err:
        load_card(path)
    assert str(path) in str(err.value) and message in str(err.value), str(err.value)


def test_bad_card_from_the_command_line(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, **{"arms/b/set": {"grpo.proces_reward": True}})
    assert main(["experiment", "run", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "grpo.proces_reward" in err
    assert main(["experiment", "run", "no_such_card"]) == 2
    assert "no such card file" in capsys.readouterr().err
    assert not (home / "runs").exists()  # nothing trained, nothing written


def test_arm_delta_reaches_the_config_and_leaves_the_rest() -> None:
    base = TrainingConfig()
    arm = ArmSpec(model="/models/x", set={"grpo.max_steps": 3, "split": "train"})
    cfg = arm_training_config(base, arm, {"grpo.max_steps": 9, "grpo.beta": 0.0})
    assert cfg.base_model == "/models/x" and cfg.grpo.max_steps == 3 and cfg.grpo.beta == 0.0
    assert cfg.sft == base.sft and cfg.eval == base.eval
    # the data filters of an arm: family, source, template, split and role
    filters = {
        "mixture.families": ["dafny"],
        "mixture.sources": ["procedural"],
        "mixture.templates": ["t1"],
        "sft.roles": ["writer"],
        "grpo.curriculum": "easy_to_hard",
    }
    cfg = arm_training_config(base, ArmSpec(set=filters))
    assert cfg.mixture.families == ["dafny"] and cfg.mixture.templates == ["t1"]
    assert cfg.sft.roles == ["writer"] and cfg.grpo.curriculum == "easy_to_hard"


def test_resume_reopens_the_same_run_and_refuses_a_changed_card_or_options(
    tmp_path: Path,
) -> None:
    from verilearn_assets.training.experiments.runner import open_experiment

    path = write(tmp_path)
    card, text = load_card(path), path.read_text()
    root, opts = tmp_path / "experiments", {"limit": 2, "max_steps": 1, "splits": ["test"]}
    with pytest.raises(ValueError, match="no experiment 'probe'"):
        open_experiment(root, card, text, opts, resume=True)
    out = open_experiment(root, card, text, opts, resume=False)
    assert open_experiment(root, card, text, opts, resume=True) == out
    changed = card.model_copy(update={"hypothesis": "a beats b"})
    with pytest.raises(ValueError, match="differs from the card given"):
        open_experiment(root, changed, text, opts, resume=True)
    with pytest.raises(ValueError, match="options changed"):
        open_experiment(root, card, text, {**opts, "limit": 3}, resume=True)
