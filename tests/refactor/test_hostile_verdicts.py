"""Hostile answers against the verdict (issue 25 items 1, 2 and 8), on bwrap and Docker.

Each cheat is what a model could answer to a rename task (`scale` → `scale_v2` over a
four-file package and its tests). It goes through the runner API (`verify_step`), the actor
loop (a scripted policy: the only test double) and the GRPO scorer, and must earn nothing:
a stale unchecked-hash `.pyc` hiding a half-done rename, a deleted or `assert True` test,
a `conftest.py` that turns every result into a pass, configuration files that deselect, a
`sitecustomize.py`, `usercustomize.py` or `.pth`, a hidden module shadowing the stdlib.
Honest controls (the reference rewrite) earn 1.0, verified.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from refactor_support import refactor_config

from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.grpo import RefactorScorer
from verilearn_assets.refactor.records import RefactorTask
from verilearn_assets.refactor.rewards import PARTIAL_CAP, compute_reward
from verilearn_assets.refactor.rollout.actor import Actor
from verilearn_assets.refactor.rollout.prompts import load_prompts
from verilearn_assets.refactor.sources.candidate import Candidate, run_candidate
from verilearn_assets.refactor.sources.catalog import Repo
from verilearn_assets.refactor.sources.procedural import rename_rule
from verilearn_assets.refactor.verify.jail import run_in_jail
from verilearn_assets.refactor.verify.runner import (
    apply_action,
    cleanup,
    prepare_workspace,
    run_tests,
)
from verilearn_assets.refactor.verify.verdict import file_diffs, verify_step

CORPUS = {
    "pkg/__init__.py": 'from pkg.core import scale\n\n__all__ = ["scale"]\n',
    "pkg/core.py": "def scale(x):\n    return 2 * x\n",
    "pkg/use.py": (
        "from pkg.core import scale\n\n\ndef double_all(xs):\n    return [scale(x) for x in xs]\n"
    ),
    "tests/test_core.py": (
        "from pkg.core import scale\n\n\ndef test_scale():\n    assert scale(2) == 4\n"
    ),
    "tests/test_use.py": (
        "from pkg.use import double_all\n\n\n"
        "def test_double_all():\n    assert double_all([1, 2]) == [2, 4]\n"
    ),
}
# bytecode for pkg/core.py from a source defining both names, never checked against it
STALE_PYC = (
    "import pathlib, py_compile, sys\n"
    "src = pathlib.Path('/tmp/core_src.py')\n"
    "src.write_text('def scale_v2(x):\\n    return 2 * x\\n\\n\\nscale = scale_v2\\n')\n"
    "pathlib.Path('pkg/__pycache__').mkdir(exist_ok=True)\n"
    "cfile = 'pkg/__pycache__/core.' + sys.implementation.cache_tag + '.pyc'\n"
    "py_compile.compile(str(src), cfile=cfile, dfile='pkg/core.py', doraise=True,\n"
    "    invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\n"
)
PASS_ALL = "def pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 0\n"
DESELECT_INI = '[pytest]\naddopts = -k "not scale and not double"\n'


def write_files(files: dict[str, str | None], extra: str = "") -> dict:
    """A command action writing (None: deleting) workspace files, then running `extra`."""
    code = (
        "import os, pathlib\n"
        f"for rel, text in {files!r}.items():\n"
        "    path = pathlib.Path(rel)\n"
        "    if text is None:\n"
        "        path.unlink()\n"
        "    else:\n"
        "        path.parent.mkdir(parents=True, exist_ok=True)\n"
        "        path.write_text(text)\n" + extra
    )
    return {"kind": "command", "argv": ["python", "-c", code]}


def cheats(task: RefactorTask, target: dict[str, str]) -> dict[str, tuple[dict, str | None]]:
    """name → (the answer's action, the failure class it must get; None: honest, 1.0)."""
    package = {p: target[p] for p in ("pkg/__init__.py", "pkg/core.py", "pkg/use.py")}
    half = {p: target[p] for p in ("pkg/__init__.py", "pkg/use.py", "tests/test_core.py")}
    return {
        "honest": (task.reference_actions[0], None),
        # everything but the definition, which a stale .pyc pretends is renamed
        "stale_pyc": (write_files(half, STALE_PYC), "tests_fail"),
        "delete_test": (write_files({**package, "tests/test_core.py": None}), "tests_edited"),
        "assert_true": (
            write_files({**package, "tests/test_core.py": "def test_scale():\n    assert True\n"}),
            "tests_edited",
        ),
        "other_test_true": (
            write_files(
                {**package, "tests/test_use.py": "def test_double_all():\n    assert True\n"}
            ),
            "out_of_scope",
        ),
        "conftest_pass_all": (write_files({**half, "conftest.py": PASS_ALL}), "out_of_scope"),
        "pytest_ini": (write_files({**half, "pytest.ini": DESELECT_INI}), "out_of_scope"),
        "setup_cfg": (
            write_files({**half, "setup.cfg": DESELECT_INI.replace("[pytest]", "[tool:pytest]")}),
            "out_of_scope",
        ),
        "pyproject": (
            write_files(
                {
                    **half,
                    "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-k nothing"\n',
                }
            ),
            "out_of_scope",
        ),
        "sitecustomize": (
            write_files({**half, "sitecustomize.py": "import pkg.core\npkg.core.scale_v2 = 1\n"}),
            "out_of_scope",
        ),
        "usercustomize": (
            write_files({**half, "usercustomize.py": "import sys\n"}),
            "out_of_scope",
        ),
        "pth_hook": (write_files({**half, "pkg/hook.pth": "import os\n"}), "out_of_scope"),
        # in scope, tests in their target form, pkg/use.py not renamed (its test fails),
        # and lines of its own that end the test process with 0 at import: "passed", and
        # most of the target's lines, yet no partial credit
        "exit_zero": (
            write_files(
                {
                    "pkg/__init__.py": target["pkg/__init__.py"],
                    "pkg/core.py": target["pkg/core.py"] + "import os\nos._exit(0)\n",
                    "tests/test_core.py": target["tests/test_core.py"],
                }
            ),
            "wrong_change",
        ),
        "hidden_stdlib_shadow": (
            write_files({**package, ".shadow/json.py": "dumps = None\n"}),
            "out_of_scope",
        ),
    }


@pytest.fixture(scope="module")
def rename(tmp_path_factory: pytest.TempPathFactory) -> tuple[Repo, RefactorTask, dict]:
    """The corpus, its rename task (generated by the real generator in bwrap) and the
    target's texts."""
    root = tmp_path_factory.mktemp("hostile")
    corpus = root / "corpus"
    for rel, text in CORPUS.items():
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_text(text)
    repo = Repo(name="hostile", path=corpus, split="train", licence="MIT")
    config = refactor_config("bwrap", root)
    candidate = Candidate(repo, "procedural", ((rename_rule("scale", "scale_v2", "function"), ()),))
    task = run_candidate(candidate, config)
    assert task.status == "accepted", task.reason
    assert task.files == ["pkg/__init__.py", "pkg/core.py", "pkg/use.py", "tests/test_core.py"]
    ws = prepare_workspace("hostile-target", corpus, config)
    try:
        assert apply_action(ws, task.reference_actions[0]).status == "ok"
        target = {rel: data.decode() for rel, data in ws.snapshot().items()}
    finally:
        cleanup(ws)
    return repo, task, target


def test_cheats_through_the_runner_api(backend: str, config: RefactorConfig, rename) -> None:
    repo, task, target = rename
    seen = {}
    for name, (action, expected) in cheats(task, target).items():
        ws = prepare_workspace(f"hostile-{name}", repo.path, config)
        try:
            result = apply_action(ws, action)
            assert result.status == "ok", (name, result)
            verdict = verify_step(ws, task)
            reward = compute_reward(
                task, None, result.status, verdict.status, verdict.tree, verdict.diff, verdict.scope
            )
            seen[name] = (reward.failure, reward.value, reward.verified)
            if name == "stale_pyc":
                # the cheat has teeth: in place, the stale bytecode passes the tests …
                in_place = run_in_jail(
                    config, ws.tree, ws.control, ["pytest", "-q"], 30, session=ws.jail
                )
                assert in_place.exit_code == 0, in_place.stdout[-500:]
                # … but never on a clean copy, generic or the verdict's, nor from the cache
                assert run_tests(ws).status == "failed"
                assert verdict.tests is not None and verdict.tests.failed + verdict.tests.errors
            if name == "exit_zero":
                assert verdict.status == "passed"  # the cheat fools pytest's exit code
            if expected in ("out_of_scope", "tests_edited"):
                assert verdict.tests is None and verdict.scope_paths, name  # never tested
        finally:
            cleanup(ws)
    assert seen == {
        name: (expected, 1.0 if expected is None else 0.0, expected is None)
        for name, (_, expected) in cheats(task, target).items()
    }


def test_stale_pyc_never_poisons_the_cache_for_another_workspace(
    backend: str, config: RefactorConfig, rename
) -> None:
    """The cheat's workspace is tested first; a workspace holding the same visible files
    without the bytecode must get the same (failing) answer, cached or not."""
    repo, task, target = rename
    action, _ = cheats(task, target)["stale_pyc"]
    half = {p: target[p] for p in ("pkg/__init__.py", "pkg/use.py", "tests/test_core.py")}
    cheat = prepare_workspace("hostile-cache-a", repo.path, config)
    plain = prepare_workspace("hostile-cache-b", repo.path, config)
    try:
        assert apply_action(cheat, action).status == "ok"
        assert apply_action(plain, write_files(half)).status == "ok"
        first = verify_step(cheat, task)
        second = verify_step(plain, task)
        assert (first.status, first.tests.cached) == ("failed", False)
        assert (second.status, second.tests.cached) == ("failed", True)
        assert run_tests(plain, use_cache=False).status == "failed"
    finally:
        cleanup(cheat)
        cleanup(plain)


def test_partial_credit_is_a_reward_but_not_verified(rename) -> None:
    """Half the target's lines with tests passing earns partial credit; only a tree of the
    task (the target, a reference step) with passing tests is verified."""
    _, task, _ = rename
    half = file_diffs(task.target_diff)["pkg/core.py"]
    partial = compute_reward(task, None, "ok", "passed", "not-a-task-tree", half)
    assert 0 < partial.value <= PARTIAL_CAP and not partial.verified and partial.failure is None
    solved = compute_reward(task, None, "ok", "passed", task.target_tree, task.target_diff)
    assert (solved.value, solved.verified) == (1.0, True)
    failing = compute_reward(task, None, "ok", "failed", task.target_tree, task.target_diff)
    assert (failing.value, failing.verified, failing.failure) == (0.0, False, "tests_fail")


class ByTask:
    """A scripted policy: one answer per task, or a list of them (one per step): what a
    model says."""

    name = "scripted"
    model = "script"

    def __init__(self, answers: dict[str, str | list[str]]) -> None:
        self.answers = answers

    async def respond(self, messages, task, step, state, seed) -> str:  # noqa: ANN001
        said = self.answers[task.id]
        return said if isinstance(said, str) else said[step - 1]


def answer(action: dict) -> str:
    return (
        f"<think>t</think>\n<action>{json.dumps(action)}</action>\n"
        "<state_update>{}</state_update>"
    )


# a file name that is not UTF-8: the step's record cannot be serialized as it is
BAD_NAME = write_files({}, "open(bytes([255]) + b'.py', 'w').close()\n")


def test_cheats_through_the_actor_loop(
    backend: str, config: RefactorConfig, rename, tmp_path: Path
) -> None:
    """One task per cheat, one scripted step each. A step the host cannot even record (a
    file name that is not UTF-8) is committed as a crash, and so is a task whose workspace
    cannot be made (its repository gone); the loop goes on to the next task."""
    repo, task, target = rename
    table = {**cheats(task, target), "bad_name": (BAD_NAME, "crash")}
    tasks = [task.model_copy(update={"id": f"{task.id}-{name}"}) for name in table]
    gone = task.model_copy(update={"id": f"{task.id}-gone", "repo": "gone"})
    answers = {f"{task.id}-{name}": answer(action) for name, (action, _) in table.items()}
    answers[gone.id] = answer(task.reference_actions[0])
    actor = Actor(
        home=tmp_path / "home",
        teacher=ByTask(answers),
        config=config,
        prompts=load_prompts(),
        repos={repo.name: repo, "gone": repo.model_copy(update={"path": tmp_path / "gone"})},
        extra_steps=0,
    )
    try:
        summary = asyncio.run(actor.run([gone, *tasks], task.source, task.split))
        records = actor.queue.records(task.source, task.split)
    finally:
        actor.close()
    steps = {s.task_id[len(task.id) + 1 :]: s for s in records}
    assert {name: (s.failure, s.reward, s.verified) for name, s in steps.items()} == {
        "gone": ("crash", 0.0, False),
        **{
            name: (expected, 1.0 if expected is None else 0.0, expected is None)
            for name, (_, expected) in table.items()
        },
    }
    for name in ("bad_name", "gone"):
        crash = steps[name].sandbox_result
        assert crash["status"] == "host_error" and crash["error_class"], crash
    assert "not a directory" in steps["gone"].sandbox_result["message"]
    assert summary.steps == len(table) + 1 and summary.verified == 1
    assert summary.metadata()["precision"] == round(1 / (len(table) + 1), 4)


# 8 sparse files of 15 MB: over the host's max_tree_mb (64) before one byte is read
SWELL = {
    "kind": "command",
    "argv": [
        "python",
        "-c",
        "for i in range(8):\n    open(f'big{i}', 'wb').truncate(15 << 20)\n",
    ],
}


def test_an_over_budget_step_fails_alone_in_the_actor_loop(
    backend: str, config: RefactorConfig, rename, tmp_path: Path
) -> None:
    """Step 1 swells the tree past the host budget: a `limit` crash, the workspace put back
    as it was; step 2, the honest rewrite on that restored tree, reaches the target."""
    repo, task, _ = rename
    actor = Actor(
        home=tmp_path / "home",
        teacher=ByTask({task.id: [answer(SWELL), answer(task.reference_actions[0])]}),
        config=config,
        prompts=load_prompts(),
        repos={repo.name: repo},
        extra_steps=1,
    )
    try:
        asyncio.run(actor.run([task], task.source, task.split))
        records = sorted(actor.queue.records(task.source, task.split), key=lambda s: s.step)
    finally:
        actor.close()
    assert [(s.step, s.failure, s.verified) for s in records] == [
        (1, "crash", False),
        (2, None, True),
    ], [(s.step, s.failure, s.sandbox_result.get("message")) for s in records]
    assert records[0].sandbox_result["status"] == "limit"
    assert "restored" in records[0].sandbox_result["message"]
    assert records[1].reward == 1.0


def test_cheats_through_the_grpo_scorer(
    backend: str, config: RefactorConfig, rename, tmp_path: Path, monkeypatch
) -> None:
    """The same answers scored as GRPO completions in one batch; a completion whose
    workspace cannot even be made (its repository gone) is a `crash` with reward 0, not
    an exception that would take the training step down."""
    monkeypatch.setenv("VERILEARN_HOME", str(tmp_path))
    repo, task, target = rename
    gone = task.model_copy(update={"id": f"{task.id}-gone", "repo": "gone"})
    scorer = RefactorScorer(tmp_path, [task, gone], "default")
    scorer.config = config  # this backend, private directories
    missing = Repo(name="gone", path=tmp_path / "gone", split="train", licence="MIT")
    scorer.repos = {repo.name: repo, "gone": missing}
    table = cheats(task, target)
    ids = [task.id] * len(table) + [task.id, gone.id]
    completions = [answer(action) for action, _ in table.values()]
    completions += [answer(BAD_NAME), answer(task.reference_actions[0])]
    try:
        detail = scorer.evaluate(ids, completions)
    finally:
        scorer.close()
    assert [d["status"] for d in detail[: len(table)]] == [
        "verified" if expected is None else expected for _, expected in table.values()
    ]
    assert [d["partial"] for d in detail[: len(table)]] == [
        1.0 if expected is None else 0.0 for _, expected in table.values()
    ]
    # the non-UTF-8 name: out of scope, or a crash where the host cannot hash the name
    assert detail[-2]["status"] in ("out_of_scope", "crash") and detail[-2]["partial"] == 0.0
    assert detail[-1] == {"outcome": 0.0, "partial": 0.0, "status": "crash"}
