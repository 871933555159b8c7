"""Writer and annotator prompts (chat messages) and the stop sequences that keep a model
from writing past the method body. `strict` asks for the body only; `permissive` lets
the model think first but still takes only the last fenced block."""

from __future__ import annotations

import re
from typing import Literal, Protocol

Variant = Literal["strict", "permissive"]
STOP = ["\n```\n", "\nmethod ", "\nlemma ", "\nfunction "]
SYSTEM = {
    "writer": (
        "You write Dafny 2.3 method bodies. Keep the given signature and specification "
        "exactly; answer with the body only, from its opening '{' to its closing '}', in "
        "one ```dafny block."
    ),
    "annotator": (
        "You add the proof hints (loop invariants, decreases clauses, assert statements) "
        "that make a Dafny 2.3 method body verify. Do not change the code, the signature or "
        "the specification, and never use assume, {:axiom}, {:verify false} or {:extern}. "
        "Answer with the annotated body only, in one ```dafny block."
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
) -> list[dict[str, str]]:
    """Chat messages; `shots` are (user, assistant) pairs drawn from the train split only."""
    system = SYSTEM[role]
    if variant == "permissive":
        system += " You may reason briefly before the block."
    out = [{"role": "system", "content": system}]
    for user, assistant in shots or []:
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    out.append({"role": "user", "content": user_prompt(task, role, body)})
    return out


def answer(text: str) -> str:
    """The body a model gave: the last ```dafny block if any, else the text itself."""
    blocks = re.findall(r"```(?:dafny)?\n(.*?)(?:```|$)", text, flags=re.S)
    return (blocks[-1] if blocks else text).strip("\n")


def fenced(body: str) -> str:
    return f"```dafny\n{body.strip()}\n```"
