"""GRPO prompts under the context budget: every prompt plus its completion fits the window.

TRL generates each rollout in-process from the row's prompt, with no budget of its own: a
prompt over the policy's window would be generated from positions the model never saw (or
fail mid-run). So before training, each single-turn row's prompt goes through the same
ladder as teacher and evaluation prompts (docs/context_budget.md), counted with the
starting model's tokenizer and template, against `window - max_completion_length`. A row
that fits is kept as it is; one that fits after compression is kept compressed (the
model is trained on the prompt it is evaluated on); one that never fits is dropped and
counted as `context_overflow`, and the run goes on with the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verilearn_assets.core.llm.budget_records import BudgetCounts
from verilearn_assets.core.llm.fit import ContextBudget
from verilearn_assets.core.llm.segments import BudgetMessage

# a family's segmented prompts, one list of messages per row (None: split as plain chat)
Segmenter = Callable[[Sequence[dict[str, Any]]], list[list[BudgetMessage] | None]]


@dataclass
class PromptBudgetReport:
    """What fitting the GRPO prompts cost: `result.json` and the asset metadata show it."""

    window: int
    max_completion_length: int
    counts: BudgetCounts = field(default_factory=BudgetCounts)
    compressed_ids: list[str] = field(default_factory=list)
    overflow_ids: list[str] = field(default_factory=list)
    longest_prompt_tokens: int = 0

    def summary(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "max_completion_length": self.max_completion_length,
            "prompts": self.counts.requests,
            "compressed": len(self.compressed_ids),
            "dropped_context_overflow": len(self.overflow_ids),
            "overflow_task_ids": self.overflow_ids[:20],
            "tokens_removed": dict(sorted(self.counts.tokens_removed.items())),
            "longest_prompt_tokens": self.longest_prompt_tokens,
            "counter": self.counts.counter,
        }


def fit_prompts(
    rows: Sequence[dict[str, Any]],
    budget: ContextBudget,
    segmenter: Segmenter | None = None,
) -> tuple[list[dict[str, Any]], PromptBudgetReport]:
    """The rows whose prompts fit `budget` (compressed where needed), and the report."""
    report = PromptBudgetReport(budget.window, budget.max_tokens)
    segmented = segmenter(rows) if segmenter is not None else [None] * len(rows)
    if len(segmented) != len(rows):
        raise ValueError(f"GRPO prompt segmenter: {len(segmented)} prompts for {len(rows)} rows")
    kept = []
    for row, messages in zip(rows, segmented, strict=True):
        fit = budget.fit(messages) if messages is not None else budget.fit_chat(row["prompt"])
        report.counts.add(fit)
        if fit.overflow:
            report.overflow_ids.append(row["task_id"])
            continue
        report.longest_prompt_tokens = max(report.longest_prompt_tokens, fit.prompt_tokens)
        if fit.messages_compressed:
            report.compressed_ids.append(row["task_id"])
            row = {**row, "prompt": fit.messages}
        kept.append(row)
    return kept, report
