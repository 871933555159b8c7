"""The bundled refactor corpora (issue 13): small packages with tests, a few hundred lines
each, holding the old-style idioms the rule catalog rewrites.

Known answers on the folders themselves: their size, that their own tests pass under plain
pytest (a real subprocess on a copy), that the idioms the issue names are there, and that
every catalog rule finds something to rewrite in at least two repositories and in each
split (real ast-grep), so every split gets tasks of every rule.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from verilearn_assets.refactor.sources.catalog import CORPUS_DIR, RULES_DIR, load_corpus, load_rules
from verilearn_assets.refactor.verify.jail_policy import ast_grep_binary

BUNDLED = ("ledger", "pathconf", "taskq", "textkit")
MIN_LINES, MAX_LINES = 200, 600  # "a few hundred lines" of package + tests

# idiom → a regex over the package modules or the tests (where the issue puts it)
IDIOMS: dict[str, tuple[str, str]] = {
    "Optional[X]": ("package", r"Optional\["),
    "print logging": ("package", r"\bprint\("),
    "old-style % formatting": ("package", r"[\"'][^\"'\n]*%[sd][^\"'\n]*[\"'] % "),
    "dict() calls": ("package", r"\bdict\(\)"),
    "os.path": ("package", r"\bos\.path\.\w+\("),
    "async code": ("package", r"\basync def "),
    "assert in tests": ("tests", r"^\s+assert "),
    "unittest classes": ("tests", r"\(unittest\.TestCase\):"),
}


def _python_files(repo: Path) -> list[Path]:
    return sorted(p for p in repo.rglob("*.py") if "__pycache__" not in p.parts)


def _lines(repo: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in _python_files(repo))


def test_bundled_folders_are_the_four_packages_with_tests() -> None:
    found = sorted(p.name for p in CORPUS_DIR.iterdir() if list(p.glob("tests/test_*.py")))
    assert tuple(found) == BUNDLED
    for name in BUNDLED:
        assert (CORPUS_DIR / name / name / "__init__.py").is_file(), name
        assert list((CORPUS_DIR / name / "tests").glob("test_*.py")), name


@pytest.mark.parametrize("name", BUNDLED)
def test_each_repository_has_a_few_hundred_lines(name: str) -> None:
    lines = _lines(CORPUS_DIR / name)
    assert MIN_LINES <= lines <= MAX_LINES, f"{name}: {lines} lines of Python"


@pytest.mark.parametrize("name", BUNDLED)
def test_own_tests_pass_with_plain_pytest_on_a_copy(name: str, tmp_path: Path) -> None:
    repo = tmp_path / name
    shutil.copytree(CORPUS_DIR / name, repo, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [sys.executable, "-B", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"{name}:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
    summary = re.search(r"(\d+) passed", done.stdout)
    assert summary and int(summary.group(1)) >= 10, done.stdout[-500:]
    assert "failed" not in done.stdout.splitlines()[-1]


def test_the_issue_idioms_occur_across_the_corpora() -> None:
    texts: dict[str, list[str]] = defaultdict(list)
    for name in BUNDLED:
        for path in _python_files(CORPUS_DIR / name):
            part = "tests" if "tests" in path.relative_to(CORPUS_DIR / name).parts else "package"
            texts[part].append(path.read_text())
    missing = [
        idiom
        for idiom, (part, pattern) in IDIOMS.items()
        if not any(re.search(pattern, text, re.MULTILINE) for text in texts[part])
    ]
    assert missing == []


def test_every_rule_matches_in_two_repositories_and_in_every_split() -> None:
    rules = {r.id for r in load_rules()}
    inline = "\n---\n".join(p.read_text() for p in sorted(RULES_DIR.glob("*.yml")))
    splits = {r.name: r.split for r in load_corpus() if r.name in BUNDLED}
    assert sorted(splits) == list(BUNDLED) and set(splits.values()) == {"train", "dev", "test"}
    where: dict[str, set[str]] = defaultdict(set)
    for name in BUNDLED:
        done = subprocess.run(
            [ast_grep_binary(), "scan", "--inline-rules", inline, "--json=compact", "."],
            cwd=CORPUS_DIR / name,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        for match in json.loads(done.stdout):
            where[match["ruleId"]].add(name)
    assert set(where) == rules, rules - set(where)
    for rule_id, repos in sorted(where.items()):
        assert len(repos) >= 2, (rule_id, repos)
        assert {splits[r] for r in repos} == {"train", "dev", "test"}, (rule_id, repos)
