"""Rule catalog and bundled corpora, checked with real ast-grep in the jail."""

from __future__ import annotations

from pathlib import Path

import pytest
from refactor_support import SMALL_RULES, refactor_config

from verilearn_assets.refactor.sources.catalog import load_corpus, load_rules
from verilearn_assets.refactor.sources.partition import generate_tasks
from verilearn_assets.refactor.verify.runner import (
    TestSpec,
    apply_action,
    cleanup,
    prepare_workspace,
    run_tests,
)

RULES = load_rules()


def test_catalog_has_the_issue_rules() -> None:
    ids = {r.id for r in RULES}
    assert {"optional-to-union", "print-to-logging", "percent-format-to-fstring"} <= ids
    assert {"dict-call-to-literal", "any-all-generator", "assert-equal-to-assert"} <= ids
    assert len(ids) >= 8


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_fixes_its_positive_and_spares_its_negative(rule, tmp_path: Path) -> None:
    config = refactor_config("bwrap", tmp_path)
    ws = prepare_workspace(
        f"ex-{rule.id}",
        {"pos.py": rule.examples.positive, "neg.py": rule.examples.negative},
        config,
    )
    try:
        result = apply_action(ws, {"kind": "rule", "rule": rule.rule})
        assert result.status == "ok", result
        assert result.files_changed == ["pos.py"]  # the negative example is untouched
        assert (ws.tree / "pos.py").read_text() == rule.examples.fixed
    finally:
        cleanup(ws)


def test_corpora_are_split_by_repository_and_their_tests_pass(tmp_path: Path) -> None:
    repos = load_corpus()
    assert len(repos) >= 3
    assert len({r.name for r in repos}) == len(repos)
    assert {r.split for r in repos} == {"train", "dev", "test"}
    config = refactor_config("bwrap", tmp_path)
    for repo in repos:
        assert repo.licence
        ws = prepare_workspace(f"corpus-{repo.name}", repo.path, config)
        try:
            result = run_tests(ws, TestSpec(argv=list(repo.test_command)))  # its language's
            least = 4 if repo.language == "python" else 1  # go counts packages
            assert result.status == "passed" and result.passed >= least, (repo.name, result)
        finally:
            cleanup(ws)


def test_generated_tasks_have_executed_targets(small_tasks, tmp_path: Path) -> None:
    template, procedural = small_tasks["template"], small_tasks["procedural"]
    repos = [r for r in load_corpus() if r.name == "pathconf"]
    rules = [r for r in RULES if r.id in SMALL_RULES]
    assert {t.rules[0] for t in template} == set(SMALL_RULES)
    assert all(t.status == "accepted" and t.source == "template" for t in template)
    pairs = [t for t in procedural if len(t.rules) == 2]
    renames = [t for t in procedural if t.rules[0].startswith("rename-")]
    in_function = [t for t in procedural if "@" in t.rules[0]]
    single_file = [t for t in procedural if len(t.rules) == 1 and t not in renames + in_function]
    assert len(pairs) == 2 and single_file  # max_pairs_per_repo=2 of the three possible
    assert len(renames) == len(in_function) == 2  # the caps the fixture sets
    for task in single_file + in_function:
        assert len(task.files) == 1 and task.reference_actions[0]["paths"] == task.files
    whole = {t.rules[0]: t for t in template}
    for task in in_function:  # strictly less than the same rule on the same file
        rule_id, function = task.rules[0].split("@")
        assert f"function {function} of {task.files[0]}" in task.instruction
        narrower = _changed_lines(task.target_diff)
        assert narrower < _changed_lines(whole[rule_id].target_diff)
        assert all(_in_function(task.files[0], line, function) for _, line in narrower)
    for task in renames:  # the definition and its uses in the package and the tests
        old = task.rules[0].removeprefix("rename-")
        assert task.status == "accepted" and f"Rename the function {old} to" in task.instruction
        assert f"+def {old}_v2(" in task.target_diff and f"-def {old}(" in task.target_diff
        assert any(f.startswith("tests/") for f in task.files), task.files
    for task in template + procedural:
        assert task.split == repos[0].split and task.repo == "pathconf"
        assert task.target_diff.startswith("--- a/") and task.files
        assert "$" not in task.instruction and "rule" not in task.instruction.lower()
        assert len(task.step_trees) == task.difficulty.steps
        assert task.step_trees[-1] == task.target_tree
        assert task.difficulty.matches >= task.difficulty.files_touched
    # ids and targets are reproducible: the same candidate run again gives the same task
    config = refactor_config("bwrap", tmp_path)
    again = generate_tasks("template", repos[0].split, config, repos, rules[:1])
    first = next(t for t in template if t.rules == [rules[0].id])
    assert (again[0].id, again[0].target_diff) == (first.id, first.target_diff)
    assert generate_tasks("llm", "train", config, repos, rules) == []


def _changed_lines(diff: str) -> set[tuple[str, int]]:
    """(file, old line number) of every line a unified diff removes."""
    out, path, line = set(), "", 0
    for text in diff.splitlines():
        if text.startswith("--- a/"):
            path = text[6:]
        elif text.startswith("@@"):
            line = int(text.split()[1].split(",")[0][1:])
        elif text.startswith("-"):
            out.add((path, line))
            line += 1
        elif not text.startswith("+"):
            line += 1
    return out


def _in_function(path: str, line: int, name: str) -> bool:
    import ast

    repo = next(r for r in load_corpus() if r.name == "pathconf")
    tree = ast.parse((repo.path / path).read_text())
    return any(
        isinstance(n, ast.FunctionDef) and n.name == name and n.lineno <= line <= n.end_lineno
        for n in ast.walk(tree)
    )


def test_rename_targets_skip_tests_private_and_module_names(tmp_path: Path) -> None:
    from verilearn_assets.refactor.sources.catalog import Repo
    from verilearn_assets.refactor.sources.procedural import rename_targets

    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg" / "util.py").write_text(
        "def util():\n    pass\n\ndef _hidden():\n    pass\n\nclass Box:\n    def inner(self):\n"
        "        pass\n\ndef twice():\n    pass\n"
    )
    (tmp_path / "pkg" / "other.py").write_text(
        "def twice():\n    pass\n\nasync def fetch():\n    pass\n"
    )
    (tmp_path / "tests" / "test_util.py").write_text("def helper():\n    pass\n")
    repo = Repo(name="r", path=tmp_path, split="train", licence="MIT")
    assert [t[:3] for t in rename_targets(repo)] == [
        ("Box", "BoxV2", "class"),
        ("fetch", "fetch_v2", "function"),
    ]


def _corpus_yaml(directory: Path, entry: dict) -> None:
    """The repo's `datasets.yaml` in `directory`, its `corpora:` just `packed: entry`."""
    import yaml

    shipped = Path(__file__).resolve().parents[2] / "configs" / "datasets.yaml"
    data = {**yaml.safe_load(shipped.read_text()), "corpora": {"packed": entry}}
    (directory / "datasets.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def test_archive_repo_is_pinned_extracted_once_and_usable(tmp_path: Path) -> None:
    import hashlib
    import tarfile

    from verilearn_assets.core.config import ConfigError

    source = next(r.path for r in load_corpus() if r.name == "pathconf")
    archive = tmp_path / "pathconf.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(
            source, arcname="pathconf-1.0", filter=lambda m: None if "__pycache__" in m.name else m
        )
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    entry = {
        "split": "dev",
        "licence": "MIT",
        "archive": {"path": str(archive), "sha256": digest, "subdir": "pathconf-1.0"},
    }  # noqa: E501
    _corpus_yaml(catalog, entry)
    (repo,) = load_corpus(catalog, home=tmp_path / "home")
    assert repo.split == "dev" and (repo.path / "pathconf" / "loader.py").is_file()
    again = load_corpus(catalog, home=tmp_path / "home")[0]
    assert again.path == repo.path  # extracted once, found again
    config = refactor_config("bwrap", tmp_path)
    ws = prepare_workspace("packed", repo.path, config)
    try:
        assert run_tests(ws).status == "passed"
    finally:
        cleanup(ws)
    _corpus_yaml(catalog, {**entry, "archive": {**entry["archive"], "sha256": "0" * 64}})
    with pytest.raises(ConfigError, match=r"datasets\.yaml: corpora\.packed\.archive\.sha256"):
        load_corpus(catalog, home=tmp_path / "home2")
    _corpus_yaml(catalog, {**entry, "path": str(source)})
    with pytest.raises(ConfigError, match=r"'corpora\.packed\.archive'.*path is set too"):
        load_corpus(catalog, home=tmp_path / "home3")
