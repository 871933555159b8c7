"""The platform job on the full shipped catalog: every bundled dataset becomes typed tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from demo_support import REPO


def test_platform_job_materializes_every_bundled_dataset(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = os.environ | {"VERILEARN_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
                        "VERILEARN_CONFIG_DIR": str(REPO / "configs")}
    script = (
        "from verilearn_assets import lake\n"
        "from verilearn_assets.cli.orchestrate import instance_for_home, run_job\n"
        "out = run_job(instance_for_home(lake.home()), 'platform_job')\n"
        "print(out)\n"
        "raise SystemExit(0 if out.success else 1)\n")
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    from verilearn_assets.ingest.tables import load_table_records

    catalog = yaml.safe_load((REPO / "configs" / "datasets.yaml").read_text())
    bundled = {d["name"] for d in catalog["datasets"]
               if d["kind"] == "bundled" and d.get("enabled", True)}
    records = load_table_records(home)
    assert {t.dataset for t in records} == bundled
    splits: dict[str, set[str]] = {}
    for t in records:
        splits.setdefault(t.dataset, set()).add(t.split)
        assert Path(t.path).is_file() and t.n_rows > 0 and t.columns
    assert all(len(s) == 1 for s in splits.values())  # a dataset never spans two splits
    assert {t.split for t in records} == {"train", "dev", "test"}
