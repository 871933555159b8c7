"""Memorization for the loop proof (and benchmarks/training.py): the product's trainer,
`train_sft`, fully fine-tunes a tiny model on a few SFT rows.

Full fine-tuning (`sft.method: full`, embeddings included), not LoRA: an adapter needs
several times the steps on this 2-core CPU to reproduce a reply token for token, and the
proof is about the plumbing (train → serve → evaluate), not about the adapter. The loss is
on assistant turns only (the chat template's generation spans), each predicted from the
chat-template prompt before it — the exact text vLLM renders for the student.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from verilearn_assets.core.family import SftRow
from verilearn_assets.training.config import TrainingConfig


@dataclass
class Example:
    prompt: str  # chat-template text up to and including the assistant header
    reply: str  # the assistant's content plus the end-of-turn token
    prompt_ids: list[int]
    reply_ids: list[int]


def examples(model_dir: Path, rows: list[SftRow]) -> list[Example]:
    """One example per assistant turn of every row."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    out = []
    for row in rows:
        for i, m in enumerate(row.messages):
            if m["role"] != "assistant":
                continue
            prompt = tok.apply_chat_template(
                row.messages[:i], add_generation_prompt=True, tokenize=False
            )
            reply = m["content"] + tok.eos_token
            out.append(
                Example(
                    prompt,
                    reply,
                    tok(prompt, add_special_tokens=False)["input_ids"],
                    tok(reply, add_special_tokens=False)["input_ids"],
                )
            )
    return out


def memorize_config(
    base_dir: Path, n_rows: int, *, steps: int, lr: float, seed: int = 0
) -> TrainingConfig:
    """`train_sft` settings that memorize `n_rows` rows: all weights, every row once per step
    (the whole set is one batch), a linearly decaying learning rate, one CPU thread."""
    return TrainingConfig.model_validate(
        {
            "base_model": str(base_dir),
            "sft": {
                "method": "full",
                "weighting": "one_per_task",  # every row kept, once
                "per_device_train_batch_size": n_rows,  # the whole set every step
                "max_steps": steps,
                "learning_rate": lr,
                "lr_scheduler_type": "linear",
                "cpu_threads": 1,  # a shared 2-core box: two threads thrash each other
                "seed": seed,
            },
        }
    )
