"""Benchmark: GRPO policy-side speed on this machine — torch's default intra-op threads
against `grpo.cpu_threads: 1`, same model, prompts, rewards and steps, in the same run.

The rewards are fixed (one success per group, so every step has a real backward pass) to
time only generation + the policy update; the verifier's own cost is in benchmarks/sandbox.py
and benchmarks/dafny.py. One warm-up run first (imports, first-call overheads).

    .venv/bin/python benchmarks/grpo.py [--steps 4] [--completion-tokens 32]

Prints steps/s and tokens/s (prompt + completion, TRL's `num_tokens`) of each and the
ratio default/one-thread.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from verilearn_assets.training.config import DEFAULT_BASE_MODEL, REPO_ROOT, TrainingConfig
from verilearn_assets.training.grpo.config import GrpoSettings
from verilearn_assets.training.grpo.trainer import RewardBank, StartModel, _cpu_threads, _trainer
from verilearn_assets.training.run_dir import RunDir

PROMPT = "Question: how many rows have a value of 'a' above its mean?\n\nSubmit an integer."


class OnePerGroup:
    def score(self, task_ids, completions):
        seen: set[str] = set()
        out = []
        for t in task_ids:
            out.append({"outcome": float(t not in seen), "partial": float(t not in seen)})
            seen.add(t)
        return out

    def close(self) -> None:
        pass


def timed(threads: int | None, steps: int, tokens: int, root: Path) -> tuple[float, int]:
    """(seconds in `train()`, prompt + completion tokens it processed)."""
    settings = GrpoSettings(max_completion_length=tokens, cpu_threads=threads, max_steps=steps)
    config = TrainingConfig(base_model=DEFAULT_BASE_MODEL, grpo=settings)
    rows = [
        {
            "prompt": [{"role": "user", "content": f"{PROMPT} ({i})"}],
            "task_id": str(i),
            "difficulty": 0.0,
            "group": "g",
        }
        for i in range(steps)
    ]
    run = RunDir.create(config, root, "bench")
    weights = settings.reward_weights()
    bank = RewardBank(OnePerGroup(), list(weights))
    funcs = [bank.function(n) for n in weights]
    start = StartModel(REPO_ROOT / DEFAULT_BASE_MODEL, "base")
    with _cpu_threads(threads):
        trainer = _trainer(config, start, rows, funcs, weights, run, steps, None)
        t0 = time.perf_counter()
        trainer.train()
        return time.perf_counter() - t0, int(trainer.state.num_input_tokens_seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--completion-tokens", type=int, default=32)
    args = parser.parse_args()
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        timed(1, 1, 8, root)  # warm-up
        default_s, default_tokens = timed(None, args.steps, args.completion_tokens, root)
        one_s, one_tokens = timed(1, args.steps, args.completion_tokens, root)
    print(
        json.dumps(
            {
                "steps": args.steps,
                "completion_tokens": args.completion_tokens,
                "default_threads": torch.get_num_threads(),
                "default_steps_per_s": round(args.steps / default_s, 3),
                "one_thread_steps_per_s": round(args.steps / one_s, 3),
                "default_tokens_per_s": round(default_tokens / default_s, 1),
                "one_thread_tokens_per_s": round(one_tokens / one_s, 1),
                "default_over_one_thread_time": round(default_s / one_s, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
