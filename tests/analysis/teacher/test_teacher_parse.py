"""Reply parsing: exactly one python block, or a named format error."""

from __future__ import annotations

import pytest

from verilearn_assets.analysis.rollout.parse import (
    FormatError,
    ParsedReply,
    format_reply,
    parse_reply,
)


def test_one_python_block_is_parsed_with_its_reasoning() -> None:
    text = "Count the rows first.\n\n```python\nn = len(df)\nprint(n)\n```\nThanks."
    parsed = parse_reply(text)
    assert parsed == ParsedReply(reasoning="Count the rows first.", code="n = len(df)\nprint(n)")


@pytest.mark.parametrize("tag", ["python", "py", "Python3"])
def test_python_tags_are_accepted(tag: str) -> None:
    parsed = parse_reply(f"```{tag}\nx = 1\n```")
    assert isinstance(parsed, ParsedReply) and parsed.code == "x = 1"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("I think the answer is 4.", "no ```python code block"),
        ("```\nx = 1\n```", "not tagged as python"),
        ("```python\nx = 1\n```\n```python\ny = 2\n```", "2 python code blocks"),
        ("```python\n\n   \n```", "empty"),
        ("```python\nx = 1\n", "never closed"),
    ],
)
def test_malformed_replies_name_the_problem(text: str, fragment: str) -> None:
    parsed = parse_reply(text)
    assert isinstance(parsed, FormatError)
    assert fragment in parsed.reason


def test_other_blocks_beside_one_python_block_are_fine() -> None:
    text = "```text\nsome output\n```\nNow:\n```python\nsubmit(3)\n```"
    parsed = parse_reply(text)
    assert isinstance(parsed, ParsedReply) and parsed.code == "submit(3)"


def test_longer_fences_may_hold_backticks() -> None:
    text = '````python\ns = """```"""\n````'
    parsed = parse_reply(text)
    assert isinstance(parsed, ParsedReply) and parsed.code == 's = """```"""'


def test_format_reply_round_trips() -> None:
    code = "a = df['x'].mean()\nhook(a, \"a = df['x'].mean()\")"
    parsed = parse_reply(format_reply("Average x.", code))
    assert parsed == ParsedReply("Average x.", code)
