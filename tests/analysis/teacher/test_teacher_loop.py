"""The episode loop through the real sandbox (bubblewrap), driven by scripted policies."""

from __future__ import annotations

import pandas as pd
import pytest
from teacher_harness import Sandbox, ScriptedPolicy, cell, make_question

from verilearn_assets.analysis.records import Episode
from verilearn_assets.analysis.rollout.config import TeacherConfig
from verilearn_assets.analysis.rollout.loop import AlignmentError, check_alignment, run_episode
from verilearn_assets.analysis.rollout.prompts import system_prompt
from verilearn_assets.core.records import AnswerSchema, TableRecord

INT = AnswerSchema(kind="integer")
NUM = AnswerSchema(kind="number", rel_tol=1e-9)


def qty_sum(table: TableRecord) -> int:
    return int(pd.read_parquet(table.path)["qty"].sum())


def test_alignment_under_reprompts(sandbox: Sandbox, table: TableRecord) -> None:
    truth = qty_sum(table)
    replies = [
        "The answer is probably large.",  # no code block
        cell("total = int(df['qty'].sum())\nprint('total', total)", "Sum the quantities."),
        "```python\nx = 1\n```\nand also\n```python\ny = 2\n```",  # two blocks
        "```python\nsubmit(total\n",  # unclosed fence
        cell("submit(total)", "Submit."),
    ]
    policy = ScriptedPolicy(replies, tokens=(11, 5))
    question = make_question(
        table,
        "submit(int(df['qty'].sum()))",
        truth,
        INT,
        text="What is the total quantity ordered?",
    )
    cfg = TeacherConfig(max_format_errors=3)
    ep = sandbox.run(run_episode(question, table, policy, sandbox.pool, cfg))

    assert [m.turn for m in ep.messages] == list(range(len(ep.messages)))
    assert [(m.role, m.kind) for m in ep.messages] == [
        ("system", "prompt"),
        ("user", "prompt"),
        ("assistant", "rejected_reply"),
        ("user", "reprompt"),
        ("assistant", "reply"),
        ("tool", "tool_output"),
        ("assistant", "rejected_reply"),
        ("user", "reprompt"),
        ("assistant", "rejected_reply"),
        ("user", "reprompt"),
        ("assistant", "reply"),
        ("tool", "tool_output"),
    ]
    assistant = [m.content for m in ep.messages if m.role == "assistant"]
    assert assistant == replies  # rejected replies stored verbatim
    assert ep.messages[0].content == system_prompt(table, cfg.max_turns)
    assert "no ```python code block" in ep.messages[3].content
    assert "2 python code blocks" in ep.messages[7].content
    assert "never closed" in ep.messages[9].content
    # each cell is paired with its own assistant turn and the tool message right after it
    assert [(c.turn, c.output_turn) for c in ep.cells] == [(4, 5), (10, 11)]
    assert ep.cells[0].code == "total = int(df['qty'].sum())\nprint('total', total)"
    assert f"total {truth}" in ep.cells[0].stdout
    assert f"total {truth}" in ep.messages[5].content
    assert f"submitted: {truth}" in ep.messages[11].content
    # the policy saw exactly the stored prefix before each of its replies
    for k, seen in enumerate(policy.seen):
        reply_turn = [m.turn for m in ep.messages if m.role == "assistant"][k]
        assert seen == ep.messages[:reply_turn]
    assert ep.verified and ep.failure_class is None and ep.answer == str(truth)
    assert ep.n_turns == 5 and (ep.prompt_tokens, ep.completion_tokens) == (55, 25)
    # the record survives a Parquet row round trip unchanged
    assert Episode.from_row(ep.to_row()) == ep


def test_check_alignment_rejects_drift(sandbox: Sandbox, table: TableRecord) -> None:
    policy = ScriptedPolicy([cell("a = 1"), cell("submit(2)")])
    question = make_question(table, "submit(2)", 2, INT)
    ep = sandbox.run(run_episode(question, table, policy, sandbox.pool, TeacherConfig()))
    check_alignment(ep.messages, ep.cells)
    shifted = [c.model_copy(update={"turn": c.turn + 1}) for c in ep.cells]
    with pytest.raises(AlignmentError):
        check_alignment(ep.messages, shifted)
    swapped = [ep.cells[0].model_copy(update={"code": "a = 2"}), ep.cells[1]]
    with pytest.raises(AlignmentError, match="does not hold the reply's code"):
        check_alignment(ep.messages, swapped)
    gap = [m.model_copy(update={"turn": m.turn + (m.turn >= 3)}) for m in ep.messages]
    with pytest.raises(AlignmentError, match="turns must be 0..n-1"):
        check_alignment(gap, ep.cells)


def test_repeated_format_errors_end_the_episode(sandbox: Sandbox, table: TableRecord) -> None:
    policy = ScriptedPolicy(lambda convo: f"I refuse, attempt {len(convo)}")
    question = make_question(table, "submit(1)", 1, INT)
    ep = sandbox.run(
        run_episode(question, table, policy, sandbox.pool, TeacherConfig(max_format_errors=2))
    )
    kinds = [m.kind for m in ep.messages]
    assert kinds.count("rejected_reply") == 3 and kinds.count("reprompt") == 2
    assert kinds[-1] == "rejected_reply" and ep.cells == []
    assert len(policy.seen) == 3
    assert not ep.verified and ep.failure_class == "format_error"


def test_max_turns_still_runs_the_final_reply(sandbox: Sandbox, table: TableRecord) -> None:
    cfg = TeacherConfig(max_turns=3)
    question = make_question(table, "submit(7)", 7, INT)
    late = ScriptedPolicy([cell("a = 3"), cell("b = 4"), cell("submit(a + b)")])
    ep = sandbox.run(run_episode(question, table, late, sandbox.pool, cfg))
    assert len(ep.cells) == 3 and ep.verified and ep.answer == "7"

    endless = ScriptedPolicy(lambda convo: cell(f"print('step', {len(convo)})"))
    ep = sandbox.run(run_episode(question, table, endless, sandbox.pool, cfg))
    assert len(endless.seen) == 3 and len(ep.cells) == 3
    assert ep.messages[-1].role == "tool" and "step" in ep.messages[-1].content
    assert ep.cells[-1].status == "ok" and "step" in ep.cells[-1].stdout
    assert not ep.verified and ep.failure_class == "max_turns"


def test_execution_errors_are_shown_and_classified(sandbox: Sandbox, table: TableRecord) -> None:
    question = make_question(table, "submit(1)", 1, INT)
    policy = ScriptedPolicy([cell("df['no_such_column'].sum()"), cell("1 / 0")])
    ep = sandbox.run(run_episode(question, table, policy, sandbox.pool, TeacherConfig(max_turns=2)))
    assert [c.status for c in ep.cells] == ["error", "error"]
    assert "no_such_column" in ep.messages[3].content
    assert "ZeroDivisionError" in ep.messages[5].content
    assert ep.failure_class == "execution_failure"


def test_wrong_answer_and_alternative_answers(sandbox: Sandbox, table: TableRecord) -> None:
    question = make_question(table, "submit(0.5)", 0.5, NUM)
    ep = sandbox.run(
        run_episode(
            question, table, ScriptedPolicy([cell("submit(0.6)")]), sandbox.pool, TeacherConfig()
        )
    )
    assert not ep.verified and ep.failure_class == "wrong_answer" and ep.answer == "0.6"
    ep = sandbox.run(
        run_episode(
            question,
            table,
            ScriptedPolicy([cell("submit(0.5 + 1e-12)")]),
            sandbox.pool,
            TeacherConfig(),
        )
    )
    assert ep.verified  # within the schema's tolerance
    # string answers: judged by hash of the canonical JSON and by the schema's comparison
    word = make_question(table, "submit('north')", "north", AnswerSchema(kind="string"))
    for reply, ok in [
        ("submit('north')", True),
        ("submit(' north ')", True),
        ("submit('south')", False),
    ]:
        ep = sandbox.run(
            run_episode(word, table, ScriptedPolicy([cell(reply)]), sandbox.pool, TeacherConfig())
        )
        assert ep.verified is ok, reply
    # an answer the schema cannot normalise is wrong, not an error
    ep = sandbox.run(
        run_episode(
            make_question(table, "submit(3)", 3, INT),
            table,
            ScriptedPolicy([cell("submit(2.5)")]),
            sandbox.pool,
            TeacherConfig(),
        )
    )
    assert not ep.verified and ep.failure_class == "wrong_answer"


def test_hooks_ground_only_against_lines_that_ran(sandbox: Sandbox, table: TableRecord) -> None:
    code1 = "\n".join(
        [
            "x = 10",
            "m = df['qty'].mean()",
            "hook(m, \"m = df['qty'].mean()\", name='mean_qty')",  # grounded
            "hook(x, 'x = 1', name='x')",  # `x = 1` is not `x = 10`
            "hook(m, 'm  =  df[\\'qty\\'].mean()', name='spaced')",  # whitespace-normalised
            "hook(m, 'later = m * 2', name='future')",  # that line runs only in cell 2
        ]
    )
    code2 = "later = m * 2\nsubmit(int(later > 0))"
    policy = ScriptedPolicy([cell(code1), cell(code2)])
    question = make_question(table, "submit(1)", 1, INT)
    ep = sandbox.run(run_episode(question, table, policy, sandbox.pool, TeacherConfig()))
    assert ep.verified
    assert ep.hooks_total == 4 and ep.hooks_malformed == 0
    assert [h.name for h in ep.hooks] == ["mean_qty", "spaced"] and ep.hooks_grounded == 2


def test_hooks_the_sandbox_drops_are_counted_as_malformed(
    sandbox: Sandbox, table: TableRecord
) -> None:
    code = "\n".join(
        [
            "import sys",
            "m = df['qty'].mean()",
            "hook(m, \"m = df['qty'].mean()\", name='mean_qty')",  # grounded
            "hook(m, '   ', name='blank')",  # reaches grounding, malformed there
            "emit = hook.__self__._emit",  # a forged record the sandbox must refuse
            "emit({'ev': 'hook', 'hook': {'name': 'forged', 'code_line': 'm = 1'}})",
            # a look-alike note on stderr is only text: it must not count as a hook
            "print('[sandbox] dropped a malformed hook 9: spoof', file=sys.stderr)",
            "submit(1)",
        ]
    )
    question = make_question(table, "submit(1)", 1, INT)
    ep = sandbox.run(
        run_episode(question, table, ScriptedPolicy([cell(code)]), sandbox.pool, TeacherConfig())
    )
    assert ep.verified and [h.name for h in ep.hooks] == ["mean_qty"]
    assert (ep.hooks_total, ep.hooks_grounded, ep.hooks_malformed) == (3, 1, 2)
    assert "[sandbox] dropped a malformed hook 2: value_hash:" in ep.cells[0].stderr


STEADY_CELL = """import random, time
class Fit:
    pass
time.sleep(random.random() / 10)  # a run time that differs on every execution
fits = [Fit() for _ in range(3)]
print(fits)
print('x' * 3000)  # long enough that the message is cut in the middle
fits[0]"""


def test_two_executions_of_a_cell_give_byte_identical_tool_messages(
    sandbox: Sandbox, table: TableRecord
) -> None:
    """The model never sees a cell's run time or an object's address: the same episode
    renders the same tool messages on every run (the SFT rows and evaluation prompts are
    these messages), while each cell's own record keeps what it measured."""
    truth = qty_sum(table)
    question = make_question(table, "submit(int(df['qty'].sum()))", truth, INT)
    cfg = TeacherConfig(tool_output_chars=1000)
    episodes = []
    for _ in range(2):
        policy = ScriptedPolicy([cell(STEADY_CELL), cell(f"submit({truth})")])
        episodes.append(sandbox.run(run_episode(question, table, policy, sandbox.pool, cfg)))
    first, second = episodes
    tools = [[m.content for m in ep.messages if m.role == "tool"] for ep in episodes]
    assert tools[0] == tools[1]
    assert [m.content for m in first.messages] == [m.content for m in second.messages]
    shown = tools[0][0]
    assert shown.startswith("[cell ok]\nstdout:\n[<__main__.Fit object at 0x…>, ")
    assert "characters truncated" in shown and "value:\n<__main__.Fit object at 0x…>" in shown
    assert " ms]" not in shown and "0x7" not in shown
    # the records keep the real run and output: time measured, addresses as printed
    assert all(c.duration_ms > 0 for ep in episodes for c in ep.cells)
    assert "<__main__.Fit object at 0x" in first.cells[0].stdout
    assert "0x…" not in first.cells[0].stdout
