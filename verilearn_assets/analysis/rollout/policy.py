"""Teacher policies: given the conversation so far, return the next assistant message.

`ProgramPolicy` replays a question's verified reference code as a sequence of cells, so
the whole graph runs with no model at all; `VllmPolicy` asks the vLLM server. Tests may
add a scripted policy — anything with `next_message` fits the `Policy` protocol. A policy
with a `budget` attribute (a `ContextBudget`) gets every prompt fitted to it first.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from verilearn_assets.analysis.records import Message
from verilearn_assets.analysis.rollout.config import SamplingConfig
from verilearn_assets.analysis.rollout.grounding import normalize_line
from verilearn_assets.analysis.rollout.parse import format_reply
from verilearn_assets.core.llm.fit import ContextBudget


@dataclass(frozen=True)
class PolicyReply:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


@runtime_checkable
class Policy(Protocol):
    name: str

    async def next_message(self, conversation: list[Message]) -> PolicyReply: ...


# --- the program teacher -------------------------------------------------------------
MAX_STATEMENTS_PER_CELL = 3


@dataclass
class Cell:
    """One replayed cell: its code and the one-line reasoning shown before it."""

    code: str
    reasoning: str


@dataclass
class _Chunk:
    text: str
    kind: str  # import | hook | submit | code
    comment: str | None
    targets: list[str] = field(default_factory=list)
    hook_names: list[str] = field(default_factory=list)
    hook_lines: list[str] = field(default_factory=list)  # code lines the hooks name


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        fn = node.value.func
        if isinstance(fn, ast.Name):
            return fn.id
    return None


def _calls_to(node: ast.AST, name: str) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
    ]


def _targets(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign):
        return [ast.unparse(t) for t in node.targets]
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [ast.unparse(node.target)]
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return [node.name]
    return []


def _constant_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _hook_claims(node: ast.AST) -> tuple[list[str], list[str]]:
    """Names and code lines of the `hook(value, code_line, name=...)` calls in `node`."""
    names, lines = [], []
    for call in _calls_to(node, "hook"):
        kwargs = {k.arg: k.value for k in call.keywords}
        line = _constant_str(call.args[1] if len(call.args) > 1 else kwargs.get("code_line"))
        name = _constant_str(call.args[2] if len(call.args) > 2 else kwargs.get("name"))
        if line is not None:
            lines.append(line)
            match = re.match(r"\s*([A-Za-z_]\w*)\s*=(?!=)", line)
            name = name or (match.group(1) if match else None)
        if name:
            names.append(name)
    return names, lines


def _chunks(code: str) -> list[_Chunk]:
    """Top-level statements with the comment/blank lines above each one attached."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ValueError(f"reference code does not parse (line {exc.lineno}): {exc.msg}") from exc
    lines = code.splitlines()
    out: list[_Chunk] = []
    start = 0
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        end = node.end_lineno or node.lineno
        text = "\n".join(lines[start:end]).strip("\n")
        lead = [ln.strip() for ln in lines[start : first - 1] if ln.strip().startswith("#")]
        comment = lead[-1].lstrip("#").strip() if lead else None
        hook_names, hook_lines = _hook_claims(node)
        name = _call_name(node)
        if isinstance(node, ast.Import | ast.ImportFrom):
            kind = "import"
        elif name == "hook":
            kind = "hook"
        elif _calls_to(node, "submit"):
            kind = "submit"
        else:
            kind = "code"
        out.append(_Chunk(text, kind, comment or None, _targets(node), hook_names, hook_lines))
        start = end
    return out


def _reasoning(chunks: Sequence[_Chunk]) -> str:
    """A one-line reason for a cell, taken from its code (comment, hooks, targets)."""
    for c in chunks:
        if c.comment:
            return c.comment[0].upper() + c.comment[1:]
    if any(c.kind == "submit" for c in chunks) and all(
        c.kind in ("submit", "import") for c in chunks
    ):
        return "Submit the answer."
    hooks = [h for c in chunks for h in c.hook_names]
    if hooks:
        return "Compute and record " + ", ".join(hooks) + "."
    targets = [t for c in chunks for t in c.targets]
    if targets:
        return "Compute " + ", ".join(f"`{t}`" for t in dict.fromkeys(targets)) + "."
    return "Look at the data."


def _home_group(groups: Sequence[Sequence[_Chunk]], claimed: Sequence[str]) -> int:
    """Index of the latest group holding one of the `claimed` lines (default: the last)."""
    wanted = {normalize_line(x) for x in claimed}
    for i in range(len(groups) - 1, -1, -1):
        lines = {normalize_line(x) for c in groups[i] for x in c.text.splitlines()}
        if wanted & lines:
            return i
    return len(groups) - 1


def split_cells(code: str, max_cells: int | None = None) -> list[Cell]:
    """Split reference code into notebook-like cells.

    A step is one to three statements; a `hook(...)` call stays in the cell of the line it
    records (so it grounds against the same cell); imports join the next step; the
    `submit(...)` statement and anything after it form the last cell.
    """
    groups: list[list[_Chunk]] = []
    pending_imports: list[_Chunk] = []
    tail: list[_Chunk] = []
    for chunk in _chunks(code):
        if tail or chunk.kind == "submit":
            tail.append(chunk)
        elif chunk.kind == "import":
            pending_imports.append(chunk)
        elif chunk.kind == "hook" and groups:
            # The hook joins the cell holding the line it records; if that line sits in
            # an earlier cell, the cells in between merge so execution order is kept.
            home = _home_group(groups, chunk.hook_lines)
            if home < len(groups) - 1:
                groups[home:] = [[c for g in groups[home:] for c in g]]
            groups[-1].append(chunk)
        else:
            current = groups[-1] if groups else None
            closed = (
                current is None
                or any(c.kind == "hook" for c in current)
                or sum(c.kind == "code" for c in current) >= MAX_STATEMENTS_PER_CELL
            )
            if closed or pending_imports:
                groups.append([*pending_imports, chunk])
                pending_imports = []
            else:
                current.append(chunk)
    if pending_imports:
        tail = [*pending_imports, *tail]
    if tail:
        groups.append(tail)
    if not groups:
        raise ValueError("reference code has no statements")
    if max_cells is not None:
        while len(groups) > max(max_cells, 1):
            # merge the adjacent pair with the fewest lines; the submit cell stays last
            sizes = [
                sum(c.text.count("\n") + 1 for c in groups[i] + groups[i + 1])
                for i in range(len(groups) - 1)
            ]
            i = sizes.index(min(sizes))
            groups[i : i + 2] = [groups[i] + groups[i + 1]]
    return [Cell("\n".join(c.text for c in g), _reasoning(g)) for g in groups]


class ProgramPolicy:
    """Replays verified reference code cell by cell: the model-free default teacher."""

    name = "program"

    def __init__(self, question_code: str, max_cells: int | None = None) -> None:
        self.cells = split_cells(question_code, max_cells)

    async def next_message(self, conversation: list[Message]) -> PolicyReply:
        done = sum(1 for m in conversation if m.role == "assistant" and m.kind == "reply")
        if done >= len(self.cells):
            # The replay is exhausted without the loop ending: say so in words; the loop
            # treats it as a format error and ends the episode within its bound.
            return PolicyReply("The reference program has no further cells.")
        cell = self.cells[done]
        return PolicyReply(format_reply(cell.reasoning, cell.code))


# --- the vLLM teacher ----------------------------------------------------------------
def chat_messages(conversation: Sequence[Message]) -> list[dict[str, str]]:
    """OpenAI chat messages for a conversation, byte-for-byte the stored messages.

    Tool output keeps its `tool` role: SFT rows train on `tool` turns, so a trained student
    must be prompted with the same turns at evaluation (ChatML templates such as Qwen's and
    our tiny model's render a `tool` turn without a tool call; vLLM accepts it without a
    `tool_call_id`).
    """
    return [{"role": m.role, "content": m.content} for m in conversation]


class VllmPolicy:
    """Asks the vLLM server (through `VllmClient.chat`) for the next message."""

    name = "vllm"

    def __init__(self, client: Any, sampling: SamplingConfig, seed: int) -> None:
        self.client = client
        self.sampling = sampling
        self.seed = seed

    @property
    def budget(self) -> ContextBudget | None:
        """The window this policy's requests must fit; the loop fits every prompt to it."""
        return self.client.budget(self.sampling.max_tokens)

    async def next_message(self, conversation: list[Message]) -> PolicyReply:
        result = await self.client.chat(
            chat_messages(conversation), seed=self.seed, **self.sampling.params()
        )
        return PolicyReply(
            result.text, int(result.prompt_tokens or 0), int(result.completion_tokens or 0)
        )
