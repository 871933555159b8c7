"""A family registered through the contract alone reaches the gate, `sft_dataset` and the
report, with no edit outside its own folder (`tests/platform/toy_family/`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

MATERIALIZE = """
from dagster import DagsterInstance, materialize
from verilearn_assets.cli.orchestrate import instance_for_home, run_job
from verilearn_assets.core import lake
from verilearn_assets.definitions import RESOURCES
from verilearn_assets.training.sft.dataset_assets import smoke_suite, smoke_suite_passes

instance = instance_for_home(lake.home())
for split in ("train", "dev"):
    out = run_job(instance, "toy_job", f"template|{split}")
    assert out.success, out
if WITH_SMOKE:
    smoke = materialize([smoke_suite, smoke_suite_passes], instance=instance, resources=RESOURCES)
    assert smoke.success
"""

TRAIN = """
from verilearn_assets.cli.orchestrate import instance_for_home, run_job
from verilearn_assets.core import lake
out = run_job(instance_for_home(lake.home()), "training_job", "train")
print("OK" if out.success else "FAILED " + " ".join(out.failed_steps + out.errors))
"""


def _env(home: Path) -> dict[str, str]:
    return os.environ | {
        "VERILEARN_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "VERILEARN_FAMILIES": "toy_family",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO)]),
    }


def _py(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600, cwd=REPO
    )


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "verilearn_assets.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )


def test_toy_family_through_gate_sft_dataset_and_report(tmp_path: Path) -> None:
    env = _env(tmp_path / "home")
    made = _py("WITH_SMOKE = True\n" + MATERIALIZE, env)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]

    gate = _cli(env, "gate", "--family", "toy")
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "gate toy [template|train]:" in gate.stdout
    assert "toy_tasks_accepted: ok" in gate.stdout

    trained = _py(TRAIN, env)
    assert trained.stdout.strip().endswith("OK"), trained.stdout[-3000:] + trained.stderr[-3000:]
    sft = _cli(env, "inspect", "sft", "--family", "toy", "--format", "json", "--limit", "50")
    assert sft.returncode == 0, sft.stderr
    rows = json.loads(sft.stdout)
    assert len(rows) == 3 and {r["family"] for r in rows} == {"toy"}
    assert {r["split"] for r in rows} == {"train"}

    report = _cli(env, "report", "--format", "json", "--table", "family_counts")
    assert report.returncode == 0, report.stderr
    counts = {
        (r["family"], r["split"]): r for r in json.loads(report.stdout)["family_counts"]["rows"]
    }
    assert counts[("toy", "train")]["n_tasks"] == 3
    assert counts[("toy", "dev")]["n_verified"] == 3


def test_toy_family_failing_rule_blocks_training(tmp_path: Path) -> None:
    """A rejected toy task fails the toy rule; `verilearn gate` names it and exits 1."""
    env = _env(tmp_path / "home")
    made = _py("WITH_SMOKE = False\n" + MATERIALIZE, env)
    assert made.returncode == 0, made.stderr[-3000:]
    flip = _py(
        "from verilearn_assets.core import lake\n"
        "from toy_family.family import ToyTask, FAMILY\n"
        "root = lake.lake_root(lake.home())\n"
        "ts = FAMILY.read_tasks(lake.home(), 'template', 'train')\n"
        "ts[0].status = 'rejected'\n"
        "lake.write_records(FAMILY.task_lake, ts, ToyTask, root,\n"
        "                   source='template', split='train')\n",
        env,
    )
    assert flip.returncode == 0, flip.stderr
    gate = _cli(env, "gate", "--family", "toy")
    assert gate.returncode == 1
    assert "toy_tasks_accepted on toy/tasks [template|train]" in gate.stdout
    trained = _py(TRAIN, env)
    assert "training gate closed" in trained.stdout, trained.stdout + trained.stderr
    assert "toy_tasks_accepted" in trained.stdout
