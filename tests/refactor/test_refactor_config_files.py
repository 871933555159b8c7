"""Where the refactor family's settings live: the jail in `sandbox.yaml` under `refactor:`,
the family's own settings in `refactor.yaml`, the actor's prompts in `teacher_prompts.yaml`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from verilearn_assets.core.config import ConfigError
from verilearn_assets.core.sandbox.config import load_sandbox_config
from verilearn_assets.refactor.config import JAIL_KEYS, load_refactor_config
from verilearn_assets.refactor.rollout.prompts import load_prompts, render_messages

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    """A private copy of the repository's configs/."""
    target = tmp_path / "configs"
    shutil.copytree(REPO / "configs", target)
    return target


def _edit(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data))


def test_the_repository_configs_load_with_the_jail_from_sandbox_yaml() -> None:
    sandbox = yaml.safe_load((REPO / "configs" / "sandbox.yaml").read_text())
    family = yaml.safe_load((REPO / "configs" / "refactor.yaml").read_text())
    assert set(sandbox["refactor"]) == set(JAIL_KEYS)  # every jail key, in one place
    assert not set(family) & set(JAIL_KEYS)
    config = load_refactor_config(REPO / "configs")
    assert config.backend == sandbox["refactor"]["backend"]
    assert config.allowed_binaries == sandbox["refactor"]["allowed_binaries"]
    assert config.limits.pids == sandbox["refactor"]["limits"]["pids"]
    assert config.docker.lifetime == sandbox["refactor"]["docker"]["lifetime"]
    assert config.state.token_budget == family["state"]["token_budget"]


def test_a_jail_value_edited_in_sandbox_yaml_reaches_the_config(configs: Path) -> None:
    def change(data: dict) -> None:
        data["refactor"]["backend"] = "docker"
        data["refactor"]["limits"]["pids"] = 99
        data["refactor"]["docker"]["cgroup_parent"] = None
        data["refactor"]["log_dir"] = "/var/tmp/refactor-logs"

    _edit(configs / "sandbox.yaml", change)
    config = load_refactor_config(configs)
    assert config.backend == "docker" and config.limits.pids == 99
    assert config.docker.cgroup_parent is None and config.log_dir == "/var/tmp/refactor-logs"
    assert config.limits.cpu_s == load_refactor_config(REPO / "configs").limits.cpu_s
    # the object keeps its shape for callers
    assert config.with_backend("bwrap").backend == "bwrap"
    assert config.for_home(Path("/h")).workspace_root == "/h/refactor/workspaces"


def test_no_refactor_section_gives_the_jail_defaults(configs: Path) -> None:
    _edit(configs / "sandbox.yaml", lambda d: d.pop("refactor"))
    config = load_refactor_config(configs)
    assert config.backend == "bwrap" and config.limits.pids == 64
    assert config.allowed_binaries == ["ast-grep", "python", "pytest"]


def test_a_jail_key_left_in_refactor_yaml_points_to_sandbox_yaml(configs: Path) -> None:
    _edit(configs / "refactor.yaml", lambda d: d.update(backend="docker", limits={"pids": 9}))
    with pytest.raises(ConfigError) as info:
        load_refactor_config(configs)
    message = str(info.value)
    assert "refactor.yaml: field 'backend'" in message
    assert "refactor.yaml: field 'limits'" in message
    assert "sandbox.yaml under `refactor:`" in message


def test_an_unknown_key_under_the_refactor_section_is_refused(configs: Path) -> None:
    _edit(configs / "sandbox.yaml", lambda d: d["refactor"].update(slotz=3))
    with pytest.raises(ConfigError, match=r"sandbox.yaml: field 'refactor.slotz': not a setting"):
        load_refactor_config(configs)
    # a family setting in the jail's section is refused too, naming where it goes
    _edit(configs / "sandbox.yaml", lambda d: d["refactor"].pop("slotz"))
    _edit(configs / "sandbox.yaml", lambda d: d["refactor"].update(state={}))
    with pytest.raises(ConfigError, match=r"field 'refactor.state': .*belongs in refactor.yaml"):
        load_refactor_config(configs)


def test_a_bad_jail_value_names_the_sandbox_file_and_the_field(configs: Path) -> None:
    _edit(configs / "sandbox.yaml", lambda d: d["refactor"]["limits"].update(pids=1))
    with pytest.raises(ConfigError, match=r"sandbox.yaml: field 'refactor.limits.pids'"):
        load_refactor_config(configs)
    _edit(configs / "sandbox.yaml", lambda d: d["refactor"]["docker"].update(colour="red"))
    with pytest.raises(ConfigError, match=r"sandbox.yaml: field 'refactor.docker.colour'"):
        load_refactor_config(configs)


def test_the_analysis_sandbox_loader_accepts_the_refactor_section(configs: Path) -> None:
    config = load_sandbox_config(configs)
    assert config.refactor is not None and config.refactor["backend"] == "bwrap"
    assert config.slots == yaml.safe_load((configs / "sandbox.yaml").read_text())["slots"]
    _edit(configs / "sandbox.yaml", lambda d: d.update(slotz=3))  # still strict elsewhere
    with pytest.raises(ConfigError, match=r"sandbox.yaml: field 'slotz'"):
        load_sandbox_config(configs)


def test_teacher_prompts_render_the_state_block_after_the_user_block(
    configs: Path, small_tasks
) -> None:
    assert not (REPO / "configs" / "refactor_prompts.yaml").exists()
    task = small_tasks["template"][0]
    prompts = load_prompts(REPO / "configs")
    system, user = render_messages(prompts, task, "goals:\n- one", 2, 3, "")
    assert system == {"role": "system", "content": prompts.system}
    content = user["content"]
    assert content.endswith("Last result: (none yet)\n<state>\ngoals:\n- one\n</state>\n")
    assert content.startswith(f"Repository: {task.repo}\nTask: {task.instruction}\n")
    # the state block is the template of that part: edit it, the prompt follows
    _edit(configs / "teacher_prompts.yaml", lambda d: d["refactor"].update(state="[{state}]"))
    edited = render_messages(load_prompts(configs), task, "S", 1, 3, "ok")[1]["content"]
    assert edited.endswith("Last result: ok\n[S]")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["refactor"].update(colour="red"), "refactor.colour"),
        (lambda d: d["refactor"].update(state="<state></state>"), "refactor.state"),
        (lambda d: d["refactor"].update(user="Step {step}\n{state}"), "refactor.user"),
        (lambda d: d.pop("refactor"), "refactor"),
    ],
)
def test_a_bad_teacher_prompt_names_the_file_and_the_field(
    configs: Path, change, field: str
) -> None:
    _edit(configs / "teacher_prompts.yaml", change)
    with pytest.raises(ConfigError, match=rf"teacher_prompts.yaml: field '{field}'"):
        load_prompts(configs)
