"""Task generation: catalog rules run on the corpora in the jail, targets by execution.

- `template`: one catalog rule over a whole repository, where it matches.
- `procedural`: compositions — two rules in sequence, or one rule restricted to one file.
Every candidate runs in a fresh workspace; it is accepted when each step changes the code,
the result parses and the repository's tests still pass. Failed candidates are kept as
rejected records with the reason. Splits come from the repository, so no repository (and
no task) is in two splits.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from verilearn_assets.core.records import content_hash
from verilearn_assets.refactor.actions import RuleAction
from verilearn_assets.refactor.catalog import (
    CatalogRule,
    Repo,
    corpus_dir,
    load_corpus,
    load_rules,
)
from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.records import Difficulty, RefactorTask
from verilearn_assets.refactor.runner import (
    TestSpec,
    apply_action,
    cleanup,
    prepare_workspace,
    run_tests,
)
from verilearn_assets.refactor.workspace import tree_hash

TEST_COMMAND = ["pytest", "-q"]
_APPLIED = re.compile(r"Applied (\d+) changes?")


@dataclass(frozen=True)
class Candidate:
    repo: Repo
    source: str
    steps: tuple[tuple[CatalogRule, tuple[str, ...]], ...]  # (rule, paths) in order

    def actions(self) -> list[dict]:
        return [
            RuleAction(rule=rule.rule, paths=list(paths)).model_dump(mode="json")
            for rule, paths in self.steps
        ]

    def instruction(self) -> str:
        parts = []
        for rule, paths in self.steps:
            text = rule.instruction.rstrip(".")
            if paths:
                text += f" (only in {', '.join(paths)})"
            parts.append(text)
        if len(parts) == 1:
            return parts[0] + "."
        return "First: " + parts[0] + ". Then: " + parts[1] + "."


def run_candidate(candidate: Candidate, config: RefactorConfig) -> RefactorTask:
    """Run the candidate's steps in a fresh workspace and build its (accepted/rejected) task."""
    actions = candidate.actions()
    task_id = content_hash(
        "refactor-task", candidate.repo.name, candidate.source, actions, candidate.instruction()
    )
    ws = prepare_workspace(task_id, candidate.repo.path, config)
    reason = ""
    matches = 0
    step_trees: list[str] = []
    try:
        for i, action in enumerate(actions, 1):
            result = apply_action(ws, action)
            found = _APPLIED.search(result.stderr + result.stdout)
            matches += int(found.group(1)) if found else 0
            step_trees.append(tree_hash(ws.snapshot()))
            if result.status != "ok":
                reason = f"step {i}: {result.status} {result.message}".strip()
                break
        if not reason:
            tests = run_tests(ws, TestSpec(argv=TEST_COMMAND))
            if tests.status != "passed":
                reason = f"tests {tests.status}: {tests.passed} passed, {tests.failed} failed"
        final = ws.snapshot()
        diff = ws.diff_from_start()
        changed = sorted(
            k for k in final.keys() | ws.baseline.keys() if final.get(k) != ws.baseline.get(k)
        )
    finally:
        cleanup(ws)
    return RefactorTask(
        id=task_id,
        repo=candidate.repo.name,
        licence=candidate.repo.licence,
        files=changed,
        instruction=candidate.instruction(),
        target_diff=diff,
        target_tree=tree_hash(final),
        step_trees=step_trees,
        test_command=TEST_COMMAND,
        reference_actions=actions,
        rules=[rule.id for rule, _ in candidate.steps],
        source=candidate.source,  # type: ignore[arg-type]
        split=candidate.repo.split,
        status="rejected" if reason else "accepted",
        reason=reason,
        difficulty=Difficulty(
            matches=matches,
            files_touched=len(changed),
            rule_complexity=sum(rule.complexity() for rule, _ in candidate.steps),
            steps=len(actions),
        ),
    )


def matching_files(
    repo: Repo, rules: list[CatalogRule], config: RefactorConfig
) -> dict[str, list[str]]:
    """Rule id → files it changes in `repo` (one jailed run per rule, no tests)."""
    out: dict[str, list[str]] = {}
    for rule in rules:
        ws = prepare_workspace(f"scan-{repo.name}-{rule.id}", repo.path, config)
        try:
            result = apply_action(ws, RuleAction(rule=rule.rule))
        finally:
            cleanup(ws)
        if result.status == "ok":
            out[rule.id] = result.files_changed
    return out


def candidates(
    source: str,
    repos: list[Repo],
    rules: list[CatalogRule],
    config: RefactorConfig,
    max_pairs_per_repo: int = 30,
) -> Iterator[Candidate]:
    by_id = {r.id: r for r in rules}
    for repo in repos:
        matched = matching_files(repo, rules, config)
        if source == "template":
            for rule_id in matched:
                yield Candidate(repo, "template", ((by_id[rule_id], ()),))
            continue
        # procedural: one rule restricted to one file (where it touches several files) …
        for rule_id, files in matched.items():
            if len(files) > 1:
                for path in files:
                    yield Candidate(repo, "procedural", ((by_id[rule_id], (path,)),))
        # … and two rules in sequence (catalog order, capped per repository)
        pairs = list(itertools.combinations(sorted(matched), 2))
        for first, second in pairs[:max_pairs_per_repo]:
            yield Candidate(repo, "procedural", ((by_id[first], ()), (by_id[second], ())))


def generate_tasks(
    source: str,
    split: str,
    config: RefactorConfig,
    repos: list[Repo] | None = None,
    rules: list[CatalogRule] | None = None,
    max_pairs_per_repo: int = 30,
) -> list[RefactorTask]:
    """Every task of one `source × split` partition (the `llm` source needs a model)."""
    if source not in ("template", "procedural"):
        return []
    if repos is None:
        repos = load_corpus(corpus_dir(config), strict=False)
    repos = [r for r in repos if r.split == split]
    rules = rules if rules is not None else load_rules()
    tasks = [
        run_candidate(c, config)
        for c in candidates(source, repos, rules, config, max_pairs_per_repo)
    ]
    seen: set[str] = set()
    unique = []
    for task in tasks:
        if task.id not in seen:
            seen.add(task.id)
            unique.append(task)
    return unique
