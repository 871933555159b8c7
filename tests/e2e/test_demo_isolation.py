"""`verilearn demo` with one dataset whose mirror does not resolve, beside the bundled catalog.

Run as a user runs it (a subprocess, the shipped catalog plus one URL dataset on an
`.invalid` host): every bundled dataset materializes, the bad one is one failed partition
named with its host and reason on one console line, no stack trace reaches the console
(it is in the log file whose path is printed), and the gate's coverage names the dataset
as missing from its split, and not once it is marked optional.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from demo_support import REPO, catalog_datasets

from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.coverage import catalog_coverage
from verilearn_assets.core.ingest.splits import catalog_splits
from verilearn_assets.core.ingest.tables import load_table_records
from verilearn_assets.core.records import SPLITS

BAD = "mirror-down"
HOST = "mirror.verilearn.invalid"
BAD_ENTRY = {
    "name": BAD,
    "kind": "url",
    "url": f"https://{HOST}/data/readings.csv",
    "sha256": "2" * 64,
    "format": "csv",
    "description": "a mirror that is down",
}


@dataclass(frozen=True)
class BadDemo:
    home: Path
    configs: Path
    stdout: str
    stderr: str


def with_bad_dataset(configs: Path, **extra: object) -> None:
    path = configs / "datasets.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["datasets"].append(BAD_ENTRY | extra)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.fixture(scope="module")
def bad_demo(tmp_path_factory: pytest.TempPathFactory) -> BadDemo:
    root = tmp_path_factory.mktemp("bad-mirror")
    configs = Path(shutil.copytree(REPO / "configs", root / "configs"))
    with_bad_dataset(configs)
    home = root / "home"
    env = os.environ | {
        "VERILEARN_HOME": str(home),
        "VERILEARN_CONFIG_DIR": str(configs),
        "DAGSTER_HOME": str(home / "dagster"),
        "COLUMNS": "80",  # a narrow CI log: a failure must still be one line
    }
    proc = subprocess.run(
        [sys.executable, "-m", "verilearn_assets.cli", "demo", "--stop-after", "ingest"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
    )
    assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr[-4000:]
    return BadDemo(home, configs, proc.stdout, proc.stderr)


def test_bundled_datasets_materialize_beside_the_bad_one(bad_demo: BadDemo) -> None:
    tables = load_table_records(bad_demo.home)
    assert {t.dataset for t in tables} == catalog_datasets()
    assert all(Path(t.path).is_file() and t.n_rows > 0 for t in tables)
    for name in catalog_datasets():
        assert re.search(rf"^  platform_job \[{re.escape(name)}\]: ok \(", bad_demo.stdout, re.M)
    assert "smoke_job: ok" in bad_demo.stdout


def test_the_bad_partition_fails_on_one_line_naming_host_and_reason(bad_demo: BadDemo) -> None:
    lines = bad_demo.stdout.splitlines()
    (line,) = [ln for ln in lines if ln.startswith(f"  platform_job [{BAD}]")]
    head, _, reason = line.partition(" — ")
    assert re.fullmatch(rf"  platform_job \[{BAD}\]: FAILED \(\d+\.\ds\)", head), line
    assert reason.startswith(f"raw_datasets: dataset '{BAD}' ({BAD_ENTRY['url']}): "), line
    assert "download failed" in reason and f"cannot resolve host '{HOST}'" in reason
    log = re.search(r"\(full log: (\S+)\)$", reason)
    assert log and Path(log.group(1)).is_file(), line
    assert f"Failed: platform_job [{BAD}]" in bad_demo.stdout
    assert len(re.findall(r": FAILED", bad_demo.stdout)) == 1


def test_no_stack_trace_on_the_console_and_the_log_holds_the_events(bad_demo: BadDemo) -> None:
    for stream in (bad_demo.stdout, bad_demo.stderr):
        assert "Traceback" not in stream
        assert not re.search(r'^\s*File ".*", line \d+', stream, re.M)
        assert " - DEBUG - " not in stream  # Dagster's event stream stays off the console
    (printed,) = re.findall(r"^Dagster event log: (\S+)$", bad_demo.stdout, re.M)
    log = Path(printed)
    assert log.parent == bad_demo.home / "logs"
    text = log.read_text()
    assert " - DEBUG - platform_job - " in text
    assert "Stack Trace:" in text and "DownloadError" in text  # the full story is kept


def test_coverage_names_the_bad_dataset_for_its_split_only(bad_demo: BadDemo) -> None:
    cfg = load_datasets_config(bad_demo.configs)
    split = catalog_splits(cfg, bad_demo.home)[BAD]
    for s in SPLITS:
        missing = catalog_coverage(cfg, bad_demo.home, s)
        if s == split:
            (m,) = missing
            assert m.dataset == BAD and m.reason == "download failed"
            assert HOST in m.detail and m.detail in m.line()
        else:
            assert missing == []


def test_coverage_skips_the_bad_dataset_once_optional(bad_demo: BadDemo, tmp_path: Path) -> None:
    configs = Path(shutil.copytree(REPO / "configs", tmp_path / "configs"))
    with_bad_dataset(configs, optional=True)
    cfg = load_datasets_config(configs)
    split = catalog_splits(cfg, bad_demo.home)[BAD]
    assert catalog_coverage(cfg, bad_demo.home, split) == []
    (m,) = catalog_coverage(cfg, bad_demo.home, split, include_optional=True)
    assert m.dataset == BAD and m.optional
