"""The `procedural` generator: compositions and parameterizations of catalog rules, in
every language with a code-structure table (`structure.py`):

- one rule restricted to one file (of several it changes);
- one rule restricted to one function (of several it changes in that file):
  `<rule>@<function>`, the rule wrapped in an `inside` of that function's definition;
- two rules in sequence, drawn so that every rule appears about equally (`draw_pairs`);
- renames of a repository's top-level names (`rename-<name>`: a rule written for the name).
"""

from __future__ import annotations

import ast
import itertools
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import PurePosixPath
from typing import NamedTuple

from verilearn_assets.refactor.config import GenerationSettings
from verilearn_assets.refactor.sources import structure
from verilearn_assets.refactor.sources.candidate import (
    Candidate,
    RuleScan,
    is_test_path,
    only_tests,
)
from verilearn_assets.refactor.sources.catalog import CatalogRule, Repo, RuleExamples
from verilearn_assets.refactor.sources.quality import other_bindings
from verilearn_assets.refactor.verify import pysource
from verilearn_assets.refactor.verify.toolchains import language_of_rule
from verilearn_assets.refactor.verify.workspace import SKIP_DIRS


def scoped_to_function(rule: CatalogRule, path: str, function: str) -> CatalogRule:
    """`rule` restricted to one function, signature and body (by name; the action names the
    file): its rule wrapped in `all` with an `inside` of that function definition, as the
    rule's language spells a function (`structure.function_scope`)."""
    inside = {"inside": structure.function_scope(language_of_rule(rule.rule), function)}
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


class RenameTarget(NamedTuple):
    old: str
    new: str
    kind: str  # function, class, method, type, struct, enum, trait
    package: str | None = None  # Go: the defining package (`package.old` is renamed too)


def rename_rule(
    old: str, new: str, kind: str, language: str = "python", package: str | None = None
) -> CatalogRule:
    """A rule renaming `old` to `new` everywhere. Python: every identifier of that name
    except an attribute after a dot or a keyword argument's name, and the name's string in
    `__all__`. Other languages: every identifier of the kinds its definitions and uses
    have (`structure.rename_rule_body`)."""
    if language != "python":
        rule = structure.rename_rule_body(language, old, new, package)
        instruction = (
            f"Rename the {kind} {old} to {new} everywhere in the repository: its definition, "
            f"declarations and every use."
        )
        examples = RuleExamples(instruction=instruction, positive="", fixed="", negative="")
        return CatalogRule(id=rule["id"], path="", rule=rule, examples=examples)
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


def rename_targets(repo: Repo) -> list[RenameTarget]:
    """The names a rename task may take: each public top-level definition of the
    repository's package code (tests left out), defined once and not also the name of a
    module, package or folder (a rule on identifiers would rename the import path too).
    Other languages also leave out a name bound anywhere else (`quality.other_bindings`:
    the rename would reach it) and entry points (`main`, Java's overrides)."""
    if repo.language == "python":
        return _python_rename_targets(repo)
    if not structure.supported(repo.language):
        return []
    language, s = repo.language, structure.syntax(repo.language)
    files = structure.source_files(repo.path, language)
    package_files = [f for f in files if not is_test_path(f)]
    defs = structure.top_level_definitions(repo.path, language, package_files)
    counts = Counter(d.name for d in defs)
    modules = {part for f in files for part in PurePosixPath(f).with_suffix("").parts}
    out = []
    for d in defs:
        if counts[d.name] != 1 or d.name.startswith(("_", "test", "Test")):
            continue
        if d.name in modules or d.name in s.reserved:
            continue
        if other_bindings(repo.path, d.name, language):
            continue
        package = _go_package(repo, d.file) if language == "go" else None
        out.append(RenameTarget(d.name, s.new_name(d.name, d.word), d.word, package))
    return sorted(out)


_GO_PACKAGE = re.compile(r"^\s*package\s+(\w+)", re.M)


def _go_package(repo: Repo, rel: str) -> str | None:
    found = _GO_PACKAGE.search((repo.path / rel).read_text(errors="replace"))
    return found.group(1) if found else None


def _python_rename_targets(repo: Repo) -> list[RenameTarget]:
    """Python's, read with `ast` (as its tasks always were): public top-level functions and
    classes of non-test modules (tests/, `test_*`, conftest left out)."""
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
        out.append(RenameTarget(name, f"{name}V2" if kind == "class" else f"{name}_v2", kind))
    return out


def procedural_candidates(
    repo: Repo,
    matched: dict[str, RuleScan],
    by_id: dict[str, CatalogRule],
    gen: GenerationSettings,
    max_pairs_per_repo: int = 30,
    seed: int = 0,
) -> Iterator[Candidate]:
    """The procedural candidates of one repository from where each rule changes it
    (`matched`); no scope inside a test file, no pair whose changes are all in tests."""
    package = {k: v for k, v in matched.items() if not only_tests(v.files)}
    # one rule restricted to one file (where it touches several files) …
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
    for target in rename_targets(repo)[: gen.max_renames_per_repo]:
        rule = rename_rule(target.old, target.new, target.kind, repo.language, target.package)
        yield Candidate(repo, "procedural", ((rule, ()),))


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
