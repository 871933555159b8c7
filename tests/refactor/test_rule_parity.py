"""`verilearn refactor apply --rule FILE` gives exactly what bare `ast-grep scan -U -r FILE`
gives on a copy, for every rule file of the catalog, in every language it has.

Cases: `rules/parity/<language>/*.yml`, three or more for each language of the issue's
list and one for every other language ast-grep has (rule files as ast-grep users write
them: several documents, `utils`, `constraints`, `transform`, `rewriters`, `fix` objects
with `expandStart`/`expandEnd`, `files`/`ignores`, language names in any case and alias;
the first document's `metadata.sample` is the tree it runs on). Each case runs through the
real CLI and jail (bwrap; Docker on one case per language of the issue's list) on one copy
and bare ast-grep on another; the resulting diffs must be equal. (The task rules of
`rules/` are checked through the jail by their own tests.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from verilearn_assets.cli import main
from verilearn_assets.refactor.sources.catalog import RULES_DIR
from verilearn_assets.refactor.verify.jail_policy import ast_grep_binary
from verilearn_assets.refactor.verify.languages import LANGUAGES, canonical_language
from verilearn_assets.refactor.verify.workspace import snapshot, unified_diff

PARITY_DIR = RULES_DIR / "parity"
REQUIRED = ("python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp", "ruby")


def _first_document(path: Path) -> dict:
    return next(d for d in yaml.safe_load_all(path.read_text()) if d)


def _sample(path: Path) -> dict[str, str]:
    """The tree a parity file runs on: its first document's `metadata.sample`."""
    return dict(_first_document(path)["metadata"]["sample"])


CASES = sorted(PARITY_DIR.glob("*/*.yml"))
# Docker: the first file of each language of the list (pooled containers)
DOCKER_CASES = sorted(
    {p.parent.name: p for p in reversed(CASES) if p.parent.name in REQUIRED}.values()
)


def _id(path: Path) -> str:
    return str(path.relative_to(RULES_DIR).with_suffix(""))


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _bare(rule: Path, tree: Path) -> tuple[subprocess.CompletedProcess[str], str, list[str]]:
    """Bare ast-grep on `tree` in place: what it printed, the diff and the changed files."""
    before = snapshot(tree)
    done = subprocess.run(
        [ast_grep_binary(), "scan", "-U", "-r", str(rule)],
        cwd=tree, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    after = snapshot(tree)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return done, unified_diff(before, after), changed


def _apply(capsys: pytest.CaptureFixture[str], rule: Path, tree: Path, backend: str) -> dict:
    code = main(["refactor", "apply", "--rule", str(rule), "--workspace", str(tree),
                 "--backend", backend])  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert code == (1 if data["refused"] else 0), data
    return data


def _check_parity(
    rule: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> dict:
    files = _sample(rule)
    _write(tmp_path / "cli", files)
    _write(tmp_path / "bare", files)
    out = _apply(capsys, rule, tmp_path / "cli", backend)
    done, diff, changed = _bare(rule, tmp_path / "bare")
    assert {k: v.decode() for k, v in snapshot(tmp_path / "cli").items()} == files  # untouched
    assert done.returncode == 0, done.stderr  # every catalog file is one ast-grep accepts
    assert out["status"] in ("ok", "no_change") and out["refused"] is None, out
    assert out["diff"] == diff, f"{rule}: jailed diff differs from bare ast-grep's"
    assert out["files_changed"] == changed
    return out


def test_catalog_covers_every_language_and_the_required_ones_three_times() -> None:
    """Every language the installed ast-grep has (languages.py, checked against it) has a
    rule here, so the jail is shown to serve each; the issue's list has three or more."""
    by_language: dict[str, int] = {}
    for path in PARITY_DIR.glob("*/*.yml"):
        language = canonical_language(_first_document(path)["language"])
        assert path.parent.name == language, f"{path}: a {language} rule in the wrong folder"
        by_language[language] = by_language.get(language, 0) + 1
    assert {
        lang: by_language.get(lang, 0) for lang in REQUIRED if by_language.get(lang, 0) < 3
    } == {}
    assert sorted(by_language) == sorted(lang.name for lang in LANGUAGES)
    texts = [p.read_text() for p in PARITY_DIR.glob("*/*.yml")]
    for feature in ("\n---\n", "\nutils:", "\nconstraints:", "\ntransform:", "\nrewriters:",
                    "expandEnd:", "expandStart:", "\nfiles:", "\nignores:"):  # fmt: skip
        assert any(feature in t for t in texts), f"no parity rule uses {feature.strip()}"


@pytest.mark.parametrize("rule", CASES, ids=_id)
def test_apply_equals_bare_ast_grep_bwrap(
    rule: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    out = _check_parity(rule, tmp_path, capsys, "bwrap")
    assert out["status"] == "ok" and out["diff"], f"{rule}: its sample was not rewritten"


@pytest.mark.parametrize("rule", DOCKER_CASES, ids=_id)
def test_apply_equals_bare_ast_grep_docker(
    rule: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    from backends import require_backend

    require_backend("docker")
    assert _check_parity(rule, tmp_path, capsys, "docker")["diff"]


@pytest.mark.parametrize(
    ("lang", "name", "code", "pattern", "rewrite"),
    [
        ("Go", "a.go", "package a\n\nfunc f(s []int) bool { return len(s) == 0 }\n",
         "len($S) == 0", "$S == nil"),
        ("C++", "a.cpp", "int f(int *p) { return p == NULL; }\n", "$P == NULL", "!$P"),
        ("rb", "a.rb", "x = items.length == 0\n", "$A.length == 0", "$A.empty?"),
    ],
)  # fmt: skip
def test_pattern_rewrite_in_any_language_equals_bare_ast_grep(
    lang: str, name: str, code: str, pattern: str, rewrite: str,
    tmp_path: Path, capsys: pytest.CaptureFixture[str], home: Path,
) -> None:  # fmt: skip
    for side in ("cli", "bare"):
        _write(tmp_path / side, {name: code})
    argv = ["refactor", "apply", "--pattern", pattern, "--rewrite", rewrite, "--lang", lang,
            "--workspace", str(tmp_path / "cli"), "--backend", "bwrap"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    before = snapshot(tmp_path / "bare")
    subprocess.run(
        [ast_grep_binary(), "run", "-p", pattern, "-r", rewrite, "-l", lang, "-U"],
        cwd=tmp_path / "bare", capture_output=True, check=True,
    )  # fmt: skip
    diff = unified_diff(before, snapshot(tmp_path / "bare"))
    assert out["status"] == "ok" and out["diff"] == diff and diff, out


def test_gitignore_of_a_git_work_tree_is_honoured_as_by_bare_ast_grep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    """ast-grep skips what `.gitignore` names only under a `.git`: the jailed copy keeps an
    empty one, so generated code bare ast-grep leaves alone stays alone."""
    rule = tmp_path / "rule.yml"
    rule.write_text("id: a\nlanguage: python\nrule: {pattern: $A == None}\nfix: $A is None\n")
    files = {".gitignore": "gen/\n", "m.py": "x = a == None\n", "gen/g.py": "y = b == None\n"}
    for side in ("cli", "bare"):
        _write(tmp_path / side, files)
        (tmp_path / side / ".git").mkdir()  # what `git init` leaves that ast-grep looks at
    out = _apply(capsys, rule, tmp_path / "cli", "bwrap")
    done, diff, changed = _bare(rule, tmp_path / "bare")
    assert done.returncode == 0 and changed == ["m.py"]
    assert out["diff"] == diff and out["files_changed"] == changed
