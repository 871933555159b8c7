"""Memorization for the loop proof: fully fine-tune a tiny model on a few SFT rows.

Full fine-tuning (embeddings included), not LoRA: `train_sft` trains a LoRA adapter, which
on this 2-core CPU needs several times the steps to reproduce a reply token for token, and
the proof is about the plumbing (train → serve → evaluate), not about the adapter. The loss
is on assistant turns only, each predicted from the chat-template prompt before it — the
exact text vLLM renders for the student.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verilearn_assets.core.family import SftRow


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


def memorize(
    base_dir: Path, rows: list[SftRow], out_dir: Path, *, steps: int, lr: float, seed: int = 0
) -> dict[str, Any]:
    """Full fine-tuning of `base_dir` on `rows` (whole batch, AdamW, linear decay); the
    model and tokenizer are saved to `out_dir`, a normal HF dir vLLM serves."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    torch.set_num_threads(1)  # on a loaded 2-core box one thread is several times faster
    tok = AutoTokenizer.from_pretrained(str(base_dir))
    model = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    data = examples(base_dir, rows)
    width = max(len(e.prompt_ids) + len(e.reply_ids) for e in data)
    ids = torch.full((len(data), width), tok.pad_token_id)
    labels = torch.full((len(data), width), -100)
    mask = torch.zeros((len(data), width), dtype=torch.long)
    for i, e in enumerate(data):
        seq = e.prompt_ids + e.reply_ids
        ids[i, : len(seq)] = torch.tensor(seq)
        mask[i, : len(seq)] = 1
        labels[i, len(e.prompt_ids) : len(seq)] = torch.tensor(e.reply_ids)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.1, 1.0 - s / steps))
    model.train()
    losses = []
    started = time.monotonic()
    for _ in range(steps):
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(float(loss.detach()))
    model.eval()
    model.save_pretrained(str(out_dir))
    tok.save_pretrained(str(out_dir))
    return {
        "steps": steps,
        "seconds": round(time.monotonic() - started, 1),
        "first_loss": losses[0],
        "final_loss": losses[-1],
        "examples": len(data),
        "reply_tokens": sum(len(e.reply_ids) for e in data),
    }
