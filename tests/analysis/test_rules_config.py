"""The analysis gate rules' settings live in the family's config (`configs/questions.yaml`,
`rules:`): the drift limits the checks use come from there, and a retired `gate.yaml` that
still sets keys is refused, naming the file, each key and where it lives now."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from verilearn_assets.analysis.checks import DRIFT_RULES
from verilearn_assets.analysis.config import load_questions_config
from verilearn_assets.core.config import ConfigError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the shipped `questions.yaml` as the process's config dir."""
    d = tmp_path / "configs"
    d.mkdir()
    shutil.copy(REPO / "configs" / "questions.yaml", d / "questions.yaml")
    monkeypatch.setenv("VERILEARN_CONFIG_DIR", str(d))
    return d


def _set_rules(configs: Path, **rules: object) -> None:
    path = configs / "questions.yaml"
    data = yaml.safe_load(path.read_text())
    data["rules"] = rules
    path.write_text(yaml.safe_dump(data))


def test_the_drift_checks_read_their_limits_from_questions_yaml(configs: Path) -> None:
    _set_rules(configs, drift={"max_pass_rate_drop": 0.31, "max_alternatives_rate_rise": 0.27})
    limits = {rule.name: rule.limit() for rule in DRIFT_RULES}
    assert limits == {"questions_ambiguity_drift": 0.27, "episodes_pass_rate_drift": 0.31}


def test_the_rule_samples_read_from_questions_yaml(configs: Path) -> None:
    _set_rules(configs, reproduce_limit=7, conventions_sample=3)
    rules = load_questions_config().rules
    assert (rules.reproduce_limit, rules.conventions_sample) == (7, 3)


def test_an_old_gate_yaml_is_refused_naming_file_keys_and_new_home(configs: Path) -> None:
    old = configs / "gate.yaml"
    old.write_text(
        "reproduce_limit: 5\nconventions_sample: 40\n"
        "drift:\n  max_pass_rate_drop: 0.2\n  max_alternatives_rate_rise: 0.1\n"
    )
    with pytest.raises(ConfigError) as err:
        load_questions_config()
    msg = str(err.value)
    target = configs / "questions.yaml"
    for key, new in [
        ("reproduce_limit", "rules.reproduce_limit"),
        ("conventions_sample", "rules.conventions_sample"),
        ("drift.max_pass_rate_drop", "rules.drift.max_pass_rate_drop"),
        ("drift.max_alternatives_rate_rise", "rules.drift.max_alternatives_rate_rise"),
    ]:
        assert f"{old}: key '{key}' moved to {target} as '{new}'" in msg
    # the drift checks load the same config: the stale value cannot be silently ignored
    with pytest.raises(ConfigError, match="max_pass_rate_drop' moved to"):
        DRIFT_RULES[1].limit()


def test_an_unknown_key_in_an_old_gate_yaml_is_named_too(configs: Path) -> None:
    (configs / "gate.yaml").write_text("reproduce_limt: 5\n")
    with pytest.raises(ConfigError, match="key 'reproduce_limt' is not read by anything"):
        load_questions_config()


def test_a_gate_yaml_with_no_key_is_harmless(configs: Path) -> None:
    (configs / "gate.yaml").write_text("# moved to questions.yaml (rules:)\n")
    assert load_questions_config().rules.conventions_sample >= 1
