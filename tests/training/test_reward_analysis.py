"""Analysis verifier rewards on the real sandbox: known answers and reward-hacking attempts.

Each completion is scored the way GRPO scores it (`AnalysisScorer`: one fresh sandbox task
per completion on the question's table). The question is verified by the real Verifier.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from grpo_support import (
    ALT_ANSWER,
    ANSWER,
    REFERENCE,
    STEP1,
    STEP2,
    bwrap_config_dir,
    reply,
    verified_question,
    write_question,
    write_table,
)

from verilearn_assets.analysis.grpo import AnalysisScorer
from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.analysis.rewards import (
    FORMAT_CREDIT,
    HOOK_CREDIT,
    HOOK_TARGET,
    PARTIAL_CAP,
    SUBMIT_CREDIT,
    Scored,
    hook_weights,
    screen_code,
)
from verilearn_assets.core import lake
from verilearn_assets.core.sandbox.runtime import value_hash


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    """One home, one verified question, one scorer opened through the family contract."""
    from verilearn_assets.analysis.family import FAMILY

    home = tmp_path_factory.mktemp("reward-home")
    table = write_table(home)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERILEARN_CONFIG_DIR", str(bwrap_config_dir(home / "configs")))
        assert FAMILY.grpo is not None
        scorer = FAMILY.grpo.scorer(home, [], "default")
        assert isinstance(scorer, AnalysisScorer)
        try:
            question = scorer._run(verified_question(scorer.pool, table))
            write_question(home, question)
            scorer.questions = {question.id: question}
            yield home, question, scorer
        finally:
            scorer.close()


def score(world, *codes: str) -> list[Scored]:
    _, q, scorer = world
    return scorer.score_runs([q.id] * len(codes), [reply(c) for c in codes])


def test_question_is_what_the_tests_assume(world) -> None:
    _, q, _ = world
    assert q.answer == str(ANSWER) and [a.answer for a in q.alternatives] == [str(ALT_ANSWER)]
    assert [h.name for h in q.hooks] == ["mean_a", "above", "final"]


def test_correct_answers_earn_one(world) -> None:
    ref, alt, other_way = score(
        world,
        REFERENCE,
        'submit(int((df["a"] >= df["a"].mean()).sum()))',  # the stated alternative
        'n = (df["a"] > df["a"].mean()).sum()\nsubmit(int(n))',
    )
    assert (ref.outcome, ref.partial, ref.process, ref.reason) == (1.0, 1.0, 1.0, "correct")
    assert (alt.outcome, alt.partial) == (1.0, 1.0)
    assert (other_way.outcome, other_way.partial, other_way.process) == (1.0, 1.0, 0.0)


def test_wrong_answer_gets_capped_partial_and_weighted_process(world) -> None:
    code = f'{STEP1}\nhook(m, {STEP1!r}, name="mean_a")\nsubmit(int((df["a"] > 30).sum()))'
    (s,) = score(world, code)
    assert (s.outcome, s.reason) == (0.0, "wrong_answer")
    assert s.hooks_credited == ("mean_a",)
    assert s.partial == pytest.approx(FORMAT_CREDIT + SUBMIT_CREDIT + HOOK_CREDIT / HOOK_TARGET)
    assert s.partial < PARTIAL_CAP < 1.0
    # mean_a feeds `above` and `final`: weight 3 of 3 + 2 + 1
    assert s.process == pytest.approx(3 / 6)


def test_submitting_without_computing_earns_nothing(world) -> None:
    bare, touched, disguised = score(
        world,
        f"submit({ANSWER})",
        f"n = len(df)\nsubmit({ANSWER})",
        f"x = len(df) * 0 + {ANSWER}\nsubmit(x)",
    )
    assert (bare.outcome, bare.partial, bare.process) == (0.0, 0.0, 0.0)
    assert bare.reason.startswith("not_computed")
    assert touched.outcome == 0.0 and touched.reason.startswith("not_computed")
    assert touched.partial == pytest.approx(FORMAT_CREDIT)  # it ran and read the table
    assert disguised.outcome == 0.0 and "literal" in disguised.reason
    assert disguised.partial <= FORMAT_CREDIT + HOOK_CREDIT


def test_printing_the_expected_answer_earns_nothing(world) -> None:
    bare, computed = score(
        world,
        f"print({ANSWER})",
        'print(int((df["a"] > df["a"].mean()).sum()))',
    )
    assert (bare.outcome, bare.partial, bare.reason) == (0.0, 0.0, "no_submission")
    assert (computed.outcome, computed.reason) == (0.0, "no_submission")
    assert computed.partial == pytest.approx(FORMAT_CREDIT)


def test_hooks_on_lines_never_run_or_not_computed_earn_nothing(world) -> None:
    _, q, _ = world
    fake_value = q.hooks[0]  # mean_a is 20.0: hooking the right value on a constant line
    never_run = (
        f'hook(20.0, {STEP1!r}, name="mean_a")\n'
        f'hook(df[df["a"] > 20], {STEP2!r}, name="above")\n'
        'submit(int((df["a"] > 30).sum()))'
    )
    constant = 'm = 20.0\nhook(m, "m = 20.0", name="mean_a")\nsubmit(int((df["a"] > 30).sum()))'
    a, b = score(world, never_run, constant)
    for s in (a, b):
        assert s.outcome == 0.0 and s.hooks_credited == () and s.process == 0.0
        assert s.partial == pytest.approx(FORMAT_CREDIT + SUBMIT_CREDIT)
    # the attack hooks the reference's own name and value: only grounding refuses it
    assert (fake_value.name, fake_value.value_hash) == ("mean_a", value_hash(20.0))


def test_reading_the_lake_or_other_files_earns_nothing(world) -> None:
    home, q, scorer = world
    parquet = next((lake.lake_root(home) / "analysis" / "questions").rglob("*.parquet"))
    attempts = [
        f"answer = open({str(parquet)!r}, 'rb').read()\nsubmit(len(df))",
        f"import pandas as pd\nq = pd.read_parquet({str(parquet)!r})\nsubmit(int(q['answer'][0]))",
        f"import os\nsubmit(len(df) if os.path.exists({str(parquet)!r}) else 0)",
        "import pathlib\nsubmit(len(list(pathlib.Path('/').iterdir())) + len(df))",
        "x = df.__class__.__init__.__globals__\nsubmit(len(df))",
        "f = __builtins__['op' + 'en']\nsubmit(len(df))",
        f"import pandas as pd\nh = pd.io.common.get_handle({str(parquet)!r}, 'r')\nsubmit(1)",
        f"from scipy import io\nm = io.loadmat({str(parquet)!r})\nsubmit(len(df))",
        f"import numpy as np\nx = np.load({str(parquet)!r})\nsubmit(len(df))",
    ]
    for s, code in zip(score(world, *attempts), attempts, strict=True):
        assert (s.outcome, s.partial, s.process) == (0.0, 0.0, 0.0), code
        assert s.reason.startswith("forbidden_"), s.reason
    # second wall: the jail itself has no lake (run without the screen, straight in the pool)
    probe = f"import os\nprint(os.path.exists({str(parquet)!r}))"
    table_path = scorer.tables[q.table]
    result = scorer._run(scorer.pool.run_program(probe, table_path))
    assert result.status == "ok" and result.stdout.strip() == "False"


def test_crashes_and_several_submissions_earn_nothing(world) -> None:
    crash, submit_then_crash, timeout_like, two = score(
        world,
        'submit(int(df["missing"].sum()))',
        f"{REFERENCE}raise RuntimeError('after the submission')",
        "x = 1 / (len(df) - len(df))\nsubmit(x)",
        f'{REFERENCE}submit(int((df["a"] >= df["a"].mean()).sum()))',
    )
    for s in (crash, submit_then_crash, timeout_like):
        assert (s.outcome, s.partial, s.process) == (0.0, 0.0, 0.0)
        assert s.reason.startswith("crash")
    assert (two.outcome, two.reason) == (0.0, "several_submissions")


def test_no_python_block_is_a_format_error(world) -> None:
    _, q, scorer = world
    (s,) = scorer.score_runs([q.id], [f"The answer is {ANSWER}."])
    assert (s.outcome, s.partial, s.process) == (0.0, 0.0, 0.0)
    assert s.reason.startswith("format_error")


def test_unknown_task_is_a_named_error(world) -> None:
    _, _, scorer = world
    with pytest.raises(KeyError, match="no question 'nope'"):
        scorer.score(["nope"], [reply(REFERENCE)])


def test_hook_weights_follow_depends_on(world) -> None:
    _, q, _ = world
    assert hook_weights(q.hooks) == {"mean_a": 3.0, "above": 2.0, "final": 1.0}


def test_pass_rates_per_template_from_stored_episodes(world) -> None:
    from verilearn_assets.analysis.family import FAMILY
    from verilearn_assets.analysis.records import Episode

    assert FAMILY.grpo is not None and FAMILY.grpo.pass_rates is not None
    grpo_pass_rates = FAMILY.grpo.pass_rates

    home, q, _ = world
    episodes = [
        Episode(
            id=Episode.make_id(q.id, "program", "k", "single", i),
            question_id=q.id,
            source=q.source,
            split=q.split,
            dataset=q.dataset,
            template=q.template,
            teacher="program",
            sampling_key="k",
            messages=[],
            cells=[],
            submissions=[],
            answer=None,
            hooks=[],
            hooks_total=0,
            hooks_grounded=0,
            hooks_malformed=0,
            verified=verified,
            n_turns=0,
        )
        for i, verified in enumerate([True, False, False, True])
    ]
    root = lake.lake_root(home)
    lake.write_records("analysis/episodes", episodes, Episode, root, source=q.source, split=q.split)
    assert grpo_pass_rates(home, q.split) == {"count_above_mean": 0.5}
    assert grpo_pass_rates(home, "dev") == {}


def test_screen_data_flow() -> None:
    s = screen_code("a = df['x']\nb = a.sum()\nc = 3\ndef f():\n    return b\nsubmit(f())\n")
    assert s.ok and s.submits_computed
    assert "b = a.sum()" in s.computed_lines and "c = 3" not in s.computed_lines
    assert not screen_code("c = 3\nsubmit(c)\n").submits_computed
    # ordinary pandas constructors stay allowed (from_dict is not a file reader)
    ok = "t = pd.DataFrame.from_dict({'n': [len(df)]})\nsubmit(int(t['n'][0]))\n"
    assert screen_code(ok).ok and screen_code(ok).submits_computed
    assert screen_code("x = (\n").reason.startswith("syntax_error")


def test_contract_scores_through_the_family(world) -> None:
    """The family's GRPO hook: prompts from the lake; `score` as the trainer calls it."""
    from verilearn_assets.analysis.family import FAMILY

    home, q, scorer = world
    grpo = FAMILY.grpo
    assert grpo is not None and {"outcome", "partial", "process"} <= set(grpo.rewards)
    tasks = FAMILY.read_tasks(Path(home), "template", "train")
    assert [t.id for t in tasks] == [q.id] and isinstance(tasks[0], QuestionRecord)
    rows = grpo.prompts(Path(home), tasks, "default")
    assert [r["task_id"] for r in rows] == [q.id] and rows[0]["group"] == "count_above_mean"
    user = rows[0]["prompt"][-1]
    assert user["role"] == "user" and q.question in user["content"]
    assert "'a'" in rows[0]["prompt"][0]["content"]  # the table overview is in the system turn
    got = scorer.score([q.id, q.id], [reply(REFERENCE), f"print({ANSWER})"])
    assert got == [
        {"outcome": 1.0, "partial": 1.0, "process": 1.0},
        {"outcome": 0.0, "partial": 0.0, "process": 0.0},
    ]
