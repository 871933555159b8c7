"""The README cannot drift from the code: every repository path, `make` target and
`verilearn` subcommand and flag it names must exist (issue 29 found three that did not)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from verilearn_assets.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
# Where a relative path in the README may live: the repository, or the package (the README
# says `analysis/rewards.py` for `verilearn_assets/analysis/rewards.py`).
ROOTS = (REPO, REPO / "verilearn_assets")
# Directories of a verilearn home: `runs/<id>/…`, `lake/analysis/…` are not repository paths.
HOME_DIRS = {"lake", "runs", "logs", "plots", "dagster", "ingest", "cluster", "models", "model"}
HOME_DIRS |= {".verilearn", "."}  # the default home, made by the first run
EXTENSIONS = (".py", ".yaml", ".yml", ".sql", ".md", ".mk", ".toml", ".cfg", ".txt")
PLACEHOLDER = re.compile(r"[<{…]|\bDIR\b|\bNAME\b")
LITERAL_CHOICES = re.compile(r"[a-z0-9_\-]+(\|[a-z0-9_\-]+)*")


def code_spans(text: str) -> list[str]:
    """Fenced blocks (continuation lines joined to the line they continue) and inline code."""
    spans: list[str] = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M):
        lines: list[str] = []
        for line in block.splitlines():
            if line.startswith((" ", "\t")) and lines:
                lines[-1] += " " + line.strip()
            else:
                lines.append(line)
        spans += lines
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    spans += [" ".join(m.split()) for m in re.findall(r"`([^`]+)`", prose)]
    spans += re.findall(r"^    (\S.*)$", prose, flags=re.M)  # indented code in prose
    return spans


def _path_tokens(text: str) -> set[str]:
    links = set(re.findall(r"\]\(([^)#\s]+)\)", text))
    tokens = {t for span in code_spans(text) for t in span.split()} | links
    out = set()
    for token in tokens:
        token = token.strip("`'\",;:()[]").split("::")[0]
        if not token or token.startswith(("$", "-", "http", "~")) or "=" in token:
            continue
        first = token.split("/")[0]
        top_level = "/" in token and first and (REPO / first).exists()
        if top_level or ("/" in token and token.endswith(EXTENSIONS)):
            out.add(token)
    return out


def _exists(token: str) -> bool:
    cut = PLACEHOLDER.search(token)
    if cut:  # `verilearn_assets/<family>/`: the part before the placeholder
        token = token[: cut.start()].rsplit("/", 1)[0] + "/"
    for root in ROOTS:
        if any(ch in token for ch in "*?["):
            if next(root.glob(token), None) is not None:
                return True
        elif (root / token).exists():
            return True
    return False


def test_every_path_the_readme_names_exists() -> None:
    text = README.read_text()
    tokens = _path_tokens(text)
    assert "verilearn_assets/core/family.py" in tokens  # the extraction sees the table
    missing = sorted(t for t in tokens if not _exists(t) and t.split("/")[0] not in HOME_DIRS)
    assert not missing, f"README.md names paths that do not exist: {missing}"


def _make_targets() -> set[str]:
    targets = set()
    for path in [REPO / "Makefile", *sorted((REPO / "mk").glob("*.mk"))]:
        for line in path.read_text().splitlines():
            m = re.match(r"^([A-Za-z0-9_.\- ]+?)\s*::?(?!=)", line)
            if m and not line.startswith("\t"):
                targets |= set(m.group(1).split())
    return targets


def test_every_make_target_the_readme_names_exists() -> None:
    named = set()
    for span in code_spans(README.read_text()):
        named |= set(re.findall(r"(?:^|[\s(])make ((?:[a-z][\w-]*\s*)+)", span))
    targets = {t for group in named for t in group.split() if not t.startswith("-")}
    assert {"demo", "test", "cluster-up"} <= targets
    unknown = sorted(targets - _make_targets())
    assert not unknown, f"README.md names make targets that do not exist: {unknown}"


def _invocations(text: str) -> list[list[str]]:
    """Every `verilearn …` call of the README's code, as words (comments cut)."""
    calls = []
    for span in code_spans(text):
        for m in re.finditer(r"(?:^|[\s/])verilearn((?: +[^\s#`]+)*)", span.split(" #")[0]):
            calls.append(m.group(1).split())
    return calls


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _check(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """What in `verilearn <words>` the parser does not know (subcommands, flags, choices)."""
    path = ["verilearn"]
    while words and (subs := _subparsers(parser)):
        word = words.pop(0)
        if word not in subs:
            return [f"{' '.join(path)} has no subcommand {word!r}"]
        parser = subs[word]
        path.append(word)
    options = {o: a for a in parser._actions for o in a.option_strings}
    problems = []
    for i, word in enumerate(words):
        flag = word.strip("[]").split("=")[0]
        if not flag.startswith("--"):
            continue
        action = options.get(flag)
        if action is None:
            problems.append(f"{' '.join(path)} has no flag {flag}")
            continue
        value = word.split("=", 1)[1] if "=" in word else (words[i + 1 : i + 2] or [""])[0]
        value = value.strip("[]")
        if action.choices and LITERAL_CHOICES.fullmatch(value):  # `F`, `KEY`: placeholders
            wrong = sorted(set(value.split("|")) - {str(c) for c in action.choices})
            if wrong:
                problems.append(f"{' '.join(path)} {flag}: no choice {wrong}")
    return problems


def test_every_verilearn_command_and_flag_the_readme_names_exists() -> None:
    parser = build_parser()
    calls = _invocations(README.read_text())
    assert ["report", "[--format", "table|markdown|csv|json]", "[--table", "KEY]"] in calls
    problems = sorted({p for call in calls for p in _check(parser, list(call))})
    assert not problems, "README.md names what the CLI does not have:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("words", "problem"),
    [
        (["reprot"], "no subcommand 'reprot'"),
        (["report", "--colour", "x"], "no flag --colour"),
        (["demo", "--stop-after", "ingest|everything"], "no choice ['everything']"),
        (["dafny", "check", "FILE"], "has no subcommand 'check'"),
    ],
)
def test_the_check_catches_drift(words: list[str], problem: str) -> None:
    """The cheapest drift (a renamed command, flag or choice) fails the check above."""
    assert any(problem in p for p in _check(build_parser(), words))


def test_path_and_target_checks_catch_drift() -> None:
    assert _exists("tests/analysis/templates/") and _exists("analysis/rollout/loop.py")
    assert not _exists("tests/analysis/templates/test_no_such_template.py")
    assert not _exists("teacher/loop.py")  # the README's own drift, fixed in issue 29
    targets = _make_targets()
    assert {"cluster-up", "cluster-clean", "tiny-model"} <= targets
    assert "cluster-upp" not in targets
