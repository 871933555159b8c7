"""Task generation: catalog rules run on the corpora in the jail, targets by execution.

- `template`: one catalog rule over a whole repository, where it matches.
- `procedural`: compositions and parameterizations — two rules in sequence, one rule
  restricted to one file (of several it changes) or to one function (of several it changes
  in that file), and renames of a repository's top-level
  functions and classes (a rule written for the name).
Every candidate runs in a fresh workspace; it is accepted when each step changes the code,
the result parses and the repository's tests still pass. Failed candidates are kept as
rejected records with the reason. Splits come from the repository, so no repository (and
no task) is in two splits.

Quality (`finalize`): every accepted task passes `task_problems` (a target that changes the
package, not only tests; a target that does what its instruction says: a file- or
function-scoped task changes nothing outside its file or function, a rename renames the
definition and nothing else of that name), else it is kept as rejected with the reason; and
two accepted tasks with the same target keep one (the simplest: fewest steps, smallest
rule), the other kept as rejected `duplicate target of task <id>`. Rule pairs are drawn so
that every rule appears about equally often (`draw_pairs`, seeded per repository).
"""

from __future__ import annotations

import ast
import difflib
import itertools
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml

from verilearn_assets.core.config import ConfigError
from verilearn_assets.core.records import content_hash
from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.records import Difficulty, RefactorTask
from verilearn_assets.refactor.sources.catalog import (
    RULES_DIR,
    CatalogRule,
    Repo,
    RuleExamples,
    load_rules,
)
from verilearn_assets.refactor.verify import pysource
from verilearn_assets.refactor.verify.actions import RuleAction
from verilearn_assets.refactor.verify.runner import (
    TestSpec,
    apply_action,
    cleanup,
    prepare_workspace,
    run_tests,
)
from verilearn_assets.refactor.verify.toolchains import (
    is_test_file,
    language_of_actions,
    language_of_rule,
)
from verilearn_assets.refactor.verify.workspace import SKIP_DIRS, tree_hash

TEST_COMMAND = ["pytest", "-q"]


def load_catalog(directory: Path = RULES_DIR) -> list[CatalogRule]:
    """The task catalog of every language: Python's rules in `rules/` (`load_rules`) and
    each other language's in `rules/<language>/`: the files there whose `metadata` has
    the examples a task rule needs (`positive`, `fixed`, `negative`, checked with real
    ast-grep by `test_languages`). The others are parity rules (ast-grep's syntax shown on a
    `sample`, `test_rule_parity`), not task rules."""
    rules = load_rules(directory)
    for folder in sorted(p for p in directory.iterdir() if p.is_dir()):
        for path in sorted(folder.glob("*.yml")):
            try:
                docs = list(yaml.safe_load_all(path.read_text()))
            except yaml.YAMLError as exc:
                raise ConfigError(f"{path}: not YAML: {exc}") from exc
            meta = docs[0].get("metadata") if len(docs) == 1 and isinstance(docs[0], dict) else None
            if not (isinstance(meta, dict) and "positive" in meta):
                continue
            rules.append(_catalog_rule(path, docs[0], folder.name))
    return sorted(rules, key=lambda r: r.id)


def _catalog_rule(path: Path, data: dict, folder: str) -> CatalogRule:
    """One task rule of `rules/<folder>/`, checked as `load_rules` checks Python's: its id
    is its file name, it has a `fix`, and its language is the folder's."""
    data = dict(data)
    try:
        meta = data.pop("metadata")
        rule = CatalogRule(id=data["id"], path=str(path), rule=data, examples=RuleExamples(**meta))
        language = language_of_rule(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: not a catalog rule: {exc}") from exc
    if rule.id != path.stem:
        raise ConfigError(f"{path}: rule id {rule.id!r} differs from the file name")
    if "fix" not in data:
        raise ConfigError(f"{path}: catalog rules need a `fix`")
    if language != folder:
        raise ConfigError(f"{path}: language {language!r} in the folder of {folder!r}")
    return rule


def rules_for(repo: Repo, rules: list[CatalogRule]) -> list[CatalogRule]:
    """The rules of the repository's language (a rule of another language would scan none
    of its files: a jailed run for nothing)."""
    return [r for r in rules if language_of_rule(r.rule) == repo.language]


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
                    path: _changed_functions(ws.baseline.get(path, b""), after.get(path, b""))
                    for path in result.files_changed
                    if repo.language == "python"  # function scopes: Python's `ast` only
                },
            )
    return out


def _changed_functions(before: bytes, after: bytes) -> list[str]:
    """Names of the innermost functions holding the lines that changed (read with `ast`,
    never run), each once; a name defined twice in the file is left out (a rule scoped
    by name would reach both)."""
    try:
        tree = pysource.parse(before)
    except (SyntaxError, ValueError):
        return []
    defs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    counts = Counter(d.name for d in defs)
    old = before.decode(errors="replace").splitlines()
    new = after.decode(errors="replace").splitlines()
    lines: set[int] = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, old, new).get_opcodes():
        if tag != "equal":
            lines.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    names: list[str] = []
    for line in sorted(lines):
        holders = [d for d in defs if d.lineno <= line <= (d.end_lineno or d.lineno)]
        if holders:
            name = max(holders, key=lambda d: d.lineno).name
            if counts[name] == 1 and name not in names:
                names.append(name)
    return names


def scoped_to_function(rule: CatalogRule, path: str, function: str) -> CatalogRule:
    """`rule` restricted to one function, signature and body (by name; the action names the
    file): its rule wrapped in `all` with an `inside` of that function definition."""
    inside = {
        "inside": {
            "kind": "function_definition",
            "stopBy": "end",
            "has": {"field": "name", "regex": f"^{re.escape(function)}$"},
        }
    }
    body = {**rule.rule, "rule": {"all": [rule.rule["rule"], inside]}}
    text = rule.instruction.rstrip(".")
    return CatalogRule(
        id=f"{rule.id}@{function}",
        path=rule.path,
        rule=body,
        examples=rule.examples.model_copy(
            update={"instruction": f"{text}, but only in the function {function} of {path}."}
        ),
    )


def rename_rule(old: str, new: str, kind: str) -> CatalogRule:
    """A rule renaming `old` to `new` everywhere: every identifier of that name except an
    attribute after a dot or a keyword argument's name, and the name's string in `__all__`."""
    rule = {
        "id": f"rename-{old}",
        "language": "python",
        "message": f"rename {old} to {new}",
        "rule": {
            "pattern": "$N",
            "any": [
                {
                    "kind": "identifier",
                    "regex": f"^{old}$",
                    "not": {
                        "any": [
                            {"inside": {"kind": "attribute", "field": "attribute"}},
                            {"inside": {"kind": "keyword_argument", "field": "name"}},
                        ]
                    },
                },
                {
                    "kind": "string",
                    "regex": f"^[\"']{old}[\"']$",
                    "inside": {
                        "kind": "assignment",
                        "stopBy": "end",
                        "has": {"field": "left", "regex": "^__all__$"},
                    },
                },
            ],
        },
        "transform": {"NEW": {"replace": {"source": "$N", "replace": old, "by": new}}},
        "fix": "$NEW",
    }
    instruction = (
        f"Rename the {kind} {old} to {new} everywhere in the repository: its definition, "
        f"imports, uses and __all__."
    )
    examples = RuleExamples(instruction=instruction, positive="", fixed="", negative="")
    return CatalogRule(id=rule["id"], path="", rule=rule, examples=examples)


def rename_targets(repo: Repo) -> list[tuple[str, str, str]]:
    """(old, new, kind) for each public top-level function and class of the repository's
    package modules (tests and `test_*` files left out), defined once and not also the name
    of a module or package (a rule on identifiers would rename the import path too)."""
    defined: Counter[str] = Counter()
    kinds: dict[str, str] = {}
    modules: set[str] = set()
    for path in sorted(repo.path.rglob("*.py")):
        rel = path.relative_to(repo.path)
        if SKIP_DIRS & set(rel.parts) or path.is_symlink():
            continue
        modules.update(rel.with_suffix("").parts)
        if "tests" in rel.parts or rel.name.startswith("test_") or rel.name == "conftest.py":
            continue
        try:
            tree = pysource.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined[node.name] += 1
                kinds[node.name] = "class" if isinstance(node, ast.ClassDef) else "function"
    out = []
    for name in sorted(defined):
        if defined[name] != 1 or name.startswith(("_", "test")) or name in modules:
            continue
        kind = kinds[name]
        out.append((name, f"{name}V2" if kind == "class" else f"{name}_v2", kind))
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


def draw_pairs(
    rule_ids: Iterable[str],
    cap: int,
    seed: str,
    skip: Callable[[str, str], bool] = lambda a, b: False,
) -> list[tuple[str, str]]:
    """Up to `cap` ordered pairs of distinct rules (none that `skip` refuses) in which every
    rule appears about equally often: each draw takes a pair of the least-used rules, ties
    (and the order inside the pair) settled by a `random.Random(seed)` shuffle. Catalog
    order gave the first rules alphabetically nearly every pair and the last ones none."""
    rng = random.Random(seed)
    pool = [p for p in itertools.combinations(sorted(set(rule_ids)), 2) if not skip(*p)]
    rng.shuffle(pool)
    uses: Counter[str] = Counter()
    out: list[tuple[str, str]] = []
    while pool and len(out) < cap:
        best = min(pool, key=lambda p: (max(uses[p[0]], uses[p[1]]), uses[p[0]] + uses[p[1]]))
        pool.remove(best)
        uses.update(best)
        out.append(best if rng.random() < 0.5 else (best[1], best[0]))
    return out


def candidates(
    source: str,
    repos: list[Repo],
    rules: list[CatalogRule],
    config: RefactorConfig,
    max_pairs_per_repo: int = 30,
    seed: int = 0,
) -> Iterator[Candidate]:
    """Every candidate of one source; none whose target could only touch tests (a rule that
    changes only test files, a file or function scope inside a test file)."""
    gen = config.generation
    by_id = {r.id: r for r in rules}
    for repo in repos:
        matched = matching_files(repo, rules, config)
        package = {k: v for k, v in matched.items() if not only_tests(v.files)}
        if source == "template":
            for rule_id in package:
                yield Candidate(repo, "template", ((by_id[rule_id], ()),))
            continue
        # procedural: one rule restricted to one file (where it touches several files) …
        for rule_id, scan in package.items():
            if len(scan.files) > 1:
                for path in scan.files:
                    if not is_test_path(path):
                        yield Candidate(repo, "procedural", ((by_id[rule_id], (path,)),))
        # … one rule restricted to one function (where it touches several functions of
        # that file: with one, the target is the file-scoped or the template one) …
        per_rule = [
            [
                (rule_id, path, f)
                for path, functions in scan.functions.items()
                for f in functions
                if len(functions) > 1 and not is_test_path(path)
            ]
            for rule_id, scan in package.items()
        ]  # taken one per rule in turn, so the cap keeps every rule
        scoped = [c for row in itertools.zip_longest(*per_rule) for c in row if c is not None]
        for rule_id, path, function in scoped[: gen.max_function_scoped_per_repo]:
            rule = scoped_to_function(by_id[rule_id], path, function)
            yield Candidate(repo, "procedural", ((rule, (path,)),))

        # … two rules in sequence (drawn so every rule appears about equally, capped) …
        files = {k: v.files for k, v in matched.items()}
        pairs = draw_pairs(
            matched,
            max_pairs_per_repo,
            f"{seed}:{repo.name}",
            lambda a, b, files=files: only_tests([*files[a], *files[b]]),
        )
        for first, second in pairs:
            yield Candidate(repo, "procedural", ((by_id[first], ()), (by_id[second], ())))
        # … and renames of the repository's own top-level names
        for old, new, kind in rename_targets(repo)[: gen.max_renames_per_repo]:
            yield Candidate(repo, "procedural", ((rename_rule(old, new, kind), ()),))


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def diff_lines(diff: str) -> dict[str, set[int]]:
    """Per file of a unified diff, the original line numbers it removes or replaces (a pure
    insertion counts as the line it follows)."""
    out: dict[str, set[int]] = {}
    lines: set[int] | None = None
    old = 0
    for line in diff.splitlines():
        if line.startswith("--- "):
            name = line[4:].strip()
            lines = None if name == "/dev/null" else out.setdefault(name[2:], set())
        elif line.startswith("+++ "):
            if lines is None and line[4:].strip() != "/dev/null":
                lines = out.setdefault(line[6:].strip(), set())
        elif hunk := _HUNK.match(line):
            old = int(hunk.group(1))
        elif lines is not None and line.startswith("-"):
            lines.add(old)
            old += 1
        elif lines is not None and line.startswith("+"):
            lines.add(max(old - 1, 1))
        elif line.startswith(" "):
            old += 1
    return out


def _function_spans(source: bytes, name: str) -> list[tuple[int, int]]:
    try:
        tree = pysource.parse(source)
    except (SyntaxError, ValueError):
        return []
    return [
        (n.lineno, n.end_lineno or n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name
    ]


def other_bindings(root: Path, name: str) -> list[str]:
    """Where `name` is bound other than as a top-level function or class of the package:
    a parameter, a local or module variable, a nested or test definition, an import alias.
    A rename rule over identifiers would rename each of them too."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if SKIP_DIRS & set(path.relative_to(root).parts) or path.is_symlink():
            continue
        try:
            tree = pysource.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        top = {id(n) for n in tree.body} if not is_test_path(rel) else set()
        for node in ast.walk(tree):
            what = ""
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                what = "definition" if node.name == name and id(node) not in top else ""
            elif isinstance(node, ast.arg) and node.arg == name:
                what = "parameter"
            elif isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
                what = "variable"
            elif isinstance(node, ast.alias) and node.asname == name:
                what = "import alias"
            if what:
                found.append(f"{what} at {rel}:{getattr(node, 'lineno', '?')}")
    return found


_ONLY_FILES = re.compile(r"\(only in ([^)]+)\)")
_ONLY_FUNCTION = re.compile(r"only in the function (\w+) of (\S+?)\.?(?:\s|$)")
_RENAME = re.compile(r"Rename the (?:function|class) (\w+) to (\w+)")


def task_problems(task: RefactorTask, root: Path | None = None) -> list[str]:
    """Why an accepted task is unfit, empty when it is fit: its target only touches tests,
    or contradicts what its instruction promises: "(only in F)" or "only in the function
    N of F" while the target changes other files or lines outside N; "Rename the function
    A to B" while the definition is not renamed, or other bindings of A (a parameter, a
    variable, a method) would be renamed with it. `root` is the repository the task was
    made from (the line-level and binding checks read it)."""
    if task.status != "accepted":
        return []
    problems = []
    if only_tests(task.files):
        problems.append(f"target only touches tests ({', '.join(task.files)})")
    changed = diff_lines(task.target_diff)
    text = task.instruction
    files = [f.strip() for m in _ONLY_FILES.finditer(text) for f in m.group(1).split(",")]
    functions = _ONLY_FUNCTION.findall(text)
    if len(_ONLY_FILES.findall(text)) + len(functions) >= len(task.reference_actions):
        allowed = set(files) | {path for _, path in functions}
        outside = sorted(f for f in changed if f not in allowed)
        if outside:
            problems.append(f"says only in {', '.join(sorted(allowed))} but changes {outside}")
    for function, rel in functions:
        if root is None or not (root / rel).is_file():
            continue
        spans = _function_spans((root / rel).read_bytes(), function)
        stray = sorted(n for n in changed.get(rel, set()) if not any(a <= n <= b for a, b in spans))
        if stray:
            problems.append(
                f"says only in the function {function} of {rel} but changes lines {stray}"
            )
    for old, new in _RENAME.findall(text):
        removed = re.compile(rf"^-\s*(?:async\s+)?(?:def|class)\s+{re.escape(old)}\b", re.M)
        added = re.compile(rf"^\+\s*(?:async\s+)?(?:def|class)\s+{re.escape(new)}\b", re.M)
        if not removed.search(task.target_diff) or not added.search(task.target_diff):
            problems.append(f"asks to rename {old} to {new} but the definition is not renamed")
        others = other_bindings(root, old) if root is not None else []
        if others:
            problems.append(
                f"renames {old}, but the name also binds: {', '.join(others[:5])}"
                + (f" and {len(others) - 5} more" if len(others) > 5 else "")
            )
    return problems


def finalize(tasks: list[RefactorTask], roots: dict[str, Path]) -> list[RefactorTask]:
    """Tasks as kept: one per id; an accepted task with `task_problems` kept as rejected
    with them; accepted tasks of the same target (repository and tree) reduced to the
    simplest (fewest steps, smallest rule, then id), the others rejected naming it."""
    unique: dict[str, RefactorTask] = {}
    for task in tasks:
        unique.setdefault(task.id, task)
    out = []
    for task in unique.values():
        problems = task_problems(task, roots.get(task.repo))
        if problems:
            task = task.model_copy(update={"status": "rejected", "reason": "; ".join(problems)})
        out.append(task)
    best: dict[tuple[str, str], RefactorTask] = {}
    for task in sorted(
        (t for t in out if t.status == "accepted"),
        key=lambda t: (t.difficulty.steps, t.difficulty.rule_complexity, t.id),
    ):
        best.setdefault((task.repo, task.target_tree), task)
    return [
        t
        if t.status != "accepted" or best[(t.repo, t.target_tree)].id == t.id
        else t.model_copy(
            update={
                "status": "rejected",
                "reason": f"duplicate target of task {best[(t.repo, t.target_tree)].id}",
            }
        )
        for t in out
    ]
