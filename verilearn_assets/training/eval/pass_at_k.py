"""pass@k and pass^k from per-task sample counts (pure).

Evaluation keeps, per task, `n` completions and `c` of them verified (`ModelEvalRecord.extra`
`n_best` / `n_best_passed`; a record without them counts as n = 1, c = passed). From those
counts, for every k <= n:

- pass@k = 1 - C(n-c, k) / C(n, k): the chance that at least one of k completions drawn
  without replacement from the n passes. Averaged over tasks it is the unbiased estimator of
  Chen et al. (2021); the naive 1 - (1 - c/n)^k is biased low.
- pass^k = C(c, k) / C(n, k): the chance that all k drawn pass (the reliability measure
  of tau-bench), unbiased the same way.

Both are exact for i.i.d. samples. Candidate 0 of an n-best list is the greedy completion
when `eval.temperature` is 0, so set the evaluation temperature to the samples' one
(`verilearn eval --n N --temperature T`) for i.i.d. candidates. `mart_model_pass_rate`
computes the same figures in SQL from the same counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from math import comb
from typing import Any


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task with `c` of `n` samples correct."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k (all k succeed) of one task with `c` of `n` samples correct."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (n >= 1 and 0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k needs n >= 1, 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")


def record_counts(extra: dict[str, Any], passed: bool, where: str = "record") -> tuple[int, int]:
    """(n, c) of one evaluation record: its n-best counts, else one sample, its verdict."""
    if "n_best" not in extra:
        return 1, int(passed)
    try:
        n, c = int(extra["n_best"]), int(extra["n_best_passed"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: extra n_best/n_best_passed unreadable: {exc}") from exc
    _check(n, c, 1)
    return n, c


def aggregate(counts: Iterable[tuple[int, int]]) -> dict[str, Any]:
    """Mean pass@k and pass^k over tasks for k = 1 .. the smallest n (so every task counts
    at every k): {"tasks", "n", "correct", "pass_at_k": {k: v}, "pass_hat_k": {k: v}}."""
    pairs: Sequence[tuple[int, int]] = list(counts)
    if not pairs:
        return {"tasks": 0, "n": 0, "correct": 0, "pass_at_k": {}, "pass_hat_k": {}}
    n_min = min(n for n, _ in pairs)
    ks = range(1, n_min + 1)
    return {
        "tasks": len(pairs),
        "n": n_min,
        "correct": sum(c for _, c in pairs),
        "pass_at_k": {k: sum(pass_at_k(n, c, k) for n, c in pairs) / len(pairs) for k in ks},
        "pass_hat_k": {k: sum(pass_hat_k(n, c, k) for n, c in pairs) / len(pairs) for k in ks},
    }
