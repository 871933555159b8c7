"""Refactor tasks in languages besides Python (issue 26 item 1): the bundled corpora in
JavaScript, Go, Rust, Java and C, each tested by its own runner in the bwrap jail.

Known answers on real parts: every language rule's examples through real ast-grep; each
corpus's own tests pass in the jail before any change (`test_catalog`) and after each of its
rules (the accepted template tasks: the target is the tree the jailed rule left, with its
tests passing); the catalog refuses a corpus entry with an unknown language or a test
runner the jail does not allow, naming the entry and the field; a program-teacher step
per language is verified on a clean copy with that language's runner, and its prompt shows
the code in a fence tagged with the language.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from refactor_support import refactor_config

from verilearn_assets.core.config import config_dir
from verilearn_assets.refactor.rollout.prompts import load_prompts, parse_code_view, render_messages
from verilearn_assets.refactor.rollout.teachers import program_answer
from verilearn_assets.refactor.sources.candidate import task_language
from verilearn_assets.refactor.sources.catalog import RULES_DIR, load_catalog, read_corpus
from verilearn_assets.refactor.sources.partition import generate_tasks
from verilearn_assets.refactor.verify import toolchains
from verilearn_assets.refactor.verify.jail_policy import ast_grep_binary
from verilearn_assets.refactor.verify.languages import extensions
from verilearn_assets.refactor.verify.runner import apply_action, cleanup, prepare_workspace
from verilearn_assets.refactor.verify.verdict import reached, verify_step

LANGUAGES = ("javascript", "go", "rust", "java", "c")
CORPORA = {"jsinventory": "javascript", "gotally": "go", "rustshelf": "rust",
           "javagrades": "java", "cringbuf": "c"}  # fmt: skip


def _language_rules() -> dict[str, list]:
    out: dict[str, list] = defaultdict(list)
    for rule in load_catalog():
        out[toolchains.language_of_rule(rule.rule)].append(rule)
    return out


@pytest.fixture(scope="module")
def repos() -> dict[str, object]:
    found = {r.name: r for r in read_corpus().repos if r.name in CORPORA}
    assert sorted(found) == sorted(CORPORA)
    missing = [lang for lang in LANGUAGES if lang not in toolchains.installed()]
    if missing:
        pytest.skip(f"toolchains not installed: {missing} (make refactor-toolchains)")
    return found


@pytest.fixture(scope="module")
def template_tasks(repos, tmp_path_factory: pytest.TempPathFactory) -> list:  # noqa: ANN001
    """Every language's template tasks (each rule of the language over its corpus), built
    once in the bwrap jail with the corpus's own test command."""
    config = refactor_config("bwrap", tmp_path_factory.mktemp("languages"))
    tasks = []
    for split in ("train", "dev", "test"):
        chosen = [r for r in repos.values() if r.split == split]
        tasks += generate_tasks("template", split, config, chosen)
    return tasks


def test_every_language_has_three_rules_whose_examples_hold(tmp_path: Path) -> None:
    """positive → fixed and negative untouched, with real ast-grep (one run per rule)."""
    by_language = _language_rules()
    for language in LANGUAGES:
        rules = by_language[language]
        assert len(rules) >= 3, (language, [r.id for r in rules])
        ext = extensions(language)[0]
        for rule in rules:
            where = tmp_path / rule.id
            where.mkdir()
            (where / f"pos.{ext}").write_text(rule.examples.positive)
            (where / f"neg.{ext}").write_text(rule.examples.negative)
            (where / "rule.yml").write_text(yaml.safe_dump(rule.rule, sort_keys=False))
            done = subprocess.run(
                [ast_grep_binary(), "scan", "-r", "rule.yml", "-U", f"pos.{ext}", f"neg.{ext}"],
                cwd=where,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 0, (rule.id, done.stderr)
            assert (where / f"pos.{ext}").read_text() == rule.examples.fixed, rule.id
            assert (where / f"neg.{ext}").read_text() == rule.examples.negative, rule.id


def test_corpus_entries_carry_their_language_and_test_command(repos) -> None:  # noqa: ANN001
    for name, language in CORPORA.items():
        repo = repos[name]
        assert repo.language == language
        assert repo.test_command[0] in toolchains.RUNNERS
        assert toolchains.RUNNERS[repo.test_command[0]] == language
    python = [r for r in read_corpus().repos if r.name in ("ledger", "pathconf")]
    assert python and all(r.language == "python" for r in python)
    assert all(r.test_command == ("pytest", "-q") for r in python)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("language", "klingon", "corpora.bad.language: language 'klingon' is not one"),
        ("test", ["curl", "http://example.com"], "corpora.bad.test: 'curl' is not a test runner"),
        ("language", "typescript", "corpora.bad.test: no default test command for typescript"),
    ],
)
def test_a_bad_language_or_test_runner_fails_the_entry_alone(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    data = yaml.safe_load((Path(config_dir()) / "datasets.yaml").read_text())
    data["corpora"] = {
        "ok": {"split": "train", "licence": "x", "bundled": "jsinventory", "language": "js"},
        "bad": {"split": "dev", "licence": "x", "bundled": "gotally", field: value},
    }
    (tmp_path / "datasets.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    loaded = read_corpus(tmp_path, home=tmp_path / "home")
    assert [r.name for r in loaded.repos] == ["ok"]
    assert loaded.repos[0].language == "javascript"  # an alias, made canonical
    assert loaded.repos[0].test_command == ("node", "--test")  # the language's default
    assert len(loaded.failures) == 1 and message in loaded.failures[0].error
    assert "datasets.yaml" in loaded.failures[0].error


def test_each_rule_keeps_its_corpus_tests_passing(template_tasks) -> None:  # noqa: ANN001
    """One accepted template task per rule of each language: the rule changed the package
    and the corpus's own runner passed on the result (in the jail, clean copy)."""
    by_language = _language_rules()
    accepted: dict[str, set[str]] = defaultdict(set)
    for task in template_tasks:
        assert task.status == "accepted", (task.repo, task.rules, task.reason)
        language = task_language(task)
        assert CORPORA[task.repo] == language
        assert tuple(task.test_command) == toolchains.DEFAULT_TESTS[language]
        accepted[language].add(task.rules[0])
    for language in LANGUAGES:
        assert accepted[language] == {r.id for r in by_language[language]}, language


def test_a_program_step_is_verified_per_language(template_tasks, tmp_path: Path) -> None:  # noqa: ANN001
    """Per language, the program teacher's first step on a fresh workspace: its prompt shows
    the code in a fence of the language, its <think> names the language and cites a line of
    the shown code, and the action reaches the target with the tests passing (verdict on a
    clean copy with the language's runner)."""
    config = refactor_config("bwrap", tmp_path)
    prompts = load_prompts()
    done: set[str] = set()
    for task in template_tasks:
        language = task_language(task)
        if language in done:
            continue
        repo = next(r for r in read_corpus().repos if r.name == task.repo)
        ws = prepare_workspace(f"lang-{task.id[:12]}", repo.path, config)
        try:
            messages = render_messages(prompts, task, "", 1, 2, "", tree=ws.tree)
            user = messages[-1]["content"]
            assert f"```{language}\n" in user
            view = parse_code_view(user)
            assert set(view) == set(task.files) and all(view.values())
            think, action, _ = program_answer(messages, task, 1)
            name = {"javascript": "JavaScript", "go": "Go", "rust": "Rust", "java": "Java",
                    "c": "C"}[language]  # fmt: skip
            assert f"The {name} code shows" in think
            assert any(f"{path}:" in think for path in task.files), think
            result = apply_action(ws, action)
            assert result.status == "ok", result
            verdict = verify_step(ws, task, use_cache=False)
            assert verdict.scope is None and verdict.status == "passed", verdict.tests
            assert reached(task, verdict.tree)
            done.add(language)
        finally:
            cleanup(ws)
    assert done == set(LANGUAGES)


def test_a_missing_toolchain_is_a_clear_refusal(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """A corpus whose runner is not installed here: the test run is refused, naming the
    runner, not a crash."""
    from verilearn_assets.refactor.verify.runner import TestSpec, run_tests

    installed = dict(toolchains.installed())
    installed.pop("go", None)
    monkeypatch.setattr(toolchains, "installed", lambda: installed)
    config = refactor_config("bwrap", tmp_path)
    source = Path(__file__).resolve().parents[2] / "data/refactor/corpus/gotally"
    copy = tmp_path / "gotally"
    shutil.copytree(source, copy)
    ws = prepare_workspace("no-go", copy, config)
    try:
        result = run_tests(ws, TestSpec(argv=["go", "test", "./..."]), use_cache=False)
    finally:
        cleanup(ws)
    assert result.status == "disallowed"
    assert "test runner 'go' (go) is not installed" in result.stderr


def test_rule_folders_are_named_by_language() -> None:
    for folder in RULES_DIR.iterdir():
        if folder.is_dir() and any(folder.glob("*.yml")):
            rules = [r for r in load_catalog() if Path(r.path).parent == folder]
            assert all(toolchains.language_of_rule(r.rule) == folder.name for r in rules)


def test_the_languages_mart_counts_tasks_per_language(template_tasks, tmp_path: Path) -> None:  # noqa: ANN001
    import duckdb
    from refactor_support import write_tasks

    from verilearn_assets.core import lake
    from verilearn_assets.core.warehouse import build_all

    write_tasks(tmp_path, template_tasks)
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    build_all(con, lake.lake_root(tmp_path))
    rows = con.execute(
        "SELECT language, n_tasks, n_accepted, n_repos, n_steps FROM mart_refactor_languages"
    ).fetchall()
    con.close()
    expected = defaultdict(int)
    for task in template_tasks:
        expected[task_language(task)] += 1
    assert {r[0]: r[1] for r in rows} == dict(expected)
    assert all(r[1] == r[2] and r[3] == 1 and r[4] == 0 for r in rows)  # no steps yet


def test_refactor_apply_runs_a_language_runner_as_its_test(repos, tmp_path: Path) -> None:  # noqa: ANN001
    """`verilearn refactor apply --test 'go test ./...'` (the real CLI, bwrap): the runner
    is allowed as a test command, the rule applies and Go's tests pass; `--test 'curl …'`
    is still refused."""
    import json
    import sys

    cli = str(Path(sys.executable).parent / "verilearn")
    shutil.copytree(repos["gotally"].path, tmp_path / "gotally")
    rule = RULES_DIR / "go" / "go-plus-one-to-inc.yml"
    base = [cli, "refactor", "apply", "--rule", str(rule), "--workspace", str(tmp_path / "gotally")]
    env = {**__import__("os").environ, "VERILEARN_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [*base, "--test", "go test ./..."], capture_output=True, text=True, env=env, timeout=300
    )
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert report["status"] == "ok" and report["tests"]["status"] == "passed"
    assert sorted(report["files_changed"]) == ["tally/counter.go", "tally/score.go"]
    refused = subprocess.run(
        [*base, "--test", "curl http://example.com"], capture_output=True, text=True, env=env,
        timeout=300,
    )  # fmt: skip
    assert refused.returncode == 1 and "'curl' is not allowed" in refused.stderr
