"""Rule files as ast-grep accepts them: the language table checked against the installed
ast-grep, our own limits (size, depth, aliases, tags, paths), and refusals through the
real CLI and jail with ast-grep's own message."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from verilearn_assets.refactor.verify.actions import ActionRejected, parse_action
from verilearn_assets.refactor.verify.jail_policy import ast_grep_binary
from verilearn_assets.refactor.verify.languages import (
    LANGUAGES,
    UnknownLanguage,
    alias_pattern,
    canonical_language,
    extensions,
    language_of_path,
)


def test_every_alias_in_any_case_is_a_language_of_the_installed_ast_grep(tmp_path: Path) -> None:
    """ast-grep exits 2 on a `--lang` it does not know (1: nothing matched)."""
    binary = ast_grep_binary()
    for lang in LANGUAGES:
        for alias in lang.aliases:
            for spelled in {alias, alias.upper(), alias.capitalize()}:
                done = subprocess.run(
                    [binary, "run", "-p", "x", "-l", spelled, str(tmp_path)],
                    capture_output=True, text=True, check=False,
                )  # fmt: skip
                assert done.returncode in (0, 1), (spelled, done.stderr)
    for name in ("klingon", "sh", "tf", "c#", "jsonc"):  # not languages, here or there
        done = subprocess.run(
            [binary, "run", "-p", "x", "-l", name, str(tmp_path)], capture_output=True, check=False
        )
        assert done.returncode == 2, name
        with pytest.raises(UnknownLanguage, match=re.escape(repr(name))):
            canonical_language(name)


def test_every_extension_is_scanned_as_its_language_by_ast_grep(tmp_path: Path) -> None:
    """One file per extension of every language; ast-grep's `--inspect entity` says which
    files it scans as the language asked (an HTML file is scanned too, as Html, for the
    CSS and JavaScript inside it)."""
    for lang in LANGUAGES:
        for ext in lang.extensions:
            (tmp_path / f"f.{ext}").write_text("x\n")
    for lang in LANGUAGES:
        done = subprocess.run(
            [ast_grep_binary(), "run", "-p", "x", "-l", lang.name, "--inspect", "entity", "."],
            cwd=tmp_path, capture_output=True, text=True, check=False,
        )  # fmt: skip
        seen = re.findall(r"entity\|file\|f\.(\S+): language=(\w+)", done.stderr)
        assert sorted(e for e, name in seen if name == lang.ast_grep_name) == sorted(
            lang.extensions
        ), lang
        assert all(language_of_path(f"a/f.{ext}") == lang.name for ext in lang.extensions)


def test_canonical_names_are_aliases_and_schema_pattern_takes_any_case() -> None:
    assert canonical_language("Tsx") == "tsx" and canonical_language("C++") == "cpp"
    assert canonical_language("golang") == "go" and canonical_language("PY") == "python"
    assert extensions("ts") == ("ts", "cts", "mts")
    pattern = re.compile(alias_pattern())
    for lang in LANGUAGES:
        assert canonical_language(lang.name) == lang.name
        assert all(pattern.match(a.upper()) and pattern.match(a) for a in lang.aliases)
    assert not pattern.match("klingon") and not pattern.match("pythonx")


# --- refusals through the real CLI and jail ------------------------------------------

DUPLICATE_KEY = """\
id: dup
language: python
rule:
  pattern: $A == None
  pattern: $A != None
fix: $A is None
"""  # PyYAML keeps the last key; ast-grep refuses the file: its judgment, its words
BAD_KIND = "id: k\nlanguage: Python\nrule: {kind: no_such_kind}\nfix: x\n"
PANIC = (  # ast-grep 0.51.1 panics loading this (exit 101): refused, nothing scanned
    "id: p\nlanguage: py\nrule: {kind: identifier}\n"
    "transform:\n  B:\n    replace: {source: $$$, replace: x, by: y}\nfix: $B\n"
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "m.py").write_text("x = a == None\nyes_value = maybe\n")
    return root


def _cli(capsys: pytest.CaptureFixture[str], rule: Path, tree: Path, backend: str = "bwrap"):
    from verilearn_assets.cli import main

    code = main(["refactor", "apply", "--rule", str(rule), "--workspace", str(tree),
                 "--backend", backend])  # fmt: skip
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(("text", "words"), [(DUPLICATE_KEY, "duplicate mapping key"),
                                            (BAD_KIND, "no_such_kind")])  # fmt: skip
@pytest.mark.parametrize("backend", ["bwrap", "none"])
def test_a_rule_ast_grep_refuses_is_refused_with_its_own_message(
    backend: str, text: str, words: str, tree: Path, tmp_path: Path, capsys, home: Path
) -> None:
    rule = tmp_path / "refused.yml"
    rule.write_text(text)
    bare = subprocess.run(
        [ast_grep_binary(), "scan", "-U", "-r", str(rule)],
        cwd=tree, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bare.returncode == 8 and words in bare.stderr
    before = tree.joinpath("m.py").read_text()
    code, out, err = _cli(capsys, rule, tree, backend)
    data = json.loads(out)
    assert code == 1 and data["refused"]["what"] == "rule", data
    assert data["refused"]["reason"] == data["message"] == bare.stderr.strip()  # same words
    assert f"rule refused: Error: Cannot parse rule {rule}" in err and words in err
    assert data["diff"] == "" and data["files_changed"] == []
    assert tree.joinpath("m.py").read_text() == before


def test_a_rule_that_crashes_ast_grep_is_refused(tree: Path, tmp_path: Path, capsys, home) -> None:
    rule = tmp_path / "panic.yml"
    rule.write_text(PANIC)
    code, out, err = _cli(capsys, rule, tree)
    data = json.loads(out)
    assert code == 1 and data["refused"]["what"] == "rule" and data["exit_code"] == 101
    assert "transform var must be named" in data["refused"]["reason"] and "rule refused" in err
    assert data["files_changed"] == []


def test_rule_text_reaches_ast_grep_verbatim(tree: Path, tmp_path: Path, capsys, home) -> None:
    """`fix: yes` is the string `yes` to ast-grep (YAML 1.2) and `True` to PyYAML (1.1): a
    round trip through Python would rewrite to `true`. The jailed result equals bare's."""
    rule = tmp_path / "yes.yml"
    rule.write_text("id: y\nlanguage: PY\nrule: {pattern: maybe}\nfix: yes\n")
    code, out, _ = _cli(capsys, rule, tree)
    data = json.loads(out)
    assert code == 0 and "+yes_value = yes" in data["diff"], data
    assert parse_action({"kind": "rule", "rule": rule.read_text()}).rule_yaml() == rule.read_text()
    # the YAML core schema's tags are plain YAML to both (never a loader's constructor)
    rule.write_text("id: y\nlanguage: PY\nrule: !!map {pattern: maybe}\nfix: !!str no\n")
    code, out, _ = _cli(capsys, rule, tree)
    data = json.loads(out)
    assert code == 0 and "+yes_value = no" in data["diff"], data


HOSTILE = {
    "huge": "id: h\nlanguage: python\nrule: {pattern: a}\nfix: b\n" + "# pad\n" * 20_000,
    "deep": "id: d\nlanguage: python\nrule: " + "{not: " * 200 + "{pattern: a}" + "}" * 200 + "\n",
    "etc-files": "id: e\nlanguage: python\nfiles: ['/etc/**']\nrule: {pattern: a}\nfix: b\n",
    "parent-ignores": "id: p\nlanguage: go\nignores: [{glob: 'src/../../x/**'}]\n"
    "rule: {pattern: a}\n",
    "home-files": "id: t\nlanguage: rs\nfiles: ['~/.ssh/*']\nrule: {pattern: a}\n",
    "include-tag": "id: i\nlanguage: python\nrule: !include /etc/passwd\n",
    "python-tag": "id: o\nlanguage: python\nrule: {pattern: a}\n"
    "fix: !!python/object/apply:os.system [id]\n",
    "laughs": "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{n}: &{n} [" + ", ".join([f"*{p}"] * 10) + "]\n"
        for p, n in zip("abcdef", "bcdefg", strict=True)
    )
    + "id: l\nlanguage: python\nrule: {pattern: a}\n",
    "many-documents": "id: m\nlanguage: python\nrule: {pattern: a}\n---\n" * 100,
    # a YAML merge key brings `files` in from elsewhere: checked as merged
    "merge-key": "id: k\nlanguage: python\nrule: {pattern: a}\n<<: {files: ['/etc/**']}\n",
}


WHY = {  # what each refusal must say
    "huge": "over the limit of",
    "deep": "levels deep",
    "etc-files": "files: '/etc/**' points outside the workspace",
    "parent-ignores": "points outside the workspace",
    "home-files": "points outside the workspace",
    "include-tag": "explicit YAML tag '!include'",
    "python-tag": "explicit YAML tag",
    "laughs": "YAML nodes (aliases)",
    "many-documents": "documents",
    "merge-key": "files: '/etc/**' points outside the workspace",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_rule_files_are_refused_before_anything_runs(
    name: str, tree: Path, tmp_path: Path, capsys, home: Path
) -> None:
    rule = tmp_path / f"{name}.yml"
    rule.write_text(HOSTILE[name])
    code, out, err = _cli(capsys, rule, tree)
    data = json.loads(out)
    assert code == 1 and data["status"] == "disallowed" and data["refused"]["what"] == "rule"
    assert str(rule) in data["refused"]["reason"] and "rule refused" in err
    assert WHY[name] in data["refused"]["reason"], data
    assert not (home / "refactor" / "workspaces").exists() or not any(
        (home / "refactor" / "workspaces").iterdir()
    )
    with pytest.raises(ActionRejected) as rejected:  # the actor's path refuses it too
        parse_action({"kind": "rule", "rule": HOSTILE[name]})
    assert rejected.value.failure == "disallowed" and WHY[name] in str(rejected.value)


def test_a_language_that_is_not_one_is_refused_naming_it(tree: Path, tmp_path: Path, capsys, home):
    rule = tmp_path / "lang.yml"
    rule.write_text(
        "id: a\nlanguage: python\nrule: {pattern: a}\n---\n"
        "id: b\nlanguage: COBOL\nrule: {pattern: a}\n"
    )
    code, out, err = _cli(capsys, rule, tree)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "document 2: language 'COBOL' is not one ast-grep supports" in err and "lang.yml" in err
    with pytest.raises(ActionRejected) as rejected:
        parse_action({"kind": "rule", "rule": rule.read_text()})
    assert rejected.value.failure == "schema" and "COBOL" in str(rejected.value)


def test_rule_action_forms_are_one_file(tmp_path: Path) -> None:
    """Text with `---`, a list of mappings and a mapping: the same documents to ast-grep."""
    docs = [
        {"id": "a", "language": "Tsx", "rule": {"pattern": "var $A = $B"}, "fix": "let $A = $B"},
        {"id": "b", "language": "tsx", "rule": {"pattern": "$A == $B"}, "fix": "$A === $B"},
    ]
    text = "id: a\nlanguage: Tsx\nrule: {pattern: var $A = $B}\nfix: let $A = $B\n---\n" \
        "id: b\nlanguage: tsx\nrule: {pattern: $A == $B}\nfix: $A === $B\n"  # fmt: skip
    results = []
    for form in (text, docs):
        action = parse_action({"kind": "rule", "rule": form})
        assert [d.id for d in action.rule_file.documents] == ["a", "b"]
        assert action.rule_file.languages == ["tsx"] and action.rule_file.has_fix
        root = tmp_path / f"t{len(results)}"
        root.mkdir()
        (root / "a.tsx").write_text("var x = 1;\nif (y == 1) {}\n")
        (root / "rule.yml").write_text(action.rule_yaml())
        subprocess.run([ast_grep_binary(), "scan", "-U", "-r", "rule.yml", "a.tsx"], cwd=root,
                       check=True, capture_output=True)  # fmt: skip
        results.append((root / "a.tsx").read_text())
    assert results[0] == results[1] and "let x = 1" in results[0] and "y === 1" in results[0]
