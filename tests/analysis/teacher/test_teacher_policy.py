"""The program teacher's cell splitting and replay; the vLLM message mapping."""

from __future__ import annotations

import asyncio

import pytest

from verilearn_assets.analysis.records import Message
from verilearn_assets.analysis.rollout.parse import ParsedReply, parse_reply
from verilearn_assets.analysis.rollout.policy import (
    ProgramPolicy,
    chat_messages,
    split_cells,
)

CODE = """\
import numpy as np
sub = df[df["price"] > 10]
hook(sub, 'sub = df[df["price"] > 10]', name="expensive")
# average quantity of the expensive rows
avg = sub["qty"].mean()
hook(avg, 'avg = sub["qty"].mean()')
answer = round(float(avg), 3)
submit(answer)
"""


def test_cells_keep_hooks_with_their_line_and_submit_last() -> None:
    cells = split_cells(CODE)
    assert [c.code for c in cells] == [
        'import numpy as np\nsub = df[df["price"] > 10]\n'
        'hook(sub, \'sub = df[df["price"] > 10]\', name="expensive")',
        '# average quantity of the expensive rows\navg = sub["qty"].mean()\n'
        "hook(avg, 'avg = sub[\"qty\"].mean()')",
        "answer = round(float(avg), 3)",
        "submit(answer)",
    ]
    assert [c.reasoning for c in cells] == [
        "Compute and record expensive.",
        "Average quantity of the expensive rows",
        "Compute `answer`.",
        "Submit the answer.",
    ]
    # splitting loses nothing: the cells rejoined are the statements of the program
    assert "\n".join(c.code for c in cells) == CODE.rstrip("\n")


def test_a_hook_naming_an_earlier_line_merges_the_cells_in_between() -> None:
    code = "a = 1\nb = 2\nc = 3\nd = 4\nhook(a, 'a = 1')\nsubmit(a)"
    cells = split_cells(code)
    holding = [c for c in cells if "hook(" in c.code]
    assert len(holding) == 1 and holding[0].code.startswith("a = 1")
    assert holding[0].code.index("a = 1") < holding[0].code.index("hook(")
    assert cells[-1].code == "submit(a)"


def test_plain_statements_group_up_to_three_per_cell() -> None:
    code = "\n".join(f"v{i} = {i}" for i in range(7)) + "\nsubmit(v6)"
    cells = split_cells(code)
    assert [c.code.count("\n") + 1 for c in cells] == [3, 3, 1, 1]


def test_max_cells_merges_but_keeps_order_and_submit_last() -> None:
    code = "\n".join(f"v{i} = {i}\nhook(v{i}, 'v{i} = {i}')" for i in range(6)) + "\nsubmit(v5)"
    cells = split_cells(code, max_cells=3)
    assert len(cells) == 3 and cells[-1].code.endswith("submit(v5)")
    assert "\n".join(c.code for c in cells) == code


def test_multiline_statements_stay_whole() -> None:
    code = "res = (df\n       .groupby('a')['b']\n       .sum())\nsubmit(res.max())"
    cells = split_cells(code)
    assert cells[0].code == "res = (df\n       .groupby('a')['b']\n       .sum())"


def test_unparseable_reference_code_is_an_error() -> None:
    with pytest.raises(ValueError, match="does not parse"):
        split_cells("x = (1,\n")


def _msg(turn: int, role: str, kind: str, content: str = "") -> Message:
    return Message(turn=turn, role=role, kind=kind, content=content)  # type: ignore[arg-type]


def test_program_policy_replays_cells_in_order_and_ignores_rejected_replies() -> None:
    policy = ProgramPolicy(CODE)
    convo = [_msg(0, "system", "prompt"), _msg(1, "user", "prompt")]
    seen = []
    for _ in range(len(policy.cells)):
        reply = asyncio.run(policy.next_message(convo))
        parsed = parse_reply(reply.text)
        assert isinstance(parsed, ParsedReply)
        seen.append(parsed.code)
        convo += [
            _msg(len(convo), "assistant", "reply", reply.text),
            _msg(len(convo) + 1, "tool", "tool_output", "[cell ok]"),
            _msg(len(convo) + 2, "assistant", "rejected_reply", "noise"),
        ]
    assert seen == [c.code for c in policy.cells]
    exhausted = asyncio.run(policy.next_message(convo))
    assert not isinstance(parse_reply(exhausted.text), ParsedReply)


def test_chat_messages_keep_the_tool_role_and_content_verbatim() -> None:
    # SFT rows train on `tool` turns: the student is prompted with the same turns.
    convo = [
        _msg(0, "system", "prompt", "S"),
        _msg(1, "user", "prompt", "Q"),
        _msg(2, "assistant", "reply", "A"),
        _msg(3, "tool", "tool_output", "T\n"),
    ]
    assert chat_messages(convo) == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Q"},
        {"role": "assistant", "content": "A"},
        {"role": "tool", "content": "T\n"},
    ]
