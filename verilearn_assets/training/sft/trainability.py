"""Can these SFT rows train this base model? (pure: no dagster)

Three things, each counted, none silent:
1. the base model's chat template has `{% generation %}` markers (assistant-only loss needs
   them: without, every token — the user's and the tool's too — would be trained);
2. every row renders with that template and fits `max_seq_length`, or is cut by the
   documented rule (`sft.truncation`): `compress` (the default) applies the context
   budget's ladder — the one every teacher and evaluation prompt goes through
   (docs/context_budget.md) — counting with this tokenizer: older tool outputs are
   middle-truncated then summarized, the last one's body last; the system prompt, the task,
   every assistant turn (it carries the loss) and submission lines are never touched; a row
   that still does not fit is dropped. `drop_last_turns` keeps the longest prefix that ends
   on an assistant turn and fits — whole turns; a row whose first assistant turn does not
   fit is dropped; `drop_row` drops every row that does not fit. A row with no assistant
   token is dropped too. The check fails when more than `sft.max_dropped_fraction` of the
   rows cannot fit;
3. one optimizer step (LoRA or all weights, per `sft.method`; the configured knobs) on a
   small sample gives a finite loss.

`prepare_rows` is also what `train_sft` feeds the trainer, so the check and the run agree.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from verilearn_assets.core.family import SftRow
from verilearn_assets.core.llm.fit import ContextBudget
from verilearn_assets.training.config import TrainingConfig
from verilearn_assets.training.sft.config import SftSettings
from verilearn_assets.training.sft.data import chat_messages

_LISTED = 20  # ids listed per category in the report


class TrainabilityReport(BaseModel):
    base_model: str
    max_seq_length: int
    truncation: str
    generation_markers: bool
    rows: int
    fit: int = 0
    truncated: int = 0
    compressed: int = 0  # rows fitted by the context-budget ladder (truncation: compress)
    compressed_tokens_removed: int = 0  # tokens those rows lost, all tool output
    dropped_too_long: int = 0
    dropped_no_assistant: int = 0
    render_errors: int = 0
    longest_tokens: int = 0
    truncated_ids: list[str] = Field(default_factory=list)
    compressed_ids: list[str] = Field(default_factory=list)
    dropped_ids: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)  # "<row id>: <why>"
    # rows and rows dropped as too long per family: a global fraction under the limit can
    # hide one family that almost never fits (its rows then barely reach the trainer)
    rows_by_family: dict[str, int] = Field(default_factory=dict)
    dropped_by_family: dict[str, int] = Field(default_factory=dict)
    sample_rows: int = 0
    loss_before: float | None = None
    loss_after: float | None = None
    reasons: list[str] = Field(default_factory=list)  # why it failed; empty when passed

    @property
    def passed(self) -> bool:
        return not self.reasons

    @property
    def kept(self) -> int:
        return self.fit + self.truncated + self.compressed

    def summary(self) -> str:
        head = "trainable" if self.passed else "NOT trainable: " + "; ".join(self.reasons)
        loss = f"{self.loss_before:.4f}" if self.loss_before is not None else "n/a"
        return (
            f"{head} — {self.rows} rows: {self.fit} fit, {self.truncated} truncated, "
            f"{self.compressed} compressed ({self.compressed_tokens_removed} tokens of tool "
            f"output removed), {self.dropped_too_long} dropped (too long), "
            f"{self.dropped_no_assistant} dropped (no assistant turn), "
            f"{self.render_errors} render errors; longest {self.longest_tokens} tokens "
            f"(max {self.max_seq_length}); one-step loss {loss}{self._dropped_families()}"
        )

    def _dropped_families(self) -> str:
        parts = [
            f"{family} {self.dropped_by_family[family]}/{n}"
            for family, n in sorted(self.rows_by_family.items())
            if self.dropped_by_family.get(family)
        ]
        return f"; too long by family: {', '.join(parts)}" if parts else ""


@dataclass
class PreparedRows:
    """Rows ready for the trainer (possibly cut) and what happened to the others."""

    conversations: list[list[dict[str, str]]] = field(default_factory=list)
    kept_ids: list[str] = field(default_factory=list)
    fit: int = 0
    truncated_ids: list[str] = field(default_factory=list)
    compressed_ids: list[str] = field(default_factory=list)
    tokens_removed: int = 0  # by compression, over every compressed row
    dropped_too_long_ids: list[str] = field(default_factory=list)
    dropped_no_assistant_ids: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    longest_tokens: int = 0


def has_generation_markers(template: str | None) -> bool:
    if not template:
        return False
    flat = template.replace("{%-", "{%").replace("-%}", "%}")
    return "{% generation %}" in flat and "{% endgeneration %}" in flat


def _encode(tokenizer: Any, messages: list[dict[str, str]]) -> tuple[int, list[int]]:
    """(sequence length, assistant mask) as the trainer will see them."""
    out = tokenizer.apply_chat_template(
        messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    return len(out["input_ids"]), list(out["assistant_masks"])


def _span_ends(mask: list[int]) -> list[int]:
    """Token index just after each contiguous assistant span (one per assistant turn)."""
    return [i + 1 for i, m in enumerate(mask) if m and (i + 1 == len(mask) or not mask[i + 1])]


class TrainingCounter:
    """Tokens as the trainer sees a row: the base model's template, no generation prompt;
    the `TokenCounter` the context budget counts SFT rows with."""

    exact = True

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.name = f"tokenizer:{getattr(tokenizer, 'name_or_path', '?')} (training)"

    def count_chat(self, messages: Any) -> int:
        out = self.tokenizer.apply_chat_template(
            [dict(m) for m in messages], tokenize=True, return_dict=True
        )
        return len(out["input_ids"])

    def count_text(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])


def _compressed(
    tokenizer: Any, budget: ContextBudget, msgs: list[dict[str, str]], limit: int
) -> tuple[list[dict[str, str]], int] | None:
    """The row fitted by the budget ladder and the tokens it lost; None when even the
    ladder's floor does not fit (or no assistant token survives)."""
    fit = budget.fit_sft(msgs)
    if fit.overflow:
        return None
    fitted = fit.messages
    replies = [m["content"] for m in msgs if m["role"] == "assistant"]
    if [m["content"] for m in fitted if m["role"] == "assistant"] != replies:
        raise AssertionError("the context budget altered an assistant turn of an SFT row")
    length, mask = _encode(tokenizer, fitted)
    if length > limit or not any(mask):
        return None
    return fitted, fit.original_tokens - length


def prepare_rows(tokenizer: Any, rows: list[SftRow], sft: SftSettings) -> PreparedRows:
    """Render every row; keep, cut (by `sft.truncation`) or drop it — and count which."""
    out = PreparedRows()
    limit = sft.max_seq_length
    budget = ContextBudget(limit, 0, TrainingCounter(tokenizer), window_source="sft")
    for row in rows:
        try:
            msgs = chat_messages(row)
            length, mask = _encode(tokenizer, msgs)
        except Exception as exc:  # reported per row: the check names it and fails
            out.errors.append(f"{row.id}: {type(exc).__name__}: {exc}")
            continue
        out.longest_tokens = max(out.longest_tokens, length)
        if not any(mask):
            out.dropped_no_assistant_ids.append(row.id)
            continue
        if length <= limit:
            out.fit += 1
            out.conversations.append(msgs)
            out.kept_ids.append(row.id)
            continue
        if sft.truncation == "drop_row":
            out.dropped_too_long_ids.append(row.id)
            continue
        if sft.truncation == "compress":
            done = _compressed(tokenizer, budget, msgs, limit)
            if done is None:
                out.dropped_too_long_ids.append(row.id)
                continue
            out.compressed_ids.append(row.id)
            out.tokens_removed += done[1]
            out.conversations.append(done[0])
            out.kept_ids.append(row.id)
            continue
        cut = _longest_fitting_prefix(tokenizer, msgs, mask, limit)
        if cut is None:
            out.dropped_too_long_ids.append(row.id)
            continue
        out.truncated_ids.append(row.id)
        out.conversations.append(cut)
        out.kept_ids.append(row.id)
    return out


def _longest_fitting_prefix(
    tokenizer: Any, msgs: list[dict[str, str]], mask: list[int], limit: int
) -> list[dict[str, str]] | None:
    """Longest `msgs[:k]` ending on an assistant message that renders within `limit` tokens.

    The full row's assistant spans give each prefix's length in one tokenization (for a
    prefix-preserving template such as ChatML); the chosen prefix is re-rendered to confirm,
    and when a template is not prefix-preserving the prefixes are rendered one by one.
    """
    ends = [i + 1 for i, m in enumerate(msgs) if m["role"] == "assistant"]
    spans = _span_ends(mask)
    if len(spans) == len(ends):
        fitting = [k for k, end in zip(ends, spans, strict=True) if end <= limit]
        if not fitting:
            return None  # even the first assistant turn ends past the limit
        for k in reversed(fitting):
            length, sub = _encode(tokenizer, msgs[:k])
            if length <= limit and any(sub):
                return msgs[:k]
            break  # the estimate was wrong: this template is not prefix-preserving
    for k in reversed(ends):
        length, sub = _encode(tokenizer, msgs[:k])
        if length <= limit and any(sub):
            return msgs[:k]
    return None


def one_step_loss(
    model_dir: Path,
    tokenizer: Any,
    conversations: list[list[dict[str, str]]],
    sft: SftSettings,
) -> tuple[float, float]:
    """Loss before and after one AdamW step on `conversations`: of a fresh LoRA adapter, or
    of every weight with `sft.method: full` (what training will update).

    Labels are the assistant tokens only, as in training. Plain torch + PEFT (no trainer):
    the point is whether this model, template and data give a finite loss at all.
    """
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(sft.seed)
    apply_cpu_threads(sft)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    if sft.method == "lora":
        model = get_peft_model(model, lora_config(sft))
    model.train()
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    enc = [
        tokenizer.apply_chat_template(
            c, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
        )
        for c in conversations
    ]
    width = max(len(e["input_ids"]) for e in enc)
    ids = torch.full((len(enc), width), pad, dtype=torch.long)
    labels = torch.full((len(enc), width), -100, dtype=torch.long)
    attn = torch.zeros((len(enc), width), dtype=torch.long)
    for i, e in enumerate(enc):
        n = len(e["input_ids"])
        row_ids = torch.tensor(e["input_ids"], dtype=torch.long)
        mask = torch.tensor(e["assistant_masks"], dtype=torch.bool)
        ids[i, :n] = row_ids
        attn[i, :n] = 1
        labels[i, :n] = torch.where(mask, row_ids, torch.full_like(row_ids, -100))
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=sft.learning_rate)
    loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
    before = float(loss.detach())
    loss.backward()
    opt.step()
    with torch.no_grad():
        after = float(model(input_ids=ids, attention_mask=attn, labels=labels).loss)
    return before, after


def apply_cpu_threads(sft: SftSettings) -> None:
    """`sft.cpu_threads` for torch in this process (None leaves torch's default)."""
    if sft.cpu_threads is not None:
        import torch

        torch.set_num_threads(sft.cpu_threads)


def lora_config(sft: SftSettings) -> Any:  # -> peft.LoraConfig
    from peft import LoraConfig

    return LoraConfig(
        r=sft.lora_r,
        lora_alpha=sft.lora_alpha,
        lora_dropout=sft.lora_dropout,
        target_modules=sft.target_modules,
        bias="none",
        task_type="CAUSAL_LM",
    )


def load_tokenizer(model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    if not (Path(model_dir) / "config.json").is_file():
        raise FileNotFoundError(
            f"{model_dir}: base model directory has no config.json (build the tiny model with "
            "`make tiny-model`, or set base_model in configs/training.yaml)"
        )
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    tok.model_max_length = 1 << 40  # we count lengths ourselves against max_seq_length
    return tok


def check_trainability(
    config: TrainingConfig, rows: list[SftRow], *, sample_size: int = 2, step: bool = True
) -> TrainabilityReport:
    """The report behind the blocking `sft_dataset_trainable` check."""
    model_dir = config.base_model_dir()
    tokenizer = load_tokenizer(model_dir)
    sft = config.sft
    markers = has_generation_markers(tokenizer.chat_template)
    report = TrainabilityReport(
        base_model=str(model_dir),
        max_seq_length=sft.max_seq_length,
        truncation=sft.truncation,
        generation_markers=markers,
        rows=len(rows),
    )
    if not markers:
        report.reasons.append(
            f"{model_dir}: chat template has no {{% generation %}} markers "
            "(assistant-only loss cannot tell what the model says from what it reads)"
        )
        return report
    prep = prepare_rows(tokenizer, rows, sft)
    report.fit = prep.fit
    report.truncated = len(prep.truncated_ids)
    report.compressed = len(prep.compressed_ids)
    report.compressed_tokens_removed = prep.tokens_removed
    report.compressed_ids = prep.compressed_ids[:_LISTED]
    report.dropped_too_long = len(prep.dropped_too_long_ids)
    report.dropped_no_assistant = len(prep.dropped_no_assistant_ids)
    report.render_errors = len(prep.errors)
    report.longest_tokens = prep.longest_tokens
    report.truncated_ids = prep.truncated_ids[:_LISTED]
    report.dropped_ids = (prep.dropped_too_long_ids + prep.dropped_no_assistant_ids)[:_LISTED]
    report.errors = prep.errors[:_LISTED]
    family_of = {row.id: row.family for row in rows}
    report.rows_by_family = dict(Counter(family_of.values()))
    report.dropped_by_family = dict(Counter(family_of[i] for i in prep.dropped_too_long_ids))
    if not rows:
        report.reasons.append("no rows")
    if prep.errors:
        report.reasons.append(
            f"{len(prep.errors)} row(s) do not render with the chat template "
            f"(first: {prep.errors[0]})"
        )
    too_long = len(prep.dropped_too_long_ids)
    if rows and too_long / len(rows) > sft.max_dropped_fraction:
        report.reasons.append(
            f"{too_long} of {len(rows)} rows cannot fit max_seq_length={sft.max_seq_length} "
            f"even truncated ({sft.truncation}); allowed fraction {sft.max_dropped_fraction:g} "
            f"(first: {prep.dropped_too_long_ids[0]})"
        )
    if rows and not prep.conversations:
        report.reasons.append(
            f"no row fits max_seq_length={sft.max_seq_length} under rule {sft.truncation!r} "
            f"(longest {prep.longest_tokens} tokens)"
        )
    if step and prep.conversations:
        sample = prep.conversations[:sample_size]
        report.sample_rows = len(sample)
        before, after = one_step_loss(model_dir, tokenizer, sample, sft)
        report.loss_before, report.loss_after = before, after
        if not (math.isfinite(before) and math.isfinite(after)):
            report.reasons.append(f"one optimizer step gave a non-finite loss ({before}→{after})")
    return report
