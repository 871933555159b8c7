"""Hidden state against the verdict through the CLI (issue 25 items 1 and 8), on bwrap and
Docker: `verilearn refactor apply` run as a user runs it (a subprocess of the installed
entry point), on a directory a hostile model prepared.

The directory holds a half-done rename (`scale` → `scale_v2`: everything renamed but the
definition) whose tests fail on its sources, plus bytecode that pretends otherwise: an
unchecked-hash `.pyc` in `__pycache__`, or a sourceless `core.pyc` in place of the module.
Run in place, pytest imports that bytecode and passes (the cheat has teeth); through the
CLI the tests run on a clean copy of the visible files and fail.

An action can also edit the tests it is judged by (a rule file whose second rule turns
every `assert a == b` into `assert True` while the first breaks the code). The CLI has no
task to tell a wanted test edit from a cheat, so it says so: the edited test files, and
the directory's own tests run against the changed code, which fail.
"""

from __future__ import annotations

import json
import os
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

VERILEARN = Path(sys.executable).parent / "verilearn"
HALF_DONE = {
    "pkg/__init__.py": 'from pkg.core import scale_v2\n\n__all__ = ["scale_v2"]\n',
    "pkg/core.py": "def scale(x):\n    return 2 * x\n",
    "tests/test_core.py": (
        "from pkg.core import scale_v2\n\n\ndef test_scale():\n    assert scale_v2(2) == 4\n"
    ),
}
RENAMED_SOURCE = "def scale_v2(x):\n    return 2 * x\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def stale_pycache(root: Path) -> None:
    """`pkg/__pycache__/core.<tag>.pyc` compiled from the renamed source, never checked
    against `pkg/core.py` (unchecked hash)."""
    _write(root, HALF_DONE)
    source = root.parent / f"{root.name}-core_src.py"
    source.write_text(RENAMED_SOURCE)
    cfile = root / "pkg" / "__pycache__" / f"core.{sys.implementation.cache_tag}.pyc"
    py_compile.compile(
        str(source),
        cfile=str(cfile),
        dfile="pkg/core.py",
        doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )


def sourceless_pyc(root: Path) -> None:
    """No `pkg/core.py`; `pkg/core.pyc` beside the package (imported without a source)."""
    _write(root, {rel: text for rel, text in HALF_DONE.items() if rel != "pkg/core.py"})
    source = root.parent / f"{root.name}-core_src.py"
    source.write_text(RENAMED_SOURCE)
    py_compile.compile(str(source), cfile=str(root / "pkg" / "core.pyc"), doraise=True)


CHEATS = {"stale_pycache": stale_pycache, "sourceless_pyc": sourceless_pyc}


def _in_place(root: Path) -> subprocess.CompletedProcess:
    """pytest run in the directory itself, as the bare benchmark runs it (`-B`: no writes)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(
        [sys.executable, "-B", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One home for the module (its runtime bytecode cache is built once)."""
    home = tmp_path_factory.mktemp("cli-home")
    return {**os.environ, "VERILEARN_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_hidden_bytecode_never_passes_through_the_cli(
    backend: str, cheat: str, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    root = tmp_path / "repo"
    CHEATS[cheat](root)
    in_place = _in_place(root)
    assert in_place.returncode == 0, f"the cheat has no teeth: {in_place.stdout[-800:]}"
    done = subprocess.run(
        [str(VERILEARN), "refactor", "apply", "--workspace", str(root), "--backend", backend,
         "--pattern", "double_it($A)", "--rewrite", "2 * $A", "--test", "pytest -q"],
        env=cli_env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert (out["status"], out["backend"]) == ("no_change", backend), out
    assert out["tests"]["status"] == "failed" and out["tests"]["passed"] == 0, out
    assert _in_place(root).returncode == 0, "the CLI must never modify DIR"


CORRECT = {
    "pkg/__init__.py": "",
    "pkg/core.py": "def scale(x):\n    return 2 * x\n",
    "tests/test_core.py": (
        "from pkg.core import scale\n\n\ndef test_scale():\n    assert scale(2) == 4\n"
    ),
}
BREAK_AND_NEUTER = """id: break-scale
language: python
rule:
  pattern: return 2 * $X
fix: return 3 * $X
---
id: neuter-asserts
language: python
rule:
  pattern: assert $A == $B
fix: assert True
"""


def test_edited_tests_are_reported_with_the_original_verdict(
    backend: str, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    root = tmp_path / "repo"
    _write(root, CORRECT)
    rule = tmp_path / "rule.yml"
    rule.write_text(BREAK_AND_NEUTER)
    done = subprocess.run(
        [str(VERILEARN), "refactor", "apply", "--workspace", str(root), "--backend", backend,
         "--rule", str(rule), "--test", "pytest -q"],
        env=cli_env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["status"] == "ok" and out["files_changed"] == ["pkg/core.py", "tests/test_core.py"]
    tests = out["tests"]
    assert (tests["status"], tests["passed"]) == ("passed", 1), out  # the cheat, as edited
    assert tests["edited"] == ["tests/test_core.py"], out
    assert tests["original"] == {"status": "failed", "passed": 0, "failed": 1}, out
