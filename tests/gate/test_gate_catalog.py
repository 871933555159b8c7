"""The gate knows the catalog: a dataset that failed to ingest closes its split's gate, by
name and reason, unless it is optional; a split whose every dataset failed never reaches
training. Real ingestion (the `.invalid` host never resolves), real Dagster runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
GHOST = {
    "name": "ghost",
    "kind": "url",
    "url": "https://mirror.ghost.invalid/ghost.csv",
    "sha256": "0" * 64,
    "format": "csv",
}
# small bundled tables; with these the catalog puts `ghost` in a split beside others
BUNDLED = [
    {"name": name, "kind": "bundled", "package": package, "loader": loader}
    for name, package, loader in (
        ("longley", "statsmodels", "longley"),
        ("iris", "sklearn", "iris"),
        ("stackloss", "statsmodels", "stackloss"),
        ("nile", "statsmodels", "nile"),
        ("linnerud", "sklearn", "linnerud"),
    )
]

SCRIPT = """
import json
from verilearn_assets.analysis.family import FAMILY
from verilearn_assets.cli.orchestrate import instance_for_home, run_job
from verilearn_assets.core import lake
from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.splits import catalog_splits
from verilearn_assets.gate.registry import evaluate

home = lake.home()
instance = instance_for_home(home)
cfg = load_datasets_config()
split = catalog_splits(cfg, home)["ghost"]
out = {"split": split, "datasets": {}}
for entry in cfg.enabled():
    run = run_job(instance, "platform_job", entry.name)
    out["datasets"][entry.name] = [run.success, run.failed_steps + run.errors]
rule = next(r for r in FAMILY.rules if r.name == "questions_catalog_coverage")
coverage = evaluate(FAMILY, rule, "template", split, home)
out["coverage"] = [coverage.passed, coverage.failures, coverage.stats]
if RUN_JOBS:
    analysis = run_job(instance, "analysis_job", f"template|{split}")
    out["analysis"] = [analysis.success, analysis.failed_checks]
    training = run_job(instance, "training_job", split)
    out["training"] = [training.success, training.failed_steps]
print("RESULT " + json.dumps(out))
"""


def _run(tmp_path: Path, datasets: list[dict], run_jobs: bool) -> dict:
    conf = shutil.copytree(REPO / "configs", tmp_path / "configs")
    (conf / "datasets.yaml").write_text(yaml.safe_dump({"datasets": datasets}))
    home = tmp_path / "home"
    env = os.environ | {
        "VERILEARN_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "VERILEARN_CONFIG_DIR": str(conf),
    }
    proc = subprocess.run(
        [sys.executable, "-c", f"RUN_JOBS = {run_jobs}\n" + SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def test_failed_dataset_closes_its_split_unless_optional(tmp_path: Path) -> None:
    got = _run(tmp_path / "required", [*BUNDLED, GHOST], run_jobs=False)
    assert all(got["datasets"][d["name"]][0] for d in BUNDLED), got["datasets"]
    ok, failures = got["datasets"]["ghost"]
    assert not ok and any("mirror.ghost.invalid" in f for f in failures), failures
    passed, reasons, _ = got["coverage"]
    assert not passed
    (reason,) = reasons
    assert "dataset 'ghost'" in reason and "download failed" in reason, reason
    assert "mirror.ghost.invalid" in reason, reason

    got = _run(tmp_path / "optional", [*BUNDLED, {**GHOST, "optional": True}], run_jobs=False)
    passed, reasons, stats = got["coverage"]
    assert passed, reasons
    assert stats["optional_missing"] == "ghost"


def test_split_with_every_dataset_failed_never_reaches_training(tmp_path: Path) -> None:
    got = _run(tmp_path, [GHOST], run_jobs=True)
    split = got["split"]
    ok, failed_checks = got["analysis"]
    assert not ok
    text = " ".join(failed_checks)
    assert f"questions_catalog_coverage on analysis/questions [template|{split}]" in text, text
    assert "ghost" in text and "download failed" in text, text
    assert "questions_floors" in text and "no tables in split" in text, text
    ok, failed_steps = got["training"]
    assert not ok
    refusal = " ".join(failed_steps)
    assert f"training gate closed for split {split!r}" in refusal, refusal
    assert "questions_catalog_coverage" in refusal and "ghost" in refusal, refusal
