"""`sft.roles`: which `SftRow.role` values train (training.yaml and `verilearn train sft
--roles`), and the clear error on a role no row of the split carries.

Rows are the real episodes' SFT rows (bwrap sandbox), each given two roles the way dafny
rows carry writer / annotator; training is one step of the tiny model through the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from gate_support import check_sft_rows, instance_with_sft_rows, use_tiny_config_dir

from verilearn_assets.cli import main
from verilearn_assets.core.config import ConfigError, load_yaml_model
from verilearn_assets.core.family import SftRow
from verilearn_assets.training.config import TrainingConfig
from verilearn_assets.training.sft.data import UnknownRole, select_mixture, select_roles

ROLES = ("writer", "annotator")


@pytest.fixture(scope="module")
def two_role_rows(sft_rows_real: list[SftRow]) -> list[SftRow]:
    """Every real row once per role (its id follows the role, as `SftRow.make_id` says)."""
    return [
        r.model_copy(update={"role": role, "id": SftRow.make_id(r.family, r.rollout_id, role)})
        for r in sft_rows_real
        for role in ROLES
    ]


def test_roles_select_their_rows_and_an_unknown_role_names_the_roles_there(
    two_role_rows: list[SftRow],
) -> None:
    writers = [r for r in two_role_rows if r.role == "writer"]
    assert writers and len(writers) < len(two_role_rows)
    assert select_roles(two_role_rows, ["writer"], "train") == writers
    assert select_roles(two_role_rows, None, "train") == two_role_rows
    mixture = TrainingConfig().mixture
    admitted = select_mixture(two_role_rows, mixture, "train", ["writer"])
    assert [r for r, _ in admitted] == writers  # the mixture then sees writer rows only
    with pytest.raises(UnknownRole) as err:
        select_roles(two_role_rows, ["writer", "writr"], "train")
    text = str(err.value)
    assert "sft.roles" in text and "['writr']" in text and str(sorted(ROLES)) in text


@pytest.mark.parametrize(
    ("roles", "said"), [([], "empty list"), (["writer", "writer"], "repeated"), ([" "], "blank")]
)
def test_roles_field_is_validated_at_load(tmp_path: Path, roles: list[str], said: str) -> None:
    path = tmp_path / "training.yaml"
    path.write_text(yaml.safe_dump({"sft": {"roles": roles}}))
    with pytest.raises(ConfigError) as err:
        load_yaml_model(path, TrainingConfig)
    assert str(path) in str(err.value) and "sft.roles" in str(err.value) and said in str(err.value)


def test_cli_roles_flag_trains_one_role_or_names_the_roles_there(
    home: Path,
    tmp_path: Path,
    tiny_model_dir: Path,
    two_role_rows: list[SftRow],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_tiny_config_dir(monkeypatch, tmp_path / "configs", tiny_model_dir)
    instance = instance_with_sft_rows(home, two_role_rows)
    assert check_sft_rows(instance, home).passed

    # a misspelt role: refused before training, naming the field and the roles present
    assert main(["train", "sft", "--max-steps", "1", "--roles", "writr"]) == 2
    err = capsys.readouterr().err
    assert "sft.roles" in err and "writr" in err and str(sorted(ROLES)) in err
    assert main(["train", "sft", "--max-steps", "1", "--roles", "writer,writer"]) == 2
    err = capsys.readouterr().err
    assert "--roles" in err and "repeated" in err
    assert not (home / "runs").exists()

    assert main(["train", "sft", "--max-steps", "1", "--roles", "writer"]) == 0
    (result,) = (home / "runs").glob("sft-*/result.json")
    extra = json.loads(result.read_text())["extra"]
    writers = [r for r in two_role_rows if r.role == "writer"]
    assert extra["roles"] == ["writer"]
    assert extra["rows_in_split"] == len(two_role_rows)
    assert extra["rows_admitted"] == len(writers)  # the annotator rows never entered
    (config,) = (home / "runs").glob("sft-*/config.yaml")
    assert yaml.safe_load(config.read_text())["sft"]["roles"] == ["writer"]
