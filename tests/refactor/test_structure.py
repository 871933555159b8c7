"""Code structure per language read with ast-grep (`sources/structure.py`, issue 26): known
answers on small snippets of each corpus language, through the real ast-grep binary.

Per language: the functions of a file and their spans; which functions a change touched
(a name defined twice left out); a catalog rule scoped to one function changes that
function only (ast-grep runs the scoped rule) and the teacher recognises the scope; the
rename targets of a tiny repository (a name bound elsewhere refused); the bindings that
refuse it; the rename rule's rewrite of the repository. Python's functions agree with its
`ast` on every function of the bundled Python corpora.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest
import yaml

from verilearn_assets.refactor.sources import structure
from verilearn_assets.refactor.sources.catalog import (
    CatalogRule,
    Repo,
    RuleExamples,
    load_corpus,
    scoped_function,
)
from verilearn_assets.refactor.sources.procedural import (
    rename_rule,
    rename_targets,
    scoped_to_function,
)
from verilearn_assets.refactor.sources.quality import other_bindings
from verilearn_assets.refactor.verify import pysource
from verilearn_assets.refactor.verify.jail_policy import ast_grep_binary

# language → (file extension, snippet, its functions (name, first line, last line)); every
# function holds one `v + 1`; `gamma` is defined twice (C cannot: once)
SNIPPETS: dict[str, tuple[str, str, list[tuple[str, int, int]]]] = {
    "python": (
        "py",
        "def alpha(v):\n    return v + 1\n\n\nclass Box:\n    def beta(self, v):\n"
        "        return v + 1\n\n\nclass A:\n    def gamma(self, v):\n        return v + 1\n\n\n"
        "class B:\n    def gamma(self, v):\n        return v + 1\n",
        [("alpha", 1, 2), ("beta", 6, 7), ("gamma", 11, 12), ("gamma", 16, 17)],
    ),
    "javascript": (
        "js",
        "function alpha(v) {\n  return v + 1;\n}\nclass Box {\n  beta(v) {\n    return v + 1;\n"
        "  }\n}\nclass A {\n  gamma(v) { return v + 1; }\n}\nclass B {\n"
        "  gamma(v) { return v + 1; }\n}\n",
        [("alpha", 1, 3), ("beta", 5, 7), ("gamma", 10, 10), ("gamma", 13, 13)],
    ),
    "go": (
        "go",
        "package p\n\nfunc alpha(v int) int {\n\treturn v + 1\n}\n\ntype A struct{}\n"
        "type B struct{}\n\nfunc (a A) beta(v int) int {\n\treturn v + 1\n}\n\n"
        "func (a A) gamma(v int) int { return v + 1 }\n\n"
        "func (b B) gamma(v int) int { return v + 1 }\n",
        [("alpha", 3, 5), ("beta", 10, 12), ("gamma", 14, 14), ("gamma", 16, 16)],
    ),
    "rust": (
        "rs",
        "fn alpha(v: i32) -> i32 {\n    v + 1\n}\n\nstruct A;\nstruct B;\n\nimpl A {\n"
        "    fn beta(&self, v: i32) -> i32 {\n        v + 1\n    }\n"
        "    fn gamma(&self, v: i32) -> i32 { v + 1 }\n}\n\nimpl B {\n"
        "    fn gamma(&self, v: i32) -> i32 { v + 1 }\n}\n",
        [("alpha", 1, 3), ("beta", 9, 11), ("gamma", 12, 12), ("gamma", 16, 16)],
    ),
    "java": (
        "java",
        "class Box {\n    static int alpha(int v) {\n        return v + 1;\n    }\n\n"
        "    int beta(int v) {\n        return v + 1;\n    }\n\n"
        "    int gamma(int v) { return v + 1; }\n\n"
        "    int gamma(long v) { return (int) v + 1; }\n}\n",
        [("alpha", 2, 4), ("beta", 6, 8), ("gamma", 10, 10), ("gamma", 12, 12)],
    ),
    "c": (
        "c",
        "static int alpha(int v) {\n    return v + 1;\n}\n\nint *beta(int *v) {\n    *v = *v + 1;\n"
        "    return v;\n}\n\nint gamma(int v) { return v + 1; }\n",
        [("alpha", 1, 3), ("beta", 5, 8), ("gamma", 10, 10)],
    ),
}
LANGUAGES = list(SNIPPETS)


def _plus_one(language: str) -> CatalogRule:
    """A catalog-shaped rule of `language`: `X + 1` becomes `X + 2`."""
    rule = {"id": "plus-one", "language": language, "rule": {"pattern": "$A + 1"}, "fix": "$A + 2"}
    examples = RuleExamples(instruction="Add two, not one.", positive="", fixed="", negative="")
    return CatalogRule(id="plus-one", path="", rule=rule, examples=examples)


def _scan_update(where: Path, rule: dict, files: list[str]) -> None:
    (where / "rule.yml").write_text(yaml.safe_dump(rule, sort_keys=False))
    done = subprocess.run(
        [ast_grep_binary(), "scan", "-r", "rule.yml", "-U", *files],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (where / "rule.yml").unlink()


@pytest.mark.parametrize("language", LANGUAGES)
def test_functions_and_their_spans(language: str) -> None:
    _, text, expected = SNIPPETS[language]
    assert structure.functions(text.encode(), language) == expected
    assert structure.function_spans(text.encode(), "beta", language) == [
        (a, b) for n, a, b in expected if n == "beta"
    ]
    assert structure.function_spans(text.encode(), "nowhere", language) == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_changed_functions_are_the_innermost_named_once(language: str) -> None:
    _, text, expected = SNIPPETS[language]
    everywhere = text.replace("+ 1", "+ 2")
    once = [n for n, _, _ in expected if [m for m, _, _ in expected].count(n) == 1]
    assert structure.changed_functions(text.encode(), everywhere.encode(), language) == once
    beta_line = next(a for n, a, _ in expected if n == "beta") + 1  # the body's first line
    lines = text.splitlines(keepends=True)
    lines[beta_line - 1] = lines[beta_line - 1].replace("+ 1", "+ 2")
    only_beta = "".join(lines)
    assert only_beta != text
    assert structure.changed_functions(text.encode(), only_beta.encode(), language) == ["beta"]
    assert structure.changed_functions(text.encode(), text.encode(), language) == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_rule_scoped_to_one_function_changes_that_function_only(
    language: str, tmp_path: Path
) -> None:
    ext, text, expected = SNIPPETS[language]
    name = f"snippet.{ext}"
    (tmp_path / name).write_text(text)
    scoped = scoped_to_function(_plus_one(language), name, "beta")
    assert scoped.id == "plus-one@beta"
    assert scoped.instruction == f"Add two, not one, but only in the function beta of {name}."
    assert scoped_function(scoped.rule) == "beta"  # what the program teacher reads
    assert scoped_function(_plus_one(language).rule) is None
    _scan_update(tmp_path, scoped.rule, [name])
    start, end = next((a, b) for n, a, b in expected if n == "beta")
    want = [
        line.replace("+ 1", "+ 2") if start <= i <= end else line
        for i, line in enumerate(text.splitlines(keepends=True), 1)
    ]
    assert (tmp_path / name).read_text() == "".join(want)


def test_python_functions_agree_with_ast_on_the_bundled_corpora() -> None:
    """Python's spans were read with `ast`; ast-grep's must be the same on every file of
    the Python corpora (trailing comments after a body included)."""
    seen = 0
    for repo in (r for r in load_corpus() if r.language == "python"):
        for rel in structure.source_files(repo.path, "python"):
            data = (repo.path / rel).read_bytes()
            tree = pysource.parse(data)  # the host's parser, its warnings silenced
            want = sorted(
                (n.name, n.lineno, n.end_lineno)
                for n in ast.walk(tree)
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            )
            assert sorted(structure.functions(data, "python")) == want, (repo.name, rel)
            seen += len(want)
    assert seen > 50


# language → (files of a tiny repository, its rename targets (old, new, kind), the bindings
# refusing `taken` (a parameter of `user` shares its name), the files `clean` is in)
REPOS: dict[str, tuple[dict[str, str], list[tuple[str, str, str]], list[str]]] = {
    "python": (
        {
            "pkg/lib.py": "def clean(x):\n    return x + 1\n\n\ndef taken(y):\n    return y\n\n\n"
            "def user(taken):\n    return clean(taken)\n",
            "tests/test_lib.py": "from pkg.lib import clean\n\n\ndef test_it():\n"
            "    assert clean(1) == 2\n",
        },
        # Python's targets are read as they always were; `finalize` refuses `taken` later
        [
            ("clean", "clean_v2", "function"),
            ("taken", "taken_v2", "function"),
            ("user", "user_v2", "function"),
        ],  # fmt: skip
        ["parameter at pkg/lib.py:9"],
    ),
    "javascript": (
        {
            "src/lib.js": "function clean(x) {\n  return x + 1;\n}\nfunction taken(y) {\n"
            "  return y;\n}\nfunction user(taken) {\n  return clean(taken);\n}\n"
            "module.exports = { clean, taken, user };\n",
            "tests/lib.test.js": "const { clean } = require('../src/lib.js');\nclean(1);\n",
        },
        [("clean", "cleanV2", "function"), ("user", "userV2", "function")],
        ["parameter at src/lib.js:7"],
    ),
    "go": (
        {
            "lib/lib.go": "package lib\n\nfunc clean(x int) int {\n\treturn x + 1\n}\n\n"
            "func taken(y int) int {\n\treturn y\n}\n\nfunc User(taken int) int {\n"
            "\treturn clean(taken)\n}\n",
            "tests/lib_test.go": 'package tests\n\nimport "example.com/m/lib"\n\n'
            "func use() int { return lib.User(1) }\n",
        },
        [("User", "UserV2", "function"), ("clean", "cleanV2", "function")],
        ["parameter at lib/lib.go:11"],
    ),
    "rust": (
        {
            "src/lib.rs": "pub fn clean(x: i32) -> i32 {\n    x + 1\n}\n\n"
            "pub fn taken(y: i32) -> i32 {\n"
            "    y\n}\n\npub fn user(taken: i32) -> i32 {\n    clean(taken)\n}\n",
            "tests/t.rs": "use m::clean;\n\n#[test]\nfn t() {\n    assert_eq!(clean(1), 2);\n}\n",
        },
        [("clean", "clean_v2", "function"), ("user", "user_v2", "function")],
        ["parameter at src/lib.rs:9"],
    ),
    "java": (
        {
            "src/p/Lib.java": "package p;\n\npublic class Lib {\n"
            "    public static int clean(int x) {\n"
            "        return x + 1;\n    }\n\n    public static int taken(int y) {\n"
            "        return y;\n    }\n\n    public static int user(int taken) {\n"
            "        return clean(taken);\n    }\n}\n",
            "tests/p/LibTest.java": "package p;\n\npublic class LibTest {\n    static int use() {\n"
            "        return Lib.clean(1);\n    }\n}\n",
        },
        [("clean", "cleanV2", "method"), ("user", "userV2", "method")],
        ["parameter at src/p/Lib.java:12"],
    ),
    "c": (
        {
            "src/lib.h": "int clean(int x);\nint taken(int y);\nint user(int taken);\n",
            "src/lib.c": '#include "lib.h"\n\nint clean(int x) {\n    return x + 1;\n}\n\n'
            "int taken(int y) {\n    return y;\n}\n\nint user(int taken) {\n"
            "    return clean(taken);\n}\n",
            "tests/test_lib.c": '#include "lib.h"\n\nint main(void) {\n'
            "    return clean(1) == 2 ? 0 : 1;\n}\n",
        },
        [("clean", "clean_v2", "function"), ("user", "user_v2", "function")],
        ["parameter at src/lib.c:11", "parameter at src/lib.h:3"],
    ),
}


def _tiny(root: Path, language: str) -> Repo:
    for rel, text in REPOS[language][0].items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return Repo(name=f"tiny-{language}", path=root, split="dev", licence="MIT", language=language)


@pytest.mark.parametrize("language", LANGUAGES)
def test_rename_targets_and_the_bindings_that_refuse_one(language: str, tmp_path: Path) -> None:
    repo = _tiny(tmp_path, language)
    files, targets, taken = REPOS[language]
    assert [t[:3] for t in rename_targets(repo)] == targets
    assert other_bindings(repo.path, "taken", language) == taken
    assert other_bindings(repo.path, "clean", language) == []  # its own definition is not one


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_rename_rule_renames_every_use_and_nothing_else(language: str, tmp_path: Path) -> None:
    repo = _tiny(tmp_path, language)
    files, targets, _ = REPOS[language]
    old, new, kind = next(t for t in targets if t[0].lower() == "clean")
    rule = rename_rule(old, new, kind, language)
    assert rule.id == f"rename-{old}" and f"Rename the {kind} {old} to {new}" in rule.instruction
    _scan_update(repo.path, rule.rule, sorted(files))
    for rel, text in files.items():
        assert (repo.path / rel).read_text() == text.replace(old, new), rel


def test_go_renames_the_package_qualified_use_only_for_its_package(tmp_path: Path) -> None:
    """`lib.User` is renamed with `lib`'s function; `other.User` (another package's) is not."""
    repo = _tiny(tmp_path, "go")
    (repo.path / "tests" / "lib_test.go").write_text(
        'package tests\n\nimport (\n\t"example.com/m/lib"\n\t"example.com/m/other"\n)\n\n'
        "func use() int { return lib.User(1) + other.User(2) }\n"
    )
    (target,) = [t for t in rename_targets(repo) if t.old == "User"]
    assert target.package == "lib"
    rule = rename_rule(target.old, target.new, target.kind, "go", target.package)
    _scan_update(repo.path, rule.rule, ["lib/lib.go", "tests/lib_test.go"])
    assert "lib.UserV2(1) + other.User(2)" in (repo.path / "tests" / "lib_test.go").read_text()
    assert "func UserV2(taken int)" in (repo.path / "lib" / "lib.go").read_text()


def test_an_unknown_language_is_named() -> None:
    with pytest.raises(ValueError, match="no code-structure table for language 'kotlin'"):
        structure.functions(b"fun f() {}", "kotlin")
