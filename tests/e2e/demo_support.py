"""Support for the end-to-end tests: the demo home (full shipped catalog) and its helpers.

The demo runs as a user runs it (`verilearn demo` in a subprocess) against a temporary
VERILEARN_HOME and a copy of `configs/` whose catalog keeps a few small bundled datasets.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


@dataclass
class DemoHome:
    root: Path
    env: dict[str, str]
    stdout: str

    @property
    def home(self) -> Path:
        return Path(self.env["VERILEARN_HOME"])

    def run(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "verilearn_assets.cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO,
        )

    @contextmanager
    def environ(self) -> Iterator[None]:
        """Point this process at the demo's home and Dagster instance for a while."""
        keys = ("VERILEARN_HOME", "VERILEARN_CONFIG_DIR", "DAGSTER_HOME")
        saved = {k: os.environ.get(k) for k in keys}
        os.environ.update({k: self.env[k] for k in keys})
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def catalog_datasets() -> set[str]:
    """Names of the enabled bundled datasets of the shipped catalog (what the demo uses)."""
    catalog = yaml.safe_load((REPO / "configs" / "datasets.yaml").read_text())
    return {
        d["name"] for d in catalog["datasets"] if d["kind"] == "bundled" and d.get("enabled", True)
    }


@dataclass
class Planted:
    home: DemoHome
    partition: str
    gate: subprocess.CompletedProcess  # `verilearn gate` run right after planting


def copy_home(demo: DemoHome, dest: Path) -> DemoHome:
    """A private copy of the demo home (lake, warehouse, Dagster instance) to mutate."""
    import shutil

    shutil.copytree(demo.home, dest / "home")
    env = demo.env | {
        "VERILEARN_HOME": str(dest / "home"),
        "DAGSTER_HOME": str(dest / "home" / "dagster"),
    }
    return DemoHome(dest, env, demo.stdout)
