"""Stop sequences in GRPO rollouts: the family's `GrpoTask.stop()`, as evaluation sends them.

A family's model is asked with stop sequences (dafny: the end of the body's code fence, the
next `method`/`lemma`), so what it says past them is never judged at evaluation. GRPO
samples with transformers' `generate`, which TRL calls without the tokenizer that
`stop_strings` needs; so every sampled completion is cut here, right after the token that
completes the first stop sequence:

- generation: the completion ids TRL keeps end at the stop (the stop's own tokens stay, so
  the policy learns to emit it and end there); tokens sampled past it are discarded;
- loss mask: TRL masks by the kept ids, so no token past the stop takes loss;
- rewards: the scorer sees the text before the stop sequence, as a vLLM server returns it
  (`include_stop_str_in_output` off), so a reward in training is the verdict evaluation
  gives the same answer.

Multi-turn rollouts (`grpo_rollout.trainer_generate`) go through the same cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def text_before_stop(text: str, stop: Sequence[str]) -> str:
    """`text` up to (not including) the earliest stop sequence; unchanged without one."""
    hits = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return text[: min(hits)] if hits else text


def cut_ids_at_stop(
    ids: Sequence[int], decode: Callable[[Sequence[int]], str], stop: Sequence[str]
) -> list[int]:
    """The shortest prefix of `ids` whose decoded text holds a stop sequence (so the stop's
    tokens are kept); all of `ids` when none appears. Binary search: containing a stop is
    monotone in the prefix length."""
    ids = list(ids)
    if not stop or text_before_stop(decode(ids), stop) == decode(ids):
        return ids
    lo, hi = 1, len(ids)  # decode(ids[:hi]) holds a stop
    while lo < hi:
        mid = (lo + hi) // 2
        text = decode(ids[:mid])
        if text_before_stop(text, stop) != text:
            hi = mid
        else:
            lo = mid + 1
    return ids[:hi]


def stopping_trainer(base: type, stop: Sequence[str]) -> type:
    """A subclass of TRL's `GRPOTrainer` (`base`) whose sampled completions end at the first
    of `stop` (module doc)."""
    stops = list(stop)

    class StoppingGRPOTrainer(base):  # type: ignore[misc, valid-type]
        stop_sequences = stops

        def _generate_single_turn(self, *args: Any, **kwargs: Any) -> Any:
            completion_ids, logprobs = super()._generate_single_turn(*args, **kwargs)
            tok = self._tokenizer

            def decode(x: Sequence[int]) -> str:
                return tok.decode(list(x), skip_special_tokens=True)

            cut = [cut_ids_at_stop(ids, decode, stops) for ids in completion_ids]
            if logprobs is not None:
                logprobs = [list(lp)[: len(c)] for lp, c in zip(logprobs, cut, strict=True)]
            return cut, logprobs

    return StoppingGRPOTrainer
