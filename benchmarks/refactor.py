"""Benchmark: the jailed refactor runner against a bare ast-grep + pytest per step.

One step = a fresh copy of a bundled corpus repository, one catalog rule applied with
`ast-grep scan --rule … --update-all`, then the repository's tests with pytest. The bare
baseline does exactly that with plain subprocesses on a temporary copy (no jail, no
validation, no snapshots or diffs, no log); the runner does it through
`prepare_workspace → apply_action → run_tests → cleanup`. Modes take turns in blocks of
`--block` consecutive steps, in the same run, so machine load hits every mode alike. A
Docker block ends by waiting for the background work its steps started (the next
workspace's container, the removal of the last ones) and that wait is part of its time:
otherwise a removal would run during the next mode's block and be charged to it.

    .venv/bin/python benchmarks/refactor.py [--steps 10] [--block 5] [--modes none,bwrap,...]
    .venv/bin/python benchmarks/refactor.py --languages python,javascript,go,rust,java,c

With `--languages`, the same comparison per language: a bundled corpus of that language,
its first catalog rule, its own test runner (`node --test`, `go test`, `cargo test`, the
jail's Java runner, `make test`) in the jail against the same command bare, with the same
environment and fresh caches per step (the jail's /tmp is fresh every command), in turns.
The bare tree is copied onto the file system of the runner's workspaces (the benchmark's
home), so the disk is paid alike; its caches live in memory, as the jail's tmpfs.

Modes: `none` (the runner unjailed), `bwrap`, `docker` (the default `lifetime: pool`:
containers kept between workspaces and reset in between, each command sent over a unix
socket to the container's PID 1), `docker-per-workspace` (one container per workspace,
started ahead) and `docker-per-command` (a fresh container per command). Prints one JSON
object: steps/s and median step time of each, and each one's overhead over the
bare baseline (target for the jails: under 30%): of the totals, of the medians, and the
median over blocks of a mode's block against the bare block just before it (the figure
least moved by other load on a shared machine). Per language, each mode's median step is
also split into its two jailed commands (spawn to exit, as the jail measured them) and
the runner's own work around them (copy, snapshots, diff, clean copy, cleanup); the
runner's workspaces (and the bare trees) live in the benchmark's home, made under
`--home-parent`.
"""

from __future__ import annotations

import argparse
import functools
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

from verilearn_assets.refactor.config import load_refactor_config
from verilearn_assets.refactor.sources.catalog import load_corpus, load_rules
from verilearn_assets.refactor.verify.jail_policy import ast_grep_binary
from verilearn_assets.refactor.verify.runner import (
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


def bare_runner_step(repo: Path, rule_file: Path, test_argv: list[str], tree_parent: Path) -> bool:
    """A bare step of another language: ast-grep, then its runner as the jail resolves it
    (`toolchains`). The tree is copied onto the file system the runner's workspaces use
    (`tree_parent`, in the benchmark's home), so both sides pay the same disk; the runner's
    caches (the jail's /tmp paths) go to this step's own folder in memory, as the jail's
    tmpfs is (/dev/shm: a disk cache would slow the bare side)."""
    from verilearn_assets.refactor.verify import toolchains

    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    with (
        tempfile.TemporaryDirectory(dir=shm) as tmp,
        tempfile.TemporaryDirectory(dir=tree_parent) as copies,
    ):
        tree = Path(copies) / "tree"
        shutil.copytree(repo, tree)
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "TMPDIR": tmp, "LANG": "C.UTF-8"}
        for key, value in toolchains.env_for(test_argv).items():
            env[key] = value.replace("/tmp/", f"{tmp}/")
        subprocess.run(
            [ast_grep_binary(), "scan", "--rule", str(rule_file), "--update-all", "."],
            cwd=tree, env=env, capture_output=True, check=True,
        )  # fmt: skip
        argv = toolchains.resolve(test_argv, "none")
        done = subprocess.run(argv, cwd=tree, env=env, capture_output=True)  # noqa: S603
        return done.returncode == 0


def languages_report(languages: list[str], modes: list[str], configs: dict, args) -> dict:  # noqa: ANN001
    """Per language: steps/s of the bare runner and of each mode, and each mode's overhead
    (totals, and the median of block-by-block ratios against the bare block before it)."""
    from verilearn_assets.refactor.sources.catalog import load_catalog
    from verilearn_assets.refactor.verify.toolchains import language_of_rule

    report: dict = {}
    for language in languages:
        repo = next(r for r in load_corpus() if r.language == language)
        rule = next(r.rule for r in load_catalog() if language_of_rule(r.rule) == language)
        rule_file = Path(tempfile.mkdtemp(prefix="refactor-bench-rule-")) / "rule.yml"
        rule_file.write_text(yaml.safe_dump(rule))
        test_argv = list(repo.test_command)

        bare = (
            functools.partial(bare_step, repo.path, rule_file)
            if language == "python"
            else functools.partial(bare_runner_step, repo.path, rule_file, test_argv, args.home)
        )
        steps = {"bare": bare}
        jail_ms: dict[str, list[float]] = {m: [] for m in modes}
        for mode in modes:
            steps[mode] = lambda m=mode, r=repo, u=rule, a=test_argv, j=jail_ms[mode]: jailed_step(
                r.path, u, configs[m], a, j
            )
        times: dict[str, list[float]] = {name: [] for name in steps}
        paired: dict[str, list[float]] = {m: [] for m in modes}
        for name, step in steps.items():  # warm every path once
            assert step(), (language, name)
        done = 0
        while done < args.steps:
            block = min(args.block, args.steps - done)
            for name, step in steps.items():
                for _ in range(block):
                    start = time.perf_counter()
                    if not step():
                        raise SystemExit(f"a {language} {name} step failed")
                    times[name].append(time.perf_counter() - start)
                if name != "bare":
                    paired[name].append(sum(times[name][-block:]) / sum(times["bare"][-block:]))
            settle_docker()
            done += block
        bare_total = sum(times["bare"])
        entry: dict = {"corpus": repo.name, "test": " ".join(test_argv)}
        entry["bare_steps_per_s"] = round(args.steps / bare_total, 3)
        entry["bare_median_ms"] = round(statistics.median(times["bare"]) * 1000, 1)
        for mode in modes:
            measured = jail_ms[mode][-args.steps :]  # not the warm-up step
            entry[mode] = {
                "steps_per_s": round(args.steps / sum(times[mode]), 3),
                "overhead_total": round(sum(times[mode]) / bare_total - 1, 4),
                "overhead_paired_median": round(statistics.median(paired[mode]) - 1, 4),
                "median_ms": round(statistics.median(times[mode]) * 1000, 1),
                # where a step's time goes: the two jailed commands (spawn to exit, as the
                # jail measured them), and the runner's own work around them
                "median_jail_ms": round(statistics.median(measured), 1),
                "median_runner_ms": round(
                    statistics.median(
                        t * 1000 - j for t, j in zip(times[mode], measured, strict=True)
                    ),
                    1,
                ),
            }
        report[language] = entry
        shutil.rmtree(rule_file.parent)
    return report


def settle_docker() -> None:
    from verilearn_assets.core.isolation.docker_pool import settle

    settle()


def jailed_step(
    repo: Path,
    rule: dict,
    config,  # noqa: ANN001
    test_argv=("pytest", "-q"),  # noqa: ANN001
    jail_ms: list[float] | None = None,
) -> bool:
    """One runner step; `jail_ms` gets the time its two jailed commands took as the jail
    measured them (spawn to exit), the rest of the step being the runner's own work
    (copy, snapshots, diff, clean copy, cleanup)."""
    ws = prepare_workspace("bench", repo, config)
    try:
        result = apply_action(ws, {"kind": "rule", "rule": rule})
        tests = run_tests(ws, TestSpec(argv=list(test_argv)))
        if jail_ms is not None:
            jail_ms.append(result.duration_ms + tests.duration_ms)
        return result.status == "ok" and tests.status == "passed"
    finally:
        cleanup(ws)


MODES = {  # mode name -> (backend, docker lifetime)
    "none": ("none", "pool"),
    "bwrap": ("bwrap", "pool"),
    "docker": ("docker", "pool"),  # containers kept between workspaces, reset in between
    "docker-per-workspace": ("docker", "workspace"),  # one container per workspace
    "docker-per-command": ("docker", "command"),  # a container per command (the old way)
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument(
        "--block", type=int, default=5, help="consecutive steps per mode before the next mode"
    )
    parser.add_argument(
        "--modes",
        default=None,
        help=f"comma-separated, from {', '.join(MODES)} (default: all; Docker ones if a "
        "daemon answers)",
    )
    parser.add_argument(
        "--languages",
        default=None,
        help="comma-separated languages of the bundled corpora (python, javascript, go, rust, "
        "java, c): the comparison per language, each with its own test runner",
    )
    parser.add_argument(
        "--home-parent",
        default=None,
        help="the folder the benchmark's home (the runner's workspaces and the bare trees of "
        "other languages) is made in (default: the system's temporary folder); e.g. /dev/shm "
        "to take the disk out of both sides",
    )
    args = parser.parse_args()
    skipped: list[str] = []
    if args.modes is None:
        modes = list(MODES)
        from verilearn_assets.core.isolation.docker import docker_available

        if not docker_available()[0]:
            skipped = [m for m in modes if MODES[m][0] == "docker"]
            modes = [m for m in modes if m not in skipped]
    else:
        modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise SystemExit(f"unknown modes {unknown}; choose from {list(MODES)}")
    repo = next(r.path for r in load_corpus() if r.name == "pathconf")
    rule = next(r.rule for r in load_rules() if r.id == RULE)
    home = Path(tempfile.mkdtemp(prefix="refactor-bench-", dir=args.home_parent))
    os.environ["VERILEARN_HOME"] = str(home)
    args.home = home  # the bare steps copy their trees onto the runner's file system
    base = load_refactor_config().for_home(home)
    base = base.model_copy(update={"test_cache": None})  # every step really runs pytest
    configs = {}
    for mode in modes:
        backend, lifetime = MODES[mode]
        docker = base.docker.model_copy(update={"lifetime": lifetime})
        configs[mode] = base.model_copy(update={"backend": backend, "docker": docker})
    if args.languages:
        languages = [lang for lang in args.languages.split(",") if lang]
        out = {"steps": args.steps, "block": args.block, "target_overhead": 0.30}
        out["home"] = str(home)
        out["languages"] = languages_report(languages, modes, configs, args)
        settle_docker()
        shutil.rmtree(home)
        print(json.dumps(out, indent=1))
        return
    rule_file = home / "rule.yml"
    rule_file.write_text(yaml.safe_dump(rule))
    times: dict[str, list[float]] = {"bare": [], **{m: [] for m in modes}}
    # per block: the mode's time over the bare block's just before it (load drifts
    # slowly on a shared machine: a pair of neighbouring blocks sees about the same load)
    paired: dict[str, list[float]] = {m: [] for m in modes}
    assert bare_step(repo, rule_file)  # warm every path once
    for mode in modes:
        assert jailed_step(repo, rule, configs[mode]), mode
    settle_docker()
    done = 0
    while done < args.steps:  # blocks in turn: machine load hits every mode alike
        block = min(args.block, args.steps - done)
        for _ in range(block):
            start = time.perf_counter()
            if not bare_step(repo, rule_file):
                raise SystemExit("a bare step failed")
            times["bare"].append(time.perf_counter() - start)
        bare_block = sum(times["bare"][-block:])
        for mode in modes:
            for i in range(block):
                start = time.perf_counter()
                if not jailed_step(repo, rule, configs[mode]):
                    raise SystemExit(f"a {mode} step failed")
                if i == block - 1 and MODES[mode][0] == "docker":
                    settle_docker()  # its background work is its own cost
                times[mode].append(time.perf_counter() - start)
            paired[mode].append(sum(times[mode][-block:]) / bare_block)
        done += block
    settle_docker()
    shutil.rmtree(home)
    bare_total, bare_med = sum(times["bare"]), statistics.median(times["bare"])
    out: dict = {"steps": args.steps, "block": args.block}
    out["bare_steps_per_s"] = round(args.steps / bare_total, 3)
    out["bare_median_s"] = round(bare_med, 4)
    for mode in modes:
        total, med = sum(times[mode]), statistics.median(times[mode])
        out[mode] = {
            "steps_per_s": round(args.steps / total, 3),
            "median_s": round(med, 4),
            "overhead_total": round(total / bare_total - 1, 4),
            "overhead_median": round(med / bare_med - 1, 4),
            "overhead_paired_median": round(statistics.median(paired[mode]) - 1, 4),
        }
    for other in ("docker-per-workspace", "docker-per-command"):
        if "docker" in modes and other in modes:
            out[f"{other}_over_pool"] = round(sum(times[other]) / sum(times["docker"]), 3)
    if skipped:
        out["skipped_no_docker_daemon"] = skipped
    out["target_overhead"] = 0.30
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
