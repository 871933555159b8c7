"""GRPO prompts under the context budget, counted with the tiny model's real tokenizer:
a 500-column table's prompt is compressed the analysis family's way (its statistics and
rare columns, never the rules or the question), a prompt that cannot fit is dropped and
counted, and a prompt that fits is passed on untouched."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from sft_support import question
from wide_table import wide_table

from verilearn_assets.analysis.grpo import grpo_prompt_segments, grpo_prompts
from verilearn_assets.analysis.rollout.prompts import system_rules
from verilearn_assets.core import lake
from verilearn_assets.core.ingest.tables import ASSET as TABLES
from verilearn_assets.core.llm.fit import ContextBudget
from verilearn_assets.core.llm.tokens import HfChatCounter
from verilearn_assets.core.records import TableRecord
from verilearn_assets.training.grpo.budget import fit_prompts

WINDOW, COMPLETION = 2048, 256


@pytest.fixture(scope="module")
def counter(tiny_model_dir: Path) -> HfChatCounter:
    return HfChatCounter(tiny_model_dir)


@pytest.fixture
def home_rows(tmp_path: Path):
    """A home with a 500-column table and a 3-column one, one question on each, and a
    question whose own text is longer than the window."""
    wide, narrow = wide_table(500), wide_table(3).model_copy(update={"id": "narrow"})
    lake.write_records(TABLES, [wide, narrow], TableRecord, lake.lake_root(tmp_path), split="dev")
    tasks = [
        question(wide, "submit(1)", 1, "How many columns have no missing value?"),
        question(narrow, "submit(2)", 2, "How many rows have a positive 'c0'?"),
        question(narrow, "submit(3)", 3, "Count the rows where " + "'c1' > 0 and " * 900),
    ]
    return tmp_path, tasks, grpo_prompts(tmp_path, tasks, "default")


def test_wide_table_prompt_is_compressed_and_a_hopeless_one_dropped(
    counter: HfChatCounter, home_rows
) -> None:
    home, tasks, rows = home_rows
    wide_q, narrow_q, long_q = tasks
    budget = ContextBudget(WINDOW, COMPLETION, counter, window_source="grpo")
    assert counter.count_chat(rows[0]["prompt"]) > WINDOW  # the wide prompt needs compressing
    kept, report = fit_prompts(rows, budget, functools.partial(grpo_prompt_segments, home, tasks))

    assert [r["task_id"] for r in kept] == [wide_q.id, narrow_q.id]
    assert report.compressed_ids == [wide_q.id]
    assert report.overflow_ids == [long_q.id]
    wide_row, narrow_row = kept
    assert narrow_row == rows[1]  # it fits: passed on as the family built it
    system, user = wide_row["prompt"]
    assert counter.count_chat(wide_row["prompt"]) <= WINDOW - COMPLETION
    assert system["content"].startswith(system_rules(1))  # the rules are never cut
    assert user == rows[0]["prompt"][1]  # nor the question
    assert "per-column statistics dropped for" in system["content"]
    assert wide_row["task_id"] == wide_q.id and wide_row["group"] == rows[0]["group"]

    summary = report.summary()
    assert summary["prompts"] == 3 and summary["compressed"] == 1
    assert summary["dropped_context_overflow"] == 1
    assert summary["overflow_task_ids"] == [long_q.id]
    assert summary["tokens_removed"]["table"] > 0
    assert 0 < summary["longest_prompt_tokens"] <= WINDOW - COMPLETION
    assert report.counts.metadata()["context_overflows"] == 1


def test_without_family_segments_an_oversized_prompt_is_dropped_whole(
    counter: HfChatCounter, home_rows
) -> None:
    """Plain chat keeps the system and task messages whole: nothing there may be cut, so
    the wide table's prompt is dropped rather than trained on past the window."""
    _home, tasks, rows = home_rows
    budget = ContextBudget(WINDOW, COMPLETION, counter, window_source="grpo")
    kept, report = fit_prompts(rows, budget)
    assert [r["task_id"] for r in kept] == [tasks[1].id]
    assert report.overflow_ids == [tasks[0].id, tasks[2].id] and report.compressed_ids == []


def test_a_segmenter_answering_for_the_wrong_rows_is_refused(counter: HfChatCounter) -> None:
    budget = ContextBudget(WINDOW, COMPLETION, counter)
    row = {"prompt": [{"role": "user", "content": "hi"}], "task_id": "t"}
    with pytest.raises(ValueError, match="1 prompts for 2 rows"):
        fit_prompts([row, row], budget, lambda rows: [None])
