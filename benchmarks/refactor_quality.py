"""Issue 25 item 7 before/after: the refactor family's task and trajectory quality, counted
from the lake of one or more homes with HEAD's rules, so every column is judged the same.

Per home: accepted tasks, accepted tasks whose target another accepted task already has
(same repository and tree), accepted tasks that only touch tests, accepted tasks with a
contradiction (`quality.task_problems` minus the tests-only class), the two-rule pairs
(distinct pairs, how often each rule appears in them, max/min), steps, steps whose prompt
shows code (a `<code>` block with numbered lines), distinct `<think>` texts and templates
(rule ids, paths, quoted code, cited places and numbers masked), thinks naming a rule id of
their task, verified steps.

    VERILEARN_HOME=/tmp/rq/home DAGSTER_HOME=/tmp/rq/home/dagster \\
        .venv/bin/verilearn demo --families refactor          # once per tree
    .venv/bin/python benchmarks/refactor_quality.py before=/tmp/rq/home-before \\
        after=/tmp/rq/home [--json OUT]

A bare path is named by its directory. The before home can come from any older tree: only
the lake is read.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, cast

from verilearn_assets.core import lake
from verilearn_assets.core.records import SOURCES, SPLITS
from verilearn_assets.refactor.records import RefactorTask, TrajectoryStep
from verilearn_assets.refactor.sources.candidate import only_tests
from verilearn_assets.refactor.sources.catalog import load_corpus
from verilearn_assets.refactor.sources.quality import task_problems

NUMBERED = re.compile(r"<code>\n(?:.*\n)*? *\d+\| ", re.MULTILINE)


def _read(home: Path, asset: str, model: type) -> list[Any]:
    out: list[Any] = []
    for source in SOURCES:
        for split in SPLITS:
            root = lake.lake_root(home)
            out += lake.read_records(asset, model, root, source=source, split=split)
    return out


def _template(step: TrajectoryStep, rule_ids: dict[str, set[str]]) -> str:
    """A think with its task's rule ids, paths, quoted code and numbers masked: what is
    left is the wording the teacher would repeat whatever the code."""
    text = step.model_output.think
    for rule in sorted(rule_ids.get(step.task_id, ()), key=len, reverse=True):
        text = text.replace(rule, "<rule>")
    text = re.sub(r"`[^`]*`", "<code>", text)
    text = re.sub(r"\S+\.py", "<path>", text)
    text = re.sub(r"^- .*$", "<place>", text, flags=re.MULTILINE)
    return re.sub(r"\d+", "<n>", text)


def measure(home: Path) -> dict[str, Any]:
    """The quality counts of one home's refactor lake."""
    tasks = cast(list[RefactorTask], _read(home, "refactor/tasks", RefactorTask))
    steps = cast(list[TrajectoryStep], _read(home, "refactor/trajectories", TrajectoryStep))
    roots = {r.name: r.path for r in load_corpus(strict=False)}
    accepted = [t for t in tasks if t.status == "accepted"]
    targets = Counter((t.repo, t.target_tree) for t in accepted)
    contradictions = []
    for t in accepted:
        problems = [p for p in task_problems(t, roots.get(t.repo)) if "only touches tests" not in p]
        if problems:
            contradictions.append(f"{t.repo} {t.rules}: {problems[0]}")
    pairs = [tuple(t.rules) for t in accepted if len(t.rules) == 2]
    in_pairs = Counter(r for p in pairs for r in p)
    rule_ids = {t.id: set(t.rules) for t in tasks}
    thinks = [s.model_output.think for s in steps]
    named = sum(any(r in s.model_output.think for r in rule_ids.get(s.task_id, ())) for s in steps)
    return {
        "tasks (accepted)": len(accepted),
        "tasks (rejected)": len(tasks) - len(accepted),
        "duplicate targets (extra)": sum(n - 1 for n in targets.values()),
        "tasks sharing a target": sum(n for n in targets.values() if n > 1),
        "tests-only tasks": sum(only_tests(t.files) for t in accepted),
        "contradicting tasks": len(contradictions),
        "rule pairs": len(pairs),
        "distinct rule pairs": len(set(pairs)),
        "rules in pairs": len(in_pairs),
        "pair appearances max/min": (
            f"{max(in_pairs.values())}/{min(in_pairs.values())}" if in_pairs else "-"
        ),
        "steps": len(steps),
        "prompts with code": sum(bool(NUMBERED.search(s.prompt)) for s in steps),
        "distinct <think>": len(set(thinks)),
        "distinct <think> templates": len({_template(s, rule_ids) for s in steps}),
        "thinks naming a rule id": named,
        "verified steps": sum(s.verified for s in steps),
        "_pair_distribution": dict(sorted(in_pairs.items())),
        "_contradictions": contradictions,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("homes", nargs="+", help="NAME=HOME or HOME")
    parser.add_argument("--json", type=Path, help="write every figure here too")
    args = parser.parse_args(argv)
    results: dict[str, dict[str, Any]] = {}
    for spec in args.homes:
        name, _, path = spec.rpartition("=")
        home = Path(path)
        if not (home / "lake").is_dir():
            parser.error(f"{home}: no lake there (run `verilearn demo --families refactor`)")
        results[name or home.name] = measure(home)
    names = list(results)
    keys = [k for k in results[names[0]] if not k.startswith("_")]
    width = max(len(k) for k in keys)
    print(f"{'':<{width}}  " + "  ".join(f"{n:>12}" for n in names))
    for key in keys:
        print(f"{key:<{width}}  " + "  ".join(f"{results[n][key]!s:>12}" for n in names))
    for name in names:
        print(f"\n[{name}] appearances of each rule in two-rule tasks:")
        for rule, n in results[name]["_pair_distribution"].items():
            print(f"  {rule:<28} {n}")
        for line in results[name]["_contradictions"]:
            print(f"  contradiction: {line}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
