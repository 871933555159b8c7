"""Quality of generated tasks (`finalize`): every accepted task passes `task_problems` (a
target that changes the package, not only tests; a target that does what its instruction
says: a file- or function-scoped task changes nothing outside its file or function, a
rename renames the definition and nothing else of that name), else it is kept as rejected
with the reason; and two accepted tasks with the same target keep one (the simplest:
fewest steps, smallest rule), the other kept as rejected `duplicate target of task <id>`.

Function spans and, outside Python, definitions and bindings are read with ast-grep
(`structure.py`); Python's bindings with `ast`, as its tasks always were.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from verilearn_assets.refactor.records import RefactorTask
from verilearn_assets.refactor.sources import structure
from verilearn_assets.refactor.sources.candidate import is_test_path, only_tests, task_language
from verilearn_assets.refactor.verify import pysource
from verilearn_assets.refactor.verify.workspace import SKIP_DIRS

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


def other_bindings(root: Path, name: str, language: str = "python") -> list[str]:
    """Where `name` is bound other than as a top-level definition of the package: a
    parameter, a local or module variable, a method or field, a nested or test definition,
    an import alias. A rename rule over identifiers would rename each of them too."""
    if language != "python":
        return _bindings_elsewhere(root, name, language)
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
_RENAME = re.compile(r"Rename the (?:function|class|method|type|struct|enum|trait) (\w+) to (\w+)")


def task_problems(task: RefactorTask, root: Path | None = None) -> list[str]:
    """Why an accepted task is unfit, empty when it is fit: its target only touches tests,
    or contradicts what its instruction promises: "(only in F)" or "only in the function
    N of F" while the target changes other files or lines outside N; "Rename the function
    A to B" while the definition is not renamed, or other bindings of A (a parameter, a
    variable, a method) would be renamed with it. `root` is the repository the task was
    made from (the line-level and binding checks read it)."""
    if task.status != "accepted":
        return []
    language = task_language(task)
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
        spans = structure.function_spans((root / rel).read_bytes(), function, language)
        stray = sorted(n for n in changed.get(rel, set()) if not any(a <= n <= b for a, b in spans))
        if stray:
            problems.append(
                f"says only in the function {function} of {rel} but changes lines {stray}"
            )
    for old, new in _RENAME.findall(text):
        if not _definition_renamed(task.target_diff, old, new, language, root):
            problems.append(f"asks to rename {old} to {new} but the definition is not renamed")
        others = other_bindings(root, old, language) if root is not None else []
        if others:
            problems.append(
                f"renames {old}, but the name also binds: {', '.join(others[:5])}"
                + (f" and {len(others) - 5} more" if len(others) > 5 else "")
            )
    return problems


def _definition_renamed(diff: str, old: str, new: str, language: str, root: Path | None) -> bool:
    """The target renames the definition: Python's `def`/`class` line of `old` removed and
    one of `new` added; elsewhere every top-level definition of `old` (its name's line,
    read with ast-grep from the repository) is among the changed lines and a line with
    `new` is added."""
    if language == "python" or not structure.supported(language):
        removed = re.compile(rf"^-\s*(?:async\s+)?(?:def|class)\s+{re.escape(old)}\b", re.M)
        added = re.compile(rf"^\+\s*(?:async\s+)?(?:def|class)\s+{re.escape(new)}\b", re.M)
        return bool(removed.search(diff) and added.search(diff))
    if root is None or not re.search(rf"^\+.*\b{re.escape(new)}\b", diff, re.M):
        return False
    defs = _own_definitions(root, old, language)
    changed = diff_lines(diff)
    return bool(defs) and all(line in changed.get(file, set()) for file, line in defs)


def _own_definitions(root: Path, name: str, language: str) -> set[tuple[str, int]]:
    """(file, name line) of the top-level definitions of `name` in package (non-test) code."""
    files = [f for f in structure.source_files(root, language) if not is_test_path(f)]
    return {
        (d.file, d.line)
        for d in structure.top_level_definitions(root, language, files)
        if d.name == name
    }


def _bindings_elsewhere(root: Path, name: str, language: str) -> list[str]:
    """Every binding of `name` (ast-grep, `structure.bindings`) except the top-level
    definition it names in package code and, in C, its file-level prototypes."""
    own = _own_definitions(root, name, language)
    files = structure.source_files(root, language)
    return [
        f"{what} at {file}:{line}"
        for what, file, line in structure.bindings(root, language, files, name)
        if not ((file, line) in own or what == "prototype")
    ]


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
