"""Multi-turn GRPO rollouts: the model's turns alternate with a family environment's.

Why a `rollout_func` and not TRL's own agent loop. trl 1.16's `GRPOTrainer` runs
multi-turn episodes through `tools=` / `environment_factory=` (bounded by
`max_tool_calling_iterations`); that loop works on CPU without vLLM, but it only continues
an episode when the reply parses as a structured *tool call* (JSON via the tokenizer's
`response_template`), it refuses a chat template that cannot render a tool call (ours, and
the tiny model's, render `tool` turns without one), and the tool's arguments are the
model's JSON. Our agents do not speak that protocol: the analysis student writes a
```python block and reads the sandbox output as a plain `tool` turn (`teacher/loop.py`),
the refactor actor emits `<action>` blocks. Training them through tool calls would train a
different task from the one `model_eval` measures. So we use the smallest supported
override, `rollout_func(prompts, trainer)`: it generates each turn with TRL's own sampling
step (`trainer._generate_single_turn`: the trainer's model, its generation config and EOS
handling, or its vLLM engine when `use_vllm` is on), hands the reply to the family's
`GrpoEnvironment`, appends the environment's answer rendered by the chat template, and
returns `env_mask` (TRL's documented key) so the loss covers only the model's own tokens.
The environment's score reaches the reward functions as the extra column `env_scores`.

Token layout of one completion (prompt = the environment's opening, generation prompt
included): reply₁ (ends with EOS, loss) · feedback₁ (`\\n<|im_start|>tool …<|im_end|>\\n
<|im_start|>assistant\\n`, no loss) · reply₂ (loss) · … Generated ids are kept as generated
(never re-tokenized), so the trained tokens are exactly the sampled ones. All turns share
`max_completion_length`: a reply cut by it, or feedback that leaves no room for another
reply, ends the episode (`stop`), as TRL's own loop does. An opening longer than `window -
max_completion_length` (a wide table's system prompt) is never generated from: the episode
ends at once as `context_overflow` with a one-token (EOS) completion. Every member of its
group has the same opening, so they all score alike, their advantage is zero and they
teach nothing; `opening_overflows` counts them.

Stop sequences (`GrpoTask.stop`, refactor: `</state_update>`): a reply is cut right after its
first stop (`cut_at_stop`); the turn then ends as one that said EOS, so the episode goes
on (a reply cut by a stop is not a reply cut by the budget).

Every rollout is appended to the run's `rollouts.jsonl` (messages, scores, the completion
ids with their loss mask) so a user can read what the policy did.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from verilearn_assets.core.family import GrpoEnvironment, GrpoEpisode
from verilearn_assets.training.grpo.stop import cut_ids_at_stop, text_before_stop


class TurnGenerator(Protocol):
    """Who writes the assistant turns: one reply (token ids) per prompt, at most
    `max_new_tokens` long, and their per-token logprobs (or None)."""

    def __call__(
        self, trainer: Any, prompt_ids: list[list[int]], max_new_tokens: int
    ) -> tuple[list[list[int]], list[list[float]] | None]: ...


def trainer_generate(
    trainer: Any, prompt_ids: list[list[int]], max_new_tokens: int
) -> tuple[list[list[int]], list[list[float]] | None]:
    """TRL's own sampling step on the policy being trained (module doc), capped to the
    tokens the completion has left."""
    config = getattr(trainer, "generation_config", None)  # absent on the vLLM path
    before = getattr(config, "max_new_tokens", None)
    if config is not None:
        config.max_new_tokens = max_new_tokens
    try:
        ids, logprobs = trainer._generate_single_turn(prompt_ids, None, {}, num_generations=1)
    finally:
        if config is not None:
            config.max_new_tokens = before
    ids = [list(x)[:max_new_tokens] for x in ids]
    if logprobs is not None:
        logprobs = [list(lp)[: len(x)] for lp, x in zip(logprobs, ids, strict=True)]
    return ids, logprobs


def cut_at_stop(tokenizer: Any, reply: list[int], stop: Sequence[str]) -> tuple[list[int], bool]:
    """`reply` ended right after its first stop sequence (`grpo.stop.cut_ids_at_stop`: the
    stop's tokens kept, nothing after) and whether one was hit. A turn that ends at a stop
    ends like one that ended by itself: the environment gets the text before the stop (as
    a vLLM server returns it) and the next turn follows; the EOS that closes it in the chat
    template is appended unsampled, so it takes no loss."""
    if not stop:
        return reply, False

    def decode(x: Sequence[int]) -> str:
        return tokenizer.decode(list(x), skip_special_tokens=True)

    cut = cut_ids_at_stop(reply, decode, stop)
    text = decode(cut)
    return cut, bool(cut) and text_before_stop(text, stop) != text


def feedback_ids(tokenizer: Any, messages: Sequence[dict[str, Any]]) -> list[int]:
    """The tokens the chat template puts between an assistant turn's EOS and the next
    assistant turn's first token, for these environment messages (TRL's own recipe:
    render a dummy conversation with and without them and take the difference)."""
    dummy = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
    prefix = list(
        tokenizer.apply_chat_template(
            dummy, tokenize=True, add_generation_prompt=False, return_dict=False
        )
    )
    full = list(
        tokenizer.apply_chat_template(
            dummy + list(messages), tokenize=True, add_generation_prompt=True, return_dict=False
        )
    )
    eos = [i for i, t in enumerate(prefix) if t == tokenizer.eos_token_id]
    if eos:  # "…<|im_end|>\n": the reply ends at EOS, the newline belongs to the feedback
        prefix = prefix[: eos[-1] + 1]
    if full[: len(prefix)] != prefix:
        raise ValueError(
            "multi-turn GRPO: the chat template is not prefix-preserving (rendering a tool "
            "turn changed the tokens before it); multi-turn rollouts need one that is"
        )
    return full[len(prefix) :]


def prompt_key(prompt: Sequence[dict[str, Any]] | str) -> str:
    """A dataset prompt's identity (TRL hands `rollout_func` prompts, not rows)."""
    if isinstance(prompt, str):
        return prompt
    return json.dumps([[m.get("role"), m.get("content")] for m in prompt])


class MultiTurnRollout:
    """TRL's `rollout_func` over a `GrpoEnvironment` (module doc); also serves the reward
    functions, which read the episodes' scores from the `env_scores` column."""

    def __init__(
        self,
        env: GrpoEnvironment,
        rows: Sequence[dict[str, Any]],
        max_completion_length: int,
        record_path: Path,
        generate: TurnGenerator | None = None,
        window: int | None = None,
    ) -> None:
        self.env = env
        self.tasks: dict[str, str] = {}
        for r in rows:
            key = prompt_key(r["prompt"])
            if self.tasks.setdefault(key, r["task_id"]) != r["task_id"]:
                raise ValueError(
                    f"multi-turn GRPO: tasks {self.tasks[key]!r} and {r['task_id']!r} have the "
                    "same prompt; drop duplicates first (`unique_prompts`)"
                )
        self.max_completion_length = max_completion_length
        self.record_path = Path(record_path)
        self.generate = generate or trainer_generate
        self.window = window
        self.rollouts = 0
        self.batches = 0
        self.opening_overflows = 0

    def task_id(self, prompt: Any) -> str:
        key = prompt_key(prompt)
        if key not in self.tasks:
            raise KeyError(f"multi-turn GRPO: a prompt that is no GRPO task: {key[:200]!r}")
        return self.tasks[key]

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        tok = trainer.processing_class
        eos = set(getattr(trainer, "eos_token_ids", None) or [tok.eos_token_id])
        stops = list(getattr(trainer, "stop_sequences", None) or [])  # grpo/stop.py's trainer
        budget = self.max_completion_length
        task_ids = [self.task_id(p) for p in prompts]
        episodes: list[GrpoEpisode] = []
        try:
            for t in task_ids:
                episodes.append(self.env.reset(t))
            prompt_ids = [
                list(
                    tok.apply_chat_template(
                        e.opening, tokenize=True, add_generation_prompt=True, return_dict=False
                    )
                )
                for e in episodes
            ]
            n = len(episodes)
            comp: list[list[int]] = [[] for _ in range(n)]
            mask: list[list[int]] = [[] for _ in range(n)]
            logps: list[list[float]] | None = [[] for _ in range(n)]
            segments: list[list[dict[str, Any]]] = [[] for _ in range(n)]
            active = list(range(n))
            room = self.window - budget if self.window is not None else None
            for i in range(n):
                if room is not None and len(prompt_ids[i]) > room:
                    episodes[i].stop(
                        f"context_overflow: the opening is {len(prompt_ids[i])} tokens, the "
                        f"window {self.window} minus max_completion_length {budget} leaves "
                        f"{room}"
                    )
                    comp[i], mask[i] = [min(eos)], [1]
                    logps = None  # nothing was sampled for this one
                    self.opening_overflows += 1
                    active.remove(i)
            while active:
                left = [budget - len(comp[i]) for i in active]
                ids, lps = self.generate(
                    trainer, [prompt_ids[i] + comp[i] for i in active], max(left)
                )
                if lps is None:
                    logps = None
                still = []
                for k, i in enumerate(active):
                    reply, at_stop = cut_at_stop(tok, ids[k][: left[k]], stops)
                    comp[i] += reply
                    mask[i] += [1] * len(reply)
                    if logps is not None and lps is not None:
                        logps[i] += list(lps[k][: len(reply)])
                    text = tok.decode(reply, skip_special_tokens=True)
                    segments[i].append(
                        {"role": "assistant", "text": text, "tokens": len(reply), "loss": True}
                    )
                    if at_stop and reply[-1] not in eos and len(comp[i]) < budget:
                        comp[i].append(min(eos))  # the turn's end, as if said; not sampled: no loss
                        mask[i].append(0)
                        if logps is not None:
                            logps[i].append(0.0)
                    elif not reply or reply[-1] not in eos:
                        episodes[i].stop(f"completion budget of {budget} tokens spent mid-reply")
                        continue
                    feedback, done = episodes[i].step(text_before_stop(text, stops))
                    if done:
                        continue
                    fb = feedback_ids(tok, feedback)
                    if len(comp[i]) + len(fb) >= budget:
                        episodes[i].stop(f"completion budget of {budget} tokens spent")
                        continue
                    comp[i] += fb
                    mask[i] += [0] * len(fb)
                    if logps is not None:
                        logps[i] += [0.0] * len(fb)
                    segments[i].append(
                        {
                            "role": "feedback",
                            "text": tok.decode(fb, skip_special_tokens=False),
                            "tokens": len(fb),
                            "loss": False,
                        }
                    )
                    still.append(i)
                active = still
            scores = [e.score() for e in episodes]
            records = [e.record() for e in episodes]
        except BaseException:
            for e in episodes:
                e.stop("rollout aborted")
            raise
        turns = [sum(s["role"] == "assistant" for s in seg) for seg in segments]
        self._write(trainer, records, scores, comp, mask, segments, turns)
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": comp,
            "logprobs": logps,
            "env_mask": mask,
            "env_scores": scores,
            "env_turns": turns,
        }

    def _write(
        self,
        trainer: Any,
        records: list[dict[str, Any]],
        scores: list[dict[str, float]],
        comp: list[list[int]],
        mask: list[list[int]],
        segments: list[list[dict[str, Any]]],
        turns: list[int],
    ) -> None:
        step = int(getattr(getattr(trainer, "state", None), "global_step", 0) or 0)
        self.record_path.parent.mkdir(parents=True, exist_ok=True)
        with self.record_path.open("a") as f:
            for k, rec in enumerate(records):
                line = {
                    "step": step,
                    "batch": self.batches,
                    "rollout": self.rollouts + k,
                    **rec,
                    "scores": scores[k],
                    "generated_turns": turns[k],
                    "segments": segments[k],
                    "completion_ids": comp[k],
                    "loss_mask": mask[k],
                }
                f.write(json.dumps(line) + "\n")
        self.rollouts += len(records)
        self.batches += 1

    def reward_function(self, name: str, first: bool = False) -> Callable[..., list[float]]:
        """Reward `name` of each episode's score; the first one also logs the turn counts."""

        def reward(
            prompts: list, completions: list, env_scores: list[dict[str, float]], **kw: Any
        ) -> list[float]:
            missing = [i for i, s in enumerate(env_scores) if name not in s]
            if missing:
                raise KeyError(
                    f"multi-turn GRPO: episode score lacks {name!r} (got {env_scores[0]})"
                )
            turns = kw.get("env_turns")
            log_metric = kw.get("log_metric")
            if first and turns and log_metric is not None:
                log_metric("turns/mean", sum(turns) / len(turns))
                log_metric("turns/multi_share", sum(t > 1 for t in turns) / len(turns))
            return [float(s[name]) for s in env_scores]

        reward.__name__ = name  # TRL logs rewards/<__name__>/mean|std
        return reward


def unique_prompts(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Rows with a prompt seen before dropped (same prompt = same task for the model)."""
    seen: set[str] = set()
    out = []
    for r in rows:
        key = prompt_key(r["prompt"])
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out, len(rows) - len(out)
