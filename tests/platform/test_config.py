"""Config files are validated at load; errors name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from verilearn_assets.analysis.config import QuestionsConfig
from verilearn_assets.core.config import ConfigError, load_config


def test_every_shipped_config_loads(repo_root: Path) -> None:
    config = load_config("questions", QuestionsConfig, repo_root / "configs")
    assert config.rules.drift.max_pass_rate_drop >= 0


@pytest.mark.parametrize(
    ("text", "field", "msg"),
    [
        ("rules:\n  reproduce_limt: 3\n", "rules.reproduce_limt", "Extra inputs are not permitted"),
        (
            "rules:\n  drift:\n    max_pass_rate_drop: lots\n",
            "rules.drift.max_pass_rate_drop",
            "valid number",
        ),
        (
            "rules:\n  drift:\n    max_pas_rate_drop: 0.1\n",
            "rules.drift.max_pas_rate_drop",
            "Extra inputs",
        ),
    ],
)
def test_bad_key_or_type_names_file_and_field(
    tmp_path: Path, text: str, field: str, msg: str
) -> None:
    (tmp_path / "questions.yaml").write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config("questions", QuestionsConfig, tmp_path)
    assert str(tmp_path / "questions.yaml") in str(err.value)
    assert f"field '{field}'" in str(err.value)
    assert msg in str(err.value)


def test_missing_file_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"questions\.yaml: config file not found"):
        load_config("questions", QuestionsConfig, tmp_path)


def test_non_mapping_named(tmp_path: Path) -> None:
    (tmp_path / "questions.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config("questions", QuestionsConfig, tmp_path)
