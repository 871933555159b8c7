"""Benchmark: the jailed refactor runner against a bare ast-grep + pytest per step.

One step = a fresh copy of a bundled corpus repository, one catalog rule applied with
`ast-grep scan --rule … --update-all`, then the repository's tests with pytest. The bare
baseline does exactly that with plain subprocesses on a temporary copy (no jail, no
validation, no snapshots or diffs, no log); the runner does it through
`prepare_workspace → apply_action → run_tests → cleanup`. Steps alternate between the two,
in the same run, so machine load hits both alike.

    .venv/bin/python benchmarks/refactor.py [--steps 20] [--backend bwrap|docker|none]

Prints one JSON object: steps/s of each, and the jail's overhead (target: under 30%).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from verilearn_assets.refactor.catalog import load_corpus, load_rules
from verilearn_assets.refactor.config import load_refactor_config
from verilearn_assets.refactor.jail import ast_grep_binary
from verilearn_assets.refactor.runner import (
    TestSpec,
    apply_action,
    cleanup,
    prepare_workspace,
    run_tests,
)

RULE = "eq-none-to-is"


def bare_step(repo: Path, rule_file: Path) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        shutil.copytree(repo, tree, ignore=shutil.ignore_patterns("__pycache__"))
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": tmp,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        }
        subprocess.run(
            [ast_grep_binary(), "scan", "--rule", str(rule_file), "--update-all", "."],
            cwd=tree, env=env, capture_output=True, check=True,
        )  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-B", "-m", "pytest", "-p", "no:cacheprovider", "-q"],
            cwd=tree, env=env, capture_output=True,
        )  # fmt: skip
        return done.returncode == 0


def jailed_step(repo: Path, rule: dict, config) -> bool:  # noqa: ANN001
    ws = prepare_workspace("bench", repo, config)
    try:
        result = apply_action(ws, {"kind": "rule", "rule": rule})
        tests = run_tests(ws, TestSpec(argv=["pytest", "-q"]))
        return result.status == "ok" and tests.status == "passed"
    finally:
        cleanup(ws)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--backend", choices=["bwrap", "docker", "none"], default="bwrap")
    args = parser.parse_args()
    repo = next(r.path for r in load_corpus() if r.name == "pathconf")
    rule = next(r.rule for r in load_rules() if r.id == RULE)
    home = Path(tempfile.mkdtemp(prefix="refactor-bench-"))
    os.environ["VERILEARN_HOME"] = str(home)
    config = load_refactor_config().with_backend(args.backend).for_home(home)
    config = config.model_copy(update={"test_cache": None})  # every step really runs pytest
    rule_file = home / "rule.yml"
    rule_file.write_text(yaml.safe_dump(rule))
    bare_s: list[float] = []
    jail_s: list[float] = []
    assert bare_step(repo, rule_file) and jailed_step(repo, rule, config)  # warm both
    for _ in range(args.steps):
        start = time.perf_counter()
        ok_bare = bare_step(repo, rule_file)
        bare_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        ok_jail = jailed_step(repo, rule, config)
        jail_s.append(time.perf_counter() - start)
        if not (ok_bare and ok_jail):
            raise SystemExit(f"a step failed (bare ok={ok_bare}, jailed ok={ok_jail})")
    shutil.rmtree(home)
    bare_med, jail_med = statistics.median(bare_s), statistics.median(jail_s)
    print(
        json.dumps(
            {
                "backend": args.backend,
                "steps": args.steps,
                "bare_steps_per_s": round(len(bare_s) / sum(bare_s), 3),
                "jailed_steps_per_s": round(len(jail_s) / sum(jail_s), 3),
                "bare_median_s": round(bare_med, 4),
                "jailed_median_s": round(jail_med, 4),
                "overhead_total": round(sum(jail_s) / sum(bare_s) - 1, 4),
                "overhead_median": round(jail_med / bare_med - 1, 4),
                "target_overhead": 0.30,
            }
        )
    )


if __name__ == "__main__":
    main()
