"""Config files are validated at load; errors name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from verilearn_assets.core.config import ConfigError, load_config
from verilearn_assets.gate.config import GateConfig


def test_every_shipped_config_loads(repo_root: Path) -> None:
    assert load_config("gate", GateConfig, repo_root / "configs").drift.max_pass_rate_drop >= 0


@pytest.mark.parametrize(
    ("text", "field", "msg"),
    [
        ("reproduce_limt: 3\n", "reproduce_limt", "Extra inputs are not permitted"),
        ("drift:\n  max_pass_rate_drop: lots\n", "drift.max_pass_rate_drop", "valid number"),
        ("drift:\n  max_pas_rate_drop: 0.1\n", "drift.max_pas_rate_drop", "Extra inputs"),
    ],
)
def test_bad_key_or_type_names_file_and_field(
    tmp_path: Path, text: str, field: str, msg: str
) -> None:
    (tmp_path / "gate.yaml").write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config("gate", GateConfig, tmp_path)
    assert str(tmp_path / "gate.yaml") in str(err.value)
    assert f"field '{field}'" in str(err.value)
    assert msg in str(err.value)


def test_missing_file_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"gate\.yaml: config file not found"):
        load_config("gate", GateConfig, tmp_path)


def test_non_mapping_named(tmp_path: Path) -> None:
    (tmp_path / "gate.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config("gate", GateConfig, tmp_path)
