"""Real repositories as refactor corpora (`refactor/sources/repos/`): the baseline taken twice
in the jail before any change (flaky, failing, erroring, skipped and missing-dependency tests told
apart; tasks test only the stable passing subset), and a published package end to end:
fetched by pip, baseline, sites and tasks mined, profile in the lake and the mart, a
scripted policy's steps judged with the narrowed tests, which pass before and after.

The package is toolz 0.12.1 from the machine's index (CI has it); where the index is
unreachable, the test builds a local source distribution of its own and serves it through
pip's own settings (a local folder as the index), so the same path runs offline.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
import yaml
from refactor_support import refactor_config, write_tasks, write_tree

from verilearn_assets.core import lake
from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.records import RefactorTask, TrajectoryStep
from verilearn_assets.refactor.rollout.actor import Actor
from verilearn_assets.refactor.rollout.prompts import load_prompts
from verilearn_assets.refactor.sources.catalog import Repo, load_rules, read_corpus
from verilearn_assets.refactor.sources.partition import generate_tasks
from verilearn_assets.refactor.sources.repos.baseline import detect_command, take_baseline
from verilearn_assets.refactor.sources.repos.mining import profile_repo
from verilearn_assets.refactor.sources.repos.records import PROFILE_LAKE, RepoProfileRow
from verilearn_assets.refactor.verify.clean_copy import is_test_path
from verilearn_assets.refactor.verify.runner import (
    TestSpec,
    apply_action,
    cleanup,
    prepare_workspace,
    run_tests,
)
from verilearn_assets.refactor.verify.verdict import verify_step

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))
from test_corpora_package import make_sdist, write_catalog  # noqa: E402

TOOLZ_SHA256 = "ecca342664893f177a13dac0e6b41cbd8ac25a358e5f215316d43e2100224f4d"
N_RANDOM = 16  # each fails half the time: P(none flaky over two runs) = 2**-16

PYTEST_REPO = {
    "mini/__init__.py": "",
    "mini/core.py": "def double(x):\n    return 2 * x\n",
    "tests/test_core.py": (
        "import pytest\n"
        "from mini.core import double\n\n\n"
        "def test_double():\n    assert double(2) == 4\n\n\n"
        "def test_double_zero():\n    assert double(0) == 0\n\n\n"
        "def test_wrong():\n    assert double(2) == 5\n\n\n"
        "def test_skipped():\n    pytest.skip('not here')\n\n\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('fixture breaks')\n\n\n"
        "def test_fixture_error(broken):\n    pass\n\n\n"
        "def test_optional_inside():\n    import vl_not_installed_inside  # noqa: F401\n"
    ),
    "tests/test_stable.py": (
        "from mini.core import double\n\n\ndef test_one():\n    assert double(1) == 2\n"
    ),
    "tests/test_random.py": (
        "import random\n\nimport pytest\n\n\n"
        f"@pytest.mark.parametrize('i', range({N_RANDOM}))\n"
        "def test_coin(i):\n    assert random.random() < 0.5\n"
    ),
    "tests/test_optional.py": (
        "import vl_not_installed_at_import  # noqa: F401\n\n\ndef test_x():\n    pass\n"
    ),
}

UNITTEST_REPO = {
    "pkg/__init__.py": "",
    "pkg/calc.py": "def add(a, b):\n    return a + b\n",
    "tests/__init__.py": "",
    "tests/test_calc.py": (
        "import unittest\n\nfrom pkg.calc import add\n\n\n"
        "class Add(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n\n"
        "    def test_add_neg(self):\n        self.assertEqual(add(-1, 1), 0)\n\n"
        "    def test_wrong(self):\n        self.assertEqual(add(1, 1), 3)\n\n"
        "    def test_needs(self):\n        import vl_missing_dep  # noqa: F401\n"
    ),
    "tests/test_opt.py": "import vl_missing_at_import  # noqa: F401\n",
}


def selected(narrowed: list[str], statuses: dict[str, str]) -> set[str]:
    """The test ids a narrowed pytest command runs (a file: every test of it)."""
    out: set[str] = set()
    for arg in narrowed[2:]:
        out |= {t for t in statuses if t == arg or t.startswith(arg + "::")}
    return out


def test_pytest_baseline_tells_flaky_failing_and_missing_dependencies_apart(
    tmp_path: Path,
) -> None:
    root = write_tree(tmp_path / "repo", PYTEST_REPO)
    config = refactor_config("bwrap", tmp_path)
    base = take_baseline("mini", root, config)
    assert base.runner == "pytest" and base.command == ["pytest"] and not base.skipped
    status = {t.test_id: t.status for t in base.tests}
    core = "tests/test_core.py::"
    assert status[core + "test_double"] == status[core + "test_double_zero"] == "passed"
    assert status["tests/test_stable.py::test_one"] == "passed"
    assert status[core + "test_wrong"] == "failed"
    assert status[core + "test_skipped"] == "skipped"
    assert status[core + "test_fixture_error"] == "error"
    assert status[core + "test_optional_inside"] == "missing_dependency"
    assert status["tests/test_optional.py"] == "missing_dependency"
    missing = next(t for t in base.tests if t.test_id == "tests/test_optional.py")
    assert "vl_not_installed_at_import" in missing.detail
    coins = [t for t in base.tests if t.test_id.startswith("tests/test_random.py::")]
    assert len(coins) == N_RANDOM
    for t in coins:  # flaky exactly when the two runs differ
        assert len(t.runs) == 2
        assert (t.status == "flaky") == (t.runs[0] != t.runs[1])
        assert t.status == "flaky" or t.status == t.runs[0]
    assert any(t.status == "flaky" for t in coins)
    # the narrowed command runs exactly the tests that passed twice: a whole file where
    # every test of it did, else the ids
    assert base.narrowed is not None and base.narrowed[:2] == ["pytest", "-q"]
    assert "tests/test_stable.py" in base.narrowed
    assert selected(base.narrowed, status) == {t for t, s in status.items() if s == "passed"}


def test_unittest_repo_is_detected_and_its_narrowed_command_passes(
    tmp_path: Path, config: RefactorConfig
) -> None:
    """On both jails (the `config` fixture: bwrap and Docker)."""
    root = write_tree(tmp_path / "repo", UNITTEST_REPO)
    base = take_baseline("calc", root, config)
    assert base.runner == "unittest", base
    assert base.command == ["python", "-m", "unittest", "discover"]
    status = {t.test_id: t.status for t in base.tests}
    assert status == {
        "tests.test_calc.Add.test_add": "passed",
        "tests.test_calc.Add.test_add_neg": "passed",
        "tests.test_calc.Add.test_wrong": "failed",
        "tests.test_calc.Add.test_needs": "missing_dependency",
        "tests.test_opt": "missing_dependency",
    }
    assert base.narrowed == [
        "python",
        "-m",
        "unittest",
        "tests.test_calc.Add.test_add",
        "tests.test_calc.Add.test_add_neg",
    ]
    ws = prepare_workspace("calc-narrowed", root, config)
    try:
        assert run_tests(ws, TestSpec(argv=base.narrowed), use_cache=False).status == "passed"
        assert run_tests(ws, TestSpec(argv=base.command), use_cache=False).status == "failed"
    finally:
        cleanup(ws)


def test_repository_without_a_stable_passing_test_is_skipped_with_the_reason(
    tmp_path: Path,
) -> None:
    files = {"m/__init__.py": "", "tests/test_m.py": "def test_no():\n    assert False\n"}
    root = write_tree(tmp_path / "repo", {**files, "pytest.ini": "[pytest]\n"})
    base = take_baseline("nothing", root, refactor_config("bwrap", tmp_path))
    assert base.narrowed is None
    assert base.skipped.startswith("no test passes stably in 2 runs") and "failed" in base.skipped
    # detection alone (no jail): a package.json is node's, a repository without tests none
    (tmp_path / "js").mkdir()
    (tmp_path / "js" / "package.json").write_text("{}")
    assert detect_command(tmp_path / "js") == ("node", ["node", "--test"])
    assert detect_command(write_tree(tmp_path / "none", {"a.py": "x = 1\n"})) == (None, [])


# --- a published package, end to end -----------------------------------------------------

FALLBACK_FILES = {  # the offline stand-in: a package of its own with tests and rule sites
    "fallbackpkg/__init__.py": "",
    "fallbackpkg/text.py": (
        "def first_word(text):\n"
        "    words = text.split()\n"
        "    if words:\n"
        "        return words[0]\n"
        "    return None\n\n\n"
        "def counts(text):\n"
        "    out = dict()\n"
        "    for w in text.split():\n"
        "        out[w] = out.get(w, 0) + 1\n"
        "    return out\n"
    ),
    "tests/test_text.py": (
        "import pytest\n\nfrom fallbackpkg.text import counts, first_word\n\n\n"
        "def test_first_word():\n    assert first_word('a b') == 'a'\n\n\n"
        "def test_first_word_empty():\n    assert first_word('') is None\n\n\n"
        "def test_counts():\n    assert counts('a b a') == {'a': 2, 'b': 1}\n\n\n"
        "def test_not_yet():\n    pytest.fail('known failure upstream')\n"
    ),
}


def ingest_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """toolz from the machine's index, or (unreachable) a local sdist served by pip."""
    monkeypatch.setenv("VERILEARN_PACKAGE_CACHE", str(tmp_path / "package-cache"))
    entry = {"manager": "pip", "name": "toolz", "version": "0.12.1", "sha256": TOOLZ_SHA256}
    corpora = {"realpkg": {"split": "dev", "licence": "BSD-3-Clause", "package": entry}}
    catalog = write_catalog(tmp_path / "catalog", corpora)
    loaded = read_corpus(catalog, home=tmp_path / "home")
    if loaded.failures:  # the index is unreachable here: the local-archive fallback
        assert "corpora.realpkg.package.version" in loaded.failures[0].error
        index = tmp_path / "index"
        monkeypatch.setenv("PIP_FIND_LINKS", str(index))
        monkeypatch.setenv("PIP_NO_INDEX", "1")
        monkeypatch.setenv("PIP_NO_BUILD_ISOLATION", "0")  # pip's inverted switch
        digest = make_sdist(index, "fallbackpkg", "1.0.0", FALLBACK_FILES)
        entry = {"manager": "pip", "name": "fallbackpkg", "version": "1.0.0", "sha256": digest}
        corpora["realpkg"]["package"] = entry
        catalog = write_catalog(tmp_path / "catalog", corpora)
        loaded = read_corpus(catalog, home=tmp_path / "home")
    assert not loaded.failures, loaded.failures
    (repo,) = loaded.repos
    assert repo.origin == f"package:pip:{entry['name']}=={entry['version']}"
    return repo


def test_published_package_gives_tasks_whose_tests_pass_before_and_after(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp = home.parent
    repo = ingest_package(tmp, monkeypatch)
    config = refactor_config("bwrap", tmp)
    rules = load_rules()
    tasks = generate_tasks("template", "dev", config, repos=[repo], rules=rules)
    write_tasks(home, tasks)  # as the tasks asset does: the mart counts them
    # the profile (baseline + sites) was taken once, cached and written to the lake
    profile = profile_repo(repo, rules, config)
    base = profile.baseline
    assert base.narrowed is not None and not base.skipped
    assert base.counts().get("passed", 0) >= 3
    assert all(len(t.runs) == 2 for t in base.tests)
    rows = lake.read_records(
        PROFILE_LAKE, RepoProfileRow, lake.lake_root(home), source="template", split="dev"
    )
    by_measure = {(r.measure, r.key, r.scope): r.n for r in rows}
    assert by_measure[("files", "", "")] == profile.files > 0
    assert by_measure[("tests", "passed", "")] == base.counts()["passed"]
    per_rule = profile.sites_per_rule()
    assert per_rule and all(n > 0 for n in per_rule.values())
    assert sum(n for (m, _, _), n in by_measure.items() if m == "sites") == sum(per_rule.values())
    accepted = [t for t in tasks if t.status == "accepted"]
    assert accepted, [(t.rules, t.reason) for t in tasks]
    assert {r for t in accepted for r in t.rules} <= set(per_rule)
    assert all(t.test_command == base.narrowed for t in tasks)
    task = accepted[0]
    # before: the narrowed tests pass on the repository as fetched
    ws = prepare_workspace("realpkg-before", repo.path, config)
    try:
        before = run_tests(ws, TestSpec(argv=task.test_command), use_cache=False)
    finally:
        cleanup(ws)
    assert before.status == "passed" and before.passed == base.counts()["passed"]
    # the cheapest cheat on narrowed tests: a change in the task's own file that breaks
    # the package (every `return` gives None) must still fail them
    package_file = next(f for f in task.files if not is_test_path(f))
    broken = {"kind": "run", "pattern": "return $X", "rewrite": "return None"}
    ws = prepare_workspace("realpkg-cheat", repo.path, config)
    try:
        assert apply_action(ws, {**broken, "paths": [package_file]}).status == "ok"
        verdict = verify_step(ws, task, use_cache=False)
    finally:
        cleanup(ws)
    assert verdict.scope is None and verdict.status == "failed", verdict
    # after: a scripted policy (what a model says) applies the rule; the step is verified
    # with the narrowed tests passing, as many as before
    (step,) = drive(home, config, repo, task, [answer(task.reference_actions[0])])
    assert step.verified and step.done and step.reward == 1.0
    assert step.tests["status"] == "passed" and step.tests["passed"] == before.passed
    assert step.diff_from_start == task.target_diff
    # the mart: one row for the repository, its baseline, sites and tasks
    mart = build_mart(home)
    (row,) = [r for r in mart if r["repo"] == "realpkg"]
    assert row["tests_passed"] == base.counts()["passed"]
    assert row["tasks_accepted"] == len(accepted) and row["skipped_reason"] is None
    assert row["package_sites_per_rule"] or row["test_sites_per_rule"]


def answer(action: dict) -> str:
    return f"<think>t</think><action>{json.dumps(action)}</action><state_update>{{}}</state_update>"


class ScriptedPolicy:
    """What a model says, step by step (the only allowed test double)."""

    name = "scripted"
    model = "script"

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers

    async def respond(self, messages, task, step, state, seed) -> str:  # noqa: ANN001
        return self.answers[min(step, len(self.answers)) - 1]


def drive(
    home: Path, config: RefactorConfig, repo: Repo, task: RefactorTask, answers: list[str]
) -> list[TrajectoryStep]:
    """The actor loop over `task` with the scripted policy; its stored steps in order."""
    actor = Actor(
        home=home,
        teacher=ScriptedPolicy(answers),
        config=config,
        prompts=load_prompts(),
        repos={repo.name: repo},
        extra_steps=len(answers),
    )
    try:
        asyncio.run(actor.run([task], task.source, task.split))
    finally:
        actor.close()
    steps = lake.read_records(
        "refactor/trajectories",
        TrajectoryStep,
        lake.lake_root(home),
        source=task.source,
        split=task.split,
    )
    return sorted(steps, key=lambda s: s.step)  # type: ignore[arg-type, attr-defined]


def build_mart(home: Path) -> list[dict]:
    """Build the staging views and the repositories' mart over this home's lake."""
    import duckdb

    from verilearn_assets.core.warehouse import build_model, discover_sql_models

    wanted = ("stg_refactor_repo_profile", "stg_refactor_tasks", "mart_refactor_repos")
    models = {m.name: m for m in discover_sql_models()}
    with duckdb.connect() as con:
        for name in wanted:
            build_model(con, models[name], lake.lake_root(home))
        cur = con.execute("SELECT * FROM mart_refactor_repos")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def test_catalog_package_entry_is_pinned_and_documented() -> None:
    """The shipped catalog's real package: pinned, licensed, and its origin documented."""
    root = Path(__file__).resolve().parents[2]
    data = yaml.safe_load((root / "configs" / "datasets.yaml").read_text())
    entry = data["corpora"]["toolz"]
    assert entry["package"]["sha256"] == TOOLZ_SHA256 and entry["licence"].startswith("BSD")
    assert "package: {manager: pip | npm" in (root / "configs" / "datasets.yaml").read_text()
