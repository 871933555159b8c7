"""Task and trajectory quality (issue 25, item 7), with real ast-grep and the bwrap jail.

Tasks: two tasks with one target keep one; a target that only touches tests is never a
task; rule pairs are drawn so every rule appears about equally; a target contradicting its
instruction (scope or rename) is rejected, and every generated task passes that check.
Trajectories: the prompt shows the code the step must change, and the program teacher's
`<think>` cites that code (lines that are in the prompt) and never a rule id.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from refactor_support import drive_actor, refactor_config

from verilearn_assets.core import lake
from verilearn_assets.refactor.family import FAMILY
from verilearn_assets.refactor.records import RefactorTask, TrajectoryStep
from verilearn_assets.refactor.rollout.prompts import (
    load_prompts,
    parse_code_view,
    removed_lines,
    render_messages,
)
from verilearn_assets.refactor.rollout.state import State, render
from verilearn_assets.refactor.rollout.teachers import ProgramTeacher
from verilearn_assets.refactor.sources.candidate import (
    Candidate,
    is_test_path,
    matching_files,
    only_tests,
    run_candidate,
)
from verilearn_assets.refactor.sources.catalog import CatalogRule, Repo, load_corpus, load_rules
from verilearn_assets.refactor.sources.plan import candidates
from verilearn_assets.refactor.sources.procedural import draw_pairs, rename_rule, scoped_to_function
from verilearn_assets.refactor.sources.quality import finalize, task_problems

CITED = re.compile(r"([\w/]+\.py):(\d+) `([^`]+)`")  # a place the teacher cites


@pytest.fixture(scope="module")
def pathconf() -> Repo:
    return next(r for r in load_corpus() if r.name == "pathconf")


@pytest.fixture(scope="module")
def rules() -> dict[str, CatalogRule]:
    return {r.id: r for r in load_rules()}


@pytest.fixture(scope="module")
def jail(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return refactor_config("bwrap", tmp_path_factory.mktemp("quality"))


def _relabel(rule: CatalogRule, instruction: str) -> CatalogRule:
    """`rule` with another instruction: a candidate whose words promise what it won't do."""
    examples = rule.examples.model_copy(update={"instruction": instruction})
    return rule.model_copy(update={"id": f"{rule.id}-lie", "examples": examples})


def test_test_paths_are_recognised() -> None:
    assert is_test_path("tests/test_loader.py") and is_test_path("pkg/tests/helpers.py")
    assert is_test_path("test_x.py") and is_test_path("pkg/x_test.py")
    assert is_test_path("conftest.py")
    assert not is_test_path("pathconf/loader.py") and not is_test_path("pathconf/testing.py")
    assert only_tests(["tests/a.py", "test_b.py"]) and not only_tests([])
    assert not only_tests(["tests/a.py", "pkg/a.py"])


def test_pairs_are_balanced_seeded_and_ordered_both_ways() -> None:
    ids = [f"rule-{c}" for c in "abcdefghijk"]
    pairs = draw_pairs(ids, 30, "0:repo")
    assert len(pairs) == len(set(pairs)) == 30
    uses = Counter(r for p in pairs for r in p)
    assert set(uses) == set(ids) and max(uses.values()) - min(uses.values()) <= 1, uses
    assert draw_pairs(ids, 30, "0:repo") == pairs  # seeded
    assert draw_pairs(ids, 30, "0:other") != pairs
    assert any(a > b for a, b in pairs) and any(a < b for a, b in pairs)  # both orders
    skipped = draw_pairs(ids, 60, "0:repo", skip=lambda a, b: "rule-a" in (a, b))
    assert all("rule-a" not in p for p in skipped) and len(skipped) == 45  # C(10, 2)


def test_the_plan_has_no_tests_only_candidate_and_balanced_pairs(jail) -> None:  # noqa: ANN001
    repos = [r for r in load_corpus() if r.name in ("pathconf", "ledger")]  # keeps it short
    rules = load_rules()
    tests_only_rules = {
        (repo.name, rule_id)
        for repo in repos
        for rule_id, scan in matching_files(repo, rules, jail).items()
        if only_tests(scan.files)
    }
    assert tests_only_rules  # the catalog has rules that only ever change tests
    per_repo: dict[str, Counter[str]] = {}
    for source in ("template", "procedural"):
        for cand in candidates(source, repos, rules, jail, jail.generation.max_pairs_per_repo):
            for rule, paths in cand.steps:
                assert not any(is_test_path(p) for p in paths), (rule.id, paths)
            if len(cand.steps) == 1 and not cand.steps[0][1]:
                assert (cand.repo.name, cand.steps[0][0].id) not in tests_only_rules
            if len(cand.steps) == 2:
                ids = [rule.id for rule, _ in cand.steps]
                assert not all((cand.repo.name, i) in tests_only_rules for i in ids)
                per_repo.setdefault(cand.repo.name, Counter()).update(ids)
    assert set(per_repo) == {r.name for r in repos}
    for name, uses in per_repo.items():
        assert max(uses.values()) - min(uses.values()) <= 2, (name, uses)


def test_same_target_keeps_one_task(pathconf: Repo, rules, jail) -> None:  # noqa: ANN001
    rule = rules["eq-none-to-is"]
    whole_file = Candidate(pathconf, "procedural", ((rule, ("pathconf/loader.py",)),))
    one_function = Candidate(
        pathconf,
        "procedural",
        ((scoped_to_function(rule, "pathconf/loader.py", "load"), ("pathconf/loader.py",)),),
    )
    a, b = run_candidate(whole_file, jail), run_candidate(one_function, jail)
    assert a.status == b.status == "accepted" and a.target_tree == b.target_tree
    kept = finalize([b, a, a], {pathconf.name: pathconf.path})
    assert [t.id for t in kept] == [b.id, a.id]  # one record per id, the order kept
    by_id = {t.id: t for t in kept}
    assert by_id[a.id].status == "accepted"  # the smaller rule of the two
    assert by_id[b.id].status == "rejected"
    assert by_id[b.id].reason == f"duplicate target of task {a.id}"


def test_a_target_that_only_touches_tests_is_rejected(pathconf: Repo, rules, jail) -> None:  # noqa: ANN001
    task = run_candidate(
        Candidate(pathconf, "template", ((rules["assert-equal-to-assert"], ()),)), jail
    )
    assert task.status == "accepted" and only_tests(task.files)  # what the old code kept
    assert task_problems(task, pathconf.path) == [
        f"target only touches tests ({', '.join(task.files)})"
    ]
    (kept,) = finalize([task], {pathconf.name: pathconf.path})
    assert kept.status == "rejected" and "only touches tests" in kept.reason


def _tiny_repo(root: Path) -> Repo:
    """A package whose function `total` shares its name with a parameter elsewhere."""
    files = {
        "pkg/__init__.py": 'from pkg.core import total\n\n__all__ = ["total"]\n',
        "pkg/core.py": "def total(xs):\n    return sum(xs)\n",
        "pkg/report.py": 'def show(total):\n    return f"sum {total}"\n',
        "tests/test_pkg.py": (
            "from pkg.core import total\nfrom pkg.report import show\n\n\n"
            "def test_total():\n    assert total([1, 2]) == 3\n    assert show(3) == 'sum 3'\n"
        ),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return Repo(name="tiny", path=root, split="dev", licence="MIT")


def test_targets_contradicting_their_instruction_are_rejected(
    pathconf: Repo,
    rules,  # noqa: ANN001
    jail,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    rule = rules["eq-none-to-is"]
    text = rule.instruction.rstrip(".")
    lies = [
        # says one file, changes every file with the shape
        Candidate(
            pathconf,
            "procedural",
            ((_relabel(rule, f"{text} (only in pathconf/loader.py)."), ()),),
        ),
        # says one function, changes the whole file
        Candidate(
            pathconf,
            "procedural",
            (
                (
                    _relabel(
                        rule,
                        f"{text}, but only in the function first_invalid of pathconf/validate.py.",
                    ),
                    ("pathconf/validate.py",),
                ),
            ),
        ),
    ]
    tiny = _tiny_repo(tmp_path / "tiny")
    rename = Candidate(tiny, "procedural", ((rename_rule("total", "total_v2", "function"), ()),))
    found = []
    for cand in [*lies, rename]:
        task = run_candidate(cand, jail)
        assert task.status == "accepted", task.reason  # tests pass: only the words are wrong
        found.append(task_problems(task, cand.repo.path))
    assert "says only in pathconf/loader.py but changes ['pathconf/validate.py']" in found[0]
    assert any(p.startswith("says only in the function first_invalid") for p in found[1])
    assert found[2] == ["renames total, but the name also binds: parameter at pkg/report.py:1"]
    kept = finalize([run_candidate(rename, jail)], {"tiny": tiny.path})
    assert kept[0].status == "rejected" and kept[0].reason == found[2][0]


def test_every_generated_task_passes_the_check(small_tasks, pathconf: Repo) -> None:  # noqa: ANN001
    tasks = [t for part in small_tasks.values() for t in part]
    accepted = [t for t in tasks if t.status == "accepted"]
    assert accepted and {t.source for t in accepted} == {"template", "procedural"}
    assert all(task_problems(t, pathconf.path) == [] for t in accepted)
    targets = Counter((t.repo, t.target_tree) for t in accepted)
    assert max(targets.values()) == 1


def test_prompts_show_the_code_to_change(small_tasks, pathconf: Repo) -> None:  # noqa: ANN001
    prompts = load_prompts()
    for task in (t for part in small_tasks.values() for t in part if t.status == "accepted"):
        for budget in (prompts.code_chars, 1200):  # whole files, then excerpts
            tight = prompts.model_copy(update={"code_chars": budget})
            user = render_messages(tight, task, render(State()), 1, 2, "", pathconf.path)[1]
            view = parse_code_view(user["content"])
            assert set(view) == set(task.files), (task.id, budget)
            shown = {line.strip() for lines in view.values() for line in lines.values()}
            todo = {line for lines in removed_lines(task.target_diff).values() for line in lines}
            if budget == prompts.code_chars:
                assert todo <= shown, (task.id, todo - shown)
            else:  # a tight budget may cut the middle, never every line to change
                assert todo & shown, task.id
    # no workspace: step 1 shows the catalogued repository (a fresh workspace is a copy of
    # it: GRPO's step-1 prompts); a later step shows nothing rather than stale code
    with_tree = render_messages(prompts, task, "", 1, 2, "", pathconf.path)
    assert render_messages(prompts, task, "", 1, 2, "") == with_tree
    assert "<code>" not in render_messages(prompts, task, "", 2, 2, "")[1]["content"]


def test_the_teacher_reasons_about_the_code_it_sees(small_tasks, tmp_path: Path) -> None:  # noqa: ANN001
    accepted = [t for t in small_tasks["procedural"] if t.status == "accepted"]
    two = next(t for t in accepted if len(t.reference_actions) == 2)
    scoped = next(t for t in accepted if "@" in "".join(t.rules))
    tasks = [two, scoped]
    drive_actor(tmp_path, ProgramTeacher(), tasks, extra_steps=1)
    steps: list[TrajectoryStep] = lake.read_records(  # type: ignore[assignment]
        "refactor/trajectories",
        TrajectoryStep,
        lake.lake_root(tmp_path),
        source="procedural",
        split=two.split,
    )
    by_task = {t.id: t for t in tasks}
    assert len(steps) == 3 and all(s.verified for s in steps), [s.failure for s in steps]
    for step in steps:
        task: RefactorTask = by_task[step.task_id]
        think = step.model_output.think
        assert not any(rule_id in think for rule_id in task.rules), think
        view = parse_code_view(step.prompt_messages[-1]["content"])
        cited = CITED.findall(think)
        assert cited, think
        for path, line, text in cited:  # every cited line is the prompt's, at that number
            shown = view[path][int(line)]
            assert " ".join(shown.split()).startswith(text.rstrip("…")), (path, line, text)
        if step.task_id == scoped.id:  # the same shape elsewhere in the file is spared
            assert "must stay as it is" in think, think
    assert len({s.model_output.think for s in steps}) == len(steps)
    rows = FAMILY.sft_rows(steps)
    assert len(rows) == len(steps)
    assert all("<code>" in r.messages[1]["content"] for r in rows)
    assert all(CITED.search(r.messages[-1]["content"]) for r in rows)


def test_grpo_prompts_show_the_code_of_each_turn(small_tasks, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """Step-1 GRPO prompts show the repository's code; a multi-turn episode's next prompt
    shows the code its workspace holds after the policy's action."""
    import json

    from verilearn_assets.core.family import GrpoEnvOptions
    from verilearn_assets.refactor.rollout.teachers import program_answer

    monkeypatch.setenv("VERILEARN_HOME", str(tmp_path))
    grpo = FAMILY.grpo
    assert grpo is not None and grpo.environment is not None
    tasks = small_tasks["template"] + small_tasks["procedural"]
    rows = grpo.prompts(tmp_path, tasks, "default")
    assert rows and all(parse_code_view(r["prompt"][-1]["content"]) for r in rows)
    pair = next(t for t in small_tasks["procedural"] if len(t.rules) == 2)
    env = grpo.environment(tmp_path, tasks, "default", GrpoEnvOptions(4, 2))
    try:
        episode = env.reset(pair.id)
        think, action, update = program_answer(episode.opening, pair, 1)
        answer = (
            f"<think>{think}</think>\n<action>{json.dumps(action)}</action>\n"
            f"<state_update>{json.dumps(update)}</state_update>"
        )
        feedback, done = episode.step(answer)
        assert not done
        before = parse_code_view(episode.opening[-1]["content"])
        after = parse_code_view(feedback[0]["content"])
        rewritten = [(p, int(n)) for p, n, _ in CITED.findall(think.split("What is left")[0])]
        assert rewritten
        assert all(after[p][n] != before[p][n] for p, n in rewritten), rewritten
    finally:
        env.close()


def test_the_code_view_never_follows_a_link_or_reads_a_huge_file(tmp_path: Path) -> None:
    """The workspace is the model's: a file in scope replaced by a link to a host file, a
    directory swapped for a link, or a file grown past the cap is named, never shown."""
    from verilearn_assets.refactor.rollout.prompts import MAX_FILE_BYTES, code_view, read_scope

    secret = tmp_path / "host-secret.py"
    secret.write_text("TOKEN = 'do-not-show'\n")
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "ok.py").write_text("x = 1\n")
    (tree / "pkg" / "link.py").symlink_to(secret)
    (tree / "big.py").write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "inner.py").write_text("TOKEN = 'do-not-show'\n")
    (tree / "via").symlink_to(tmp_path / "elsewhere")
    files = ["pkg/ok.py", "pkg/link.py", "big.py", "via/inner.py", "missing.py"]
    texts = read_scope(tree, files)
    assert texts == {
        "pkg/ok.py": "x = 1\n",
        "pkg/link.py": None,
        "big.py": None,
        "via/inner.py": None,
        "missing.py": None,
    }
    view = code_view(texts, "", 8000)
    assert "do-not-show" not in view and "   1| x = 1" in view
    assert view.count("(not shown:") == 4
