"""Strict hook grounding against executed lines."""

from __future__ import annotations

import logging

import pytest

from verilearn_assets.analysis.rollout.grounding import ground_hooks, normalize_line
from verilearn_assets.core.records import HookRecord


def hook(name: str, line: str) -> HookRecord:
    return HookRecord(name=name, code_line=line, value_hash="0" * 16)


def test_whole_line_match_only_x_equals_1_is_not_x_equals_10() -> None:
    grounded, malformed, details = ground_hooks([hook("x", "x = 1")], ["x = 10\ny = x + 1"])
    assert grounded == [] and malformed == []
    assert details[0].status == "ungrounded"
    grounded, _, details = ground_hooks([hook("x", "x = 1")], ["x = 1\ny = x + 1"])
    assert [h.name for h in grounded] == ["x"] and details[0].status == "grounded"


def test_whitespace_is_normalised_on_both_sides() -> None:
    cells = ["    total  =\tdf['a'].sum()   "]
    grounded, _, _ = ground_hooks([hook("t", "total = df['a'].sum()")], cells)
    assert len(grounded) == 1
    padded = hook("t", "  total   = df['a'].sum()\n")
    grounded, _, _ = ground_hooks([padded], ["total = df['a'].sum()"])
    assert len(grounded) == 1
    assert normalize_line(" a \t b  ") == "a b"


def test_a_prefix_of_a_longer_line_never_grounds() -> None:
    grounded, _, _ = ground_hooks([hook("m", "m = df['a']")], ["m = df['a'].mean()"])
    assert grounded == []


def test_malformed_entries_are_counted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    entries = [
        hook("ok", "y = 2"),
        {"name": "no_line", "value_hash": "ab"},  # missing code_line
        {"name": "extra", "code_line": "y = 2", "value_hash": "ab", "bogus": 1},
        "not a hook",
        hook("empty", "   "),
        hook("two_lines", "y = 2\nz = 3"),
        {"name": "as_dict", "code_line": "z = 3", "value_hash": "cd"},
    ]
    with caplog.at_level(logging.WARNING):
        grounded, malformed, details = ground_hooks(entries, ["y = 2\nz = 3"])
    assert [h.name for h in grounded] == ["ok", "as_dict"]
    assert [m.index for m in malformed] == [1, 2, 3, 4, 5]
    assert len(details) == len(entries)
    assert [d.status for d in details].count("malformed") == 5
    assert "code_line is empty" in malformed[3].reason
    assert "several lines" in malformed[4].reason
    assert sum("malformed" in r.message for r in caplog.records) == 5
