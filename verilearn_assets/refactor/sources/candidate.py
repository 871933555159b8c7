"""What every task generator shares: a candidate (rule steps on one repository), its run
in a fresh jailed workspace (the target is the tree it leaves; accepted when each step
changed the code, the result parses and the repository's tests pass, else kept as rejected
with the reason), where each catalog rule changes a repository, and which paths are tests.

The generators are one module each (`template.py`, `procedural.py`; `llm.py` for a
model's tasks), `plan.py` says which candidates a source yields, `quality.py` checks what
they made. Splits come from the repository, so no repository (and no task) is in two.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from verilearn_assets.core.records import content_hash
from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.records import Difficulty, RefactorTask
from verilearn_assets.refactor.sources import structure
from verilearn_assets.refactor.sources.catalog import CatalogRule, Repo, rules_for
from verilearn_assets.refactor.verify.actions import RuleAction
from verilearn_assets.refactor.verify.runner import (
    TestSpec,
    apply_action,
    cleanup,
    prepare_workspace,
    run_tests,
)
from verilearn_assets.refactor.verify.toolchains import is_test_file, language_of_actions
from verilearn_assets.refactor.verify.workspace import tree_hash

TEST_COMMAND = ["pytest", "-q"]


def task_language(task: RefactorTask) -> str:
    """A task's language: its first rule's (every step of a task is one language)."""
    return language_of_actions(task.reference_actions)


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
            if paths and not all(p in text for p in paths):  # a scoped rule names its file
                text += f" (only in {', '.join(paths)})"
            parts.append(text)
        if len(parts) == 1:
            return parts[0] + "."
        return "First: " + parts[0] + ". Then: " + parts[1] + "."


def run_candidate(
    candidate: Candidate, config: RefactorConfig, test_command: list[str] | None = None
) -> RefactorTask:
    """Run the candidate's steps in a fresh workspace and build its (accepted/rejected) task.
    `test_command`: the repository's own (a real repository's baseline narrows it)."""
    command = list(test_command or TEST_COMMAND)
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
            tests = run_tests(ws, TestSpec(argv=command))
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
        test_command=command,
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


@dataclass
class RuleScan:
    """Where one rule changes a repository: files, and per file the functions it touches."""

    files: list[str]
    functions: dict[str, list[str]] = field(default_factory=dict)  # path → innermost defs


def matching_files(
    repo: Repo, rules: list[CatalogRule], config: RefactorConfig
) -> dict[str, RuleScan]:
    """Rule id → where it changes `repo` (one jailed run per rule of the repository's
    language, no tests)."""
    out: dict[str, RuleScan] = {}
    for rule in rules_for(repo, rules):
        ws = prepare_workspace(f"scan-{repo.name}-{rule.id}", repo.path, config)
        try:
            result = apply_action(ws, RuleAction(rule=rule.rule))
            after = ws.snapshot() if result.status == "ok" else {}
        finally:
            cleanup(ws)
        if result.status == "ok":
            out[rule.id] = RuleScan(
                files=result.files_changed,
                functions={
                    path: structure.changed_functions(
                        ws.baseline.get(path, b""), after.get(path, b""), repo.language
                    )
                    for path in result.files_changed
                    if structure.supported(repo.language)
                },
            )
    return out


def is_test_path(path: str) -> bool:
    """A test file: under a `tests`/`test` directory, `test_*.py`, `*_test.py`, conftest."""
    p = PurePosixPath(path)
    name = p.name
    return (
        bool({"tests", "test"} & set(p.parts[:-1]))
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or is_test_file(name)  # another language's (toolchains)
    )


def only_tests(files: Iterable[str]) -> bool:
    """True when `files` is not empty and every one is a test file."""
    files = list(files)
    return bool(files) and all(is_test_path(f) for f in files)
