"""Benchmark: fitting one prompt, counting per message (cached) vs counting whole prompts.

The same 30-turn episode (4,000-character tool outputs, a 40-column table) is fitted to a
2,048-token window with the tiny model's real tokenizer, turn by turn as the teacher loop
does, once with each search. Both must give the same fitted prompts; the ratio is the
time the whole-prompt baseline takes over the per-message search.

    .venv/bin/python benchmarks/context_budget.py [--model-dir DIR] [--turns 30]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "llm"), str(REPO / "tests")]  # its helpers import `wide_table`

from test_budget_policy import long_episode  # noqa: E402  (the policy tests' episode)

from verilearn_assets.analysis.rollout.context import budget_messages  # noqa: E402
from verilearn_assets.core.llm.fit import ContextBudget  # noqa: E402
from verilearn_assets.core.llm.launcher import tiny_model_dir  # noqa: E402
from verilearn_assets.core.llm.tokens import load_counter  # noqa: E402


def run(budget: ContextBudget, turns: int) -> tuple[float, list]:
    msgs, outputs, table = long_episode(turns)
    started = time.perf_counter()
    fitted = []
    for n in range(4, len(msgs) + 1, 2):  # each request the loop would send
        fit = budget.fit(budget_messages(msgs[:n], table, 12, outputs))
        assert not fit.overflow and fit.prompt_tokens <= budget.limit
        fitted.append(fit.contents)
    return time.perf_counter() - started, fitted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", default=str(tiny_model_dir()))
    ap.add_argument("--turns", type=int, default=30)
    args = ap.parse_args()
    counter = load_counter(args.model_dir)
    if not counter.exact:
        sys.exit(f"{args.model_dir}: no tokenizer there (make tiny-model builds one)")
    fast = ContextBudget(window=2048, max_tokens=256, counter=counter)
    slow = dataclasses.replace(fast, additive=False)
    t_fast, a = run(fast, args.turns)
    t_slow, b = run(slow, args.turns)
    same = sum(x == y for x, y in zip(a, b, strict=True))
    print(f"requests fitted: {len(a)} ({args.turns} turns, counter {counter.name})")
    print(f"whole-prompt counts (baseline): {t_slow:8.2f} s")
    print(f"per-message counts, cached:     {t_fast:8.2f} s   speed-up x{t_slow / t_fast:.1f}")
    print(f"identical fitted prompts: {same}/{len(a)}")


if __name__ == "__main__":
    main()
