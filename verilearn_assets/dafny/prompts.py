"""Writer and annotator prompts (chat messages) and the stop sequences that keep a model
from writing past the method body. `strict` asks for the body only; `permissive` lets
the model think first but still takes only the last fenced block.

`role_prompt` is the one builder of a role's prompt from configs/dafny_prompts.yaml: SFT
rows (`sft.py`), GRPO and evaluation (`grpo.py`: `DafnyGrpo.prompts`, which
`verilearn eval` asks too, and the cascade's annotator turn) all call it, so a model trains
on the prompt it is evaluated with. `completion` is the answer a role is taught to give: the
fenced body ended by the stop sequence evaluation stops at, so the model learns to stop
there. The vllm teacher adds few-shot pairs (`few_shot`) to the same prompt.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import Field

from verilearn_assets.core.config import StrictConfig, load_config

Variant = Literal["strict", "permissive"]
Role = Literal["writer", "annotator"]


class Generation(StrictConfig):
    temperature: float = Field(0.8, ge=0.0)
    top_p: float = Field(0.95, gt=0.0, le=1.0)
    min_p: float = Field(0.0, ge=0.0, le=1.0)
    max_tokens: int = Field(512, ge=1)

    def as_request(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "min_p": self.min_p,  # a vLLM sampling parameter beside the OpenAI ones
        }


class PromptConfig(StrictConfig):
    variant: Variant = "strict"
    few_shot: int = Field(0, ge=0)
    few_shot_seed: int = 0
    stop: list[str] = Field(default_factory=lambda: list(STOP))
    system: dict[Role, str] = Field(default_factory=lambda: dict(SYSTEM))
    permissive_suffix: str = " You may reason briefly before the block."
    generation: Generation = Field(default_factory=Generation)


def load_prompt_config(directory: str | Path | None = None) -> PromptConfig:
    return load_config("dafny_prompts", PromptConfig, directory)


STOP = ["\n```\n", "\nmethod ", "\nlemma ", "\nfunction "]
SYSTEM: dict[Role, str] = {
    "writer": (
        "You write Dafny 2.3 method bodies that verify against the given specification. "
        "Keep the given signature and specification exactly; you may include the loop invariants, "
        "decreases clauses and assert statements your body needs. Never use assume, a loop "
        "or forall statement without a body, or attributes other than {:trigger} and "
        "{:induction}. Answer with the body only, from its opening '{' to its closing '}', "
        "in one ```dafny block."
    ),
    "annotator": (
        "You add the proof hints (loop invariants, decreases clauses, assert statements) "
        "that make a Dafny 2.3 method body verify. Do not change the code, the signature or "
        "the specification, and never use assume, a loop or forall statement without a "
        "body, or attributes other than {:trigger} and {:induction}. Answer with the "
        "annotated body only, in one ```dafny block."
    ),
}


class PromptSource(Protocol):
    """A task or a trajectory: both carry the pieces of the prompt."""

    prefix: str
    suffix: str
    spec: str
    body: str


def user_prompt(task: PromptSource, role: str, body: str | None = None) -> str:
    context = (task.prefix + task.suffix).strip()
    parts = []
    if context:
        parts.append(f"Context (declarations the method may use):\n```dafny\n{context}\n```")
    parts.append(f"Method signature and specification:\n```dafny\n{task.spec.rstrip()}\n```")
    if role == "annotator":
        parts.append(f"Method body to annotate:\n```dafny\n{(body or task.body).strip()}\n```")
    return "\n\n".join(parts)


def messages(
    task: PromptSource,
    role: str,
    body: str | None = None,
    variant: Variant = "strict",
    shots: list[tuple[str, str]] | None = None,
    config: PromptConfig | None = None,
) -> list[dict[str, str]]:
    """Chat messages; `shots` are (user, assistant) pairs from `few_shot_pairs`."""
    cfg = config or PromptConfig(variant=variant)
    system = cfg.system[role]  # type: ignore[index]
    if cfg.variant == "permissive":
        system += cfg.permissive_suffix
    out = [{"role": "system", "content": system}]
    for user, assistant in shots or []:
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    out.append({"role": "user", "content": user_prompt(task, role, body)})
    return out


def role_prompt(
    task: PromptSource,
    role: str,
    body: str | None = None,
    config: PromptConfig | None = None,
) -> list[dict[str, str]]:
    """The chat a model is asked in `role` (writer, annotator; `body` the code an annotator
    is shown, default the task's): configs/dafny_prompts.yaml's system text and variant
    (loaded when `config` is None), no few-shot pairs. SFT, GRPO and evaluation prompts."""
    if role not in ("writer", "annotator"):
        raise ValueError(f"dafny prompt: role must be writer or annotator, got {role!r}")
    return messages(task, role, body, config=config or load_prompt_config())


def completion(answer: str, config: PromptConfig | None = None) -> str:
    """What a role is taught to say for `answer`: the fenced block, then the rest of the
    first configured stop sequence that closes the fence (`\n```\n` adds the newline), so
    the text ends where evaluation stops the model. Unchanged when no stop closes a fence."""
    text = fenced(answer)
    for stop in (config or load_prompt_config()).stop:
        for k in range(len(stop), 0, -1):
            if "```" in stop[:k] and text.endswith(stop[:k]):
                return text + stop[k:]
    return text


def answer(text: str) -> str:
    """The body a model gave: the last ```dafny block if any, else the text itself."""
    blocks = re.findall(r"```(?:dafny)?\n(.*?)(?:```|$)", text, flags=re.S)
    return (blocks[-1] if blocks else text).strip("\n")


def fenced(body: str) -> str:
    return f"```dafny\n{body.strip()}\n```"


class TrainTask(Protocol):
    split: str
    role: str
    status: str
    id: str
    prefix: str
    suffix: str
    spec: str
    body: str
    target: str
    annotated_body: str


def few_shot_pairs(tasks: Sequence[TrainTask], role: str, n: int, seed: int = 0) -> list:
    """`n` worked (user, assistant) pairs of `role` from accepted *train* tasks; a task from
    another split is an error (it would leak evaluation programs into prompts)."""
    leaked = sorted({t.split for t in tasks if t.split != "train"})
    if leaked:
        raise ValueError(f"few-shot examples must come from the train split, got {leaked}")
    pool = sorted((t for t in tasks if t.status == "accepted"), key=lambda t: t.id)
    chosen = random.Random(seed).sample(pool, min(n, len(pool)))
    answer_of = {"writer": lambda t: t.body, "annotator": lambda t: t.annotated_body}[role]
    return [(user_prompt(t, role), fenced(answer_of(t))) for t in chosen]
