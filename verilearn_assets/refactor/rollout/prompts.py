"""Prompt rendering (`configs/teacher_prompts.yaml`, `refactor:`) and answer parsing.

The actor's prompt is the system block, then one user message: the user block (task, the
code it must change, step, last result) followed by the state block (the `<state>` part,
the rendered agent state).

The code (`code_view`) is the current text of the task's files in scope, read from the
workspace the action will run in, with line numbers, inside `<code>…</code>`: whole files
when they fit `code_chars`, else windows around the lines the task still has to change
(the lines of the target diff's `-` side still present), middle-truncated by the context
budget's `cap_text` as a last resort. A model cannot refactor code it never sees, and a
teacher's reasoning can only point at code the prompt shows.

An answer is `<think>…</think><action>…</action><state_update>…</state_update>`; the action
and the update are then validated against their schemas by the actor loop. `STEP_END`
closes a step: the stop sequence a model is asked with (GRPO, evaluation, the vLLM actors),
so nothing it says past one step is judged or trained on.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from verilearn_assets.core import lake
from verilearn_assets.core.config import StrictConfig, config_dir, load_config, placeholders
from verilearn_assets.core.llm.segments import cap_text
from verilearn_assets.refactor.records import ModelOutput, RefactorTask
from verilearn_assets.refactor.sources.catalog import load_corpus
from verilearn_assets.refactor.verify import toolchains

# the user block's placeholders; the state has a block of its own (`state`)
PLACEHOLDERS = {
    "instruction",
    "repo",
    "files",
    "test_command",
    "step",
    "max_steps",
    "last_result",
    "code",
}
CODE_OPEN, CODE_CLOSE = "<code>\n", "</code>"
NOT_SHOWN = "(no code shown)"
FILE_HEADER = re.compile(r"^### (\S+) \((\d+) lines(?:, excerpt)?\)$")
NUMBERED = re.compile(r"^ *(\d+)\| ?(.*)$")
MAX_FILE_BYTES = 256_000  # a file in scope larger than this is named, never read
WINDOW = 3  # lines of context around a line still to change, in an excerpt
STEP_END = "</state_update>"  # the last block's close: where a step's answer ends


class PromptConfig(StrictConfig):
    system: str
    user: str
    # the `<state>` part of the user message, after the user block
    state: str = "<state>\n{state}\n</state>\n"
    # llm task proposals: a refactoring in words plus a rule, then (triangulation) a rule
    # for the same words written without seeing the first one
    propose_system: str = ""
    # characters of code the user block shows at most (`code_view`); the context budget
    # may cut it further for a small window
    code_chars: int = Field(default=8000, ge=200)
    propose_user: str = "Repository {repo}:\n{code}"
    rule_user: str = "Repository {repo}:\n{code}\nTask: {instruction}"

    @field_validator("user")
    @classmethod
    def _user(cls, value: str) -> str:
        if "state" in {f for _, f, _, _ in string.Formatter().parse(value) if f}:
            raise ValueError("{state} goes in the `state` block, which follows the user block")
        return placeholders(value, PLACEHOLDERS, set())

    @field_validator("state")
    @classmethod
    def _state(cls, value: str) -> str:
        return placeholders(value, {"state"}, {"state"})

    @field_validator("propose_user")
    @classmethod
    def _propose(cls, value: str) -> str:
        return placeholders(value, {"repo", "code"}, {"code"})

    @field_validator("rule_user")
    @classmethod
    def _rule(cls, value: str) -> str:
        return placeholders(value, {"repo", "code", "instruction"}, {"code", "instruction"})


class TeacherPrompts(BaseModel):
    """`teacher_prompts.yaml`: one section per family; each family validates its own."""

    model_config = ConfigDict(extra="ignore")
    refactor: PromptConfig


def load_prompts(directory: str | Path | None = None) -> PromptConfig:
    """The `refactor:` section of `<dir>/teacher_prompts.yaml` (errors: `refactor.<field>`)."""
    return load_config("teacher_prompts", TeacherPrompts, directory).refactor


def read_scope(tree: Path, files: Sequence[str]) -> dict[str, str | None]:
    """Current text of each file in scope; None for one that is missing, not a regular file
    inside `tree` (a link is never followed: the workspace is the model's), or too big
    (checked with `lstat` before reading)."""
    root = tree.resolve()
    out: dict[str, str | None] = {}
    for rel in files:
        path = tree / rel
        try:
            real = path.resolve()
            info = os.lstat(path)
        except (OSError, RuntimeError):
            out[rel] = None
            continue
        inside = root in real.parents and real == root / rel
        if not inside or not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            out[rel] = None
            continue
        out[rel] = path.read_bytes().decode(errors="replace")
    return out


def removed_lines(diff: str) -> dict[str, set[str]]:
    """Per file of a unified diff, the stripped text of its `-` lines (what must change)."""
    out: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in diff.splitlines():
        if line.startswith("--- "):
            name = line[4:].strip()
            current = (
                out.setdefault(name.removeprefix("a/"), set()) if name != "/dev/null" else None
            )
        elif line.startswith("-") and current is not None and line[1:].strip():
            current.add(line[1:].strip())
    return out


def _numbered(lines: list[str], numbers: Sequence[int]) -> list[str]:
    width = max(4, len(str(len(lines))))
    return [f"{n:>{width}}| {lines[n - 1]}".rstrip() for n in numbers]


def _windows(lines: list[str], focus: set[str]) -> list[int]:
    """Line numbers within WINDOW lines of a line whose text is in `focus`, in order."""
    keep: set[int] = set()
    for i, line in enumerate(lines, 1):
        if line.strip() in focus:
            keep.update(range(max(1, i - WINDOW), min(len(lines), i + WINDOW) + 1))
    return sorted(keep)


def code_view(
    texts: Mapping[str, str | None], target_diff: str, budget: int, language: str | None = None
) -> str:
    """The code block of the user message: every file in scope with line numbers, whole
    when all fit `budget`, else windows around its lines still to change (elided runs
    marked `...`), each file then cut to an equal share of `budget` (the context budget's
    middle cut, so every file keeps its header and first lines). With `language`, each
    file's lines sit in a code fence tagged with it (```go), so the language is shown."""
    fence_open, fence_close = ([f"```{language}"], ["```"]) if language else ([], [])
    if not texts:
        return NOT_SHOWN
    whole: list[str] = []
    excerpts: list[str] = []
    todo = removed_lines(target_diff)
    for rel, text in sorted(texts.items()):
        if text is None:
            note = f"### {rel} (not shown: missing, not a regular file or too large)"
            whole.append(note)
            excerpts.append(note)
            continue
        lines = text.splitlines()
        numbered = _numbered(lines, range(1, len(lines) + 1))
        whole += [f"### {rel} ({len(lines)} lines)", *fence_open, *numbered, *fence_close]
        keep = _windows(lines, todo.get(rel, set()))
        part = [f"### {rel} ({len(lines)} lines, excerpt)", *fence_open]
        for i, n in enumerate(keep):
            if i and n != keep[i - 1] + 1:
                part.append("...")
            part += _numbered(lines, [n])
        excerpts.append("\n".join(part + fence_close))
    body = "\n".join(whole)
    if len(body) > budget:
        share = max(budget // len(excerpts) - 1, 1)
        body = "\n".join(cap_text(part, share) for part in excerpts)
    return f"{CODE_OPEN}{body}\n{CODE_CLOSE}"


def parse_code_view(text: str) -> dict[str, dict[int, str]]:
    """The files and numbered lines a prompt's code block shows (what a teacher may cite)."""
    start = text.find(CODE_OPEN)
    end = text.find(CODE_CLOSE, start + 1)
    if start < 0 or end < 0:
        return {}
    out: dict[str, dict[int, str]] = {}
    current: dict[int, str] | None = None
    for line in text[start + len(CODE_OPEN) : end].splitlines():
        header = FILE_HEADER.match(line)
        if header:
            current = out.setdefault(header.group(1), {})
            continue
        numbered = NUMBERED.match(line)
        if numbered and current is not None:
            current[int(numbered.group(1))] = numbered.group(2)
    return out


def catalogued_repos() -> dict[str, Path]:
    """Repository name → its tree, from the corpus catalog of this config dir and home
    (read once per pair; entries that fail are left out, as the task generator does)."""
    return dict(_catalogued(str(config_dir()), str(lake.home())))


@functools.lru_cache(maxsize=8)
def _catalogued(directory: str, home: str) -> tuple[tuple[str, Path], ...]:
    repos = load_corpus(Path(directory), Path(home), strict=False)
    return tuple((r.name, r.path) for r in repos)


def render_messages(
    prompts: PromptConfig,
    task: RefactorTask,
    state_text: str,
    step: int,
    max_steps: int,
    last_result: str,
    tree: Path | None = None,
) -> list[dict[str, Any]]:
    """The actor's chat for one step; `tree` is the workspace the action will run in (its
    files in scope are shown as they are now). Without one, step 1 shows the repository as
    catalogued (what a fresh workspace holds: GRPO's step-1 prompts); a later step shows
    no code rather than code that may be stale."""
    if tree is None and step == 1:
        tree = catalogued_repos().get(task.repo)
    code = NOT_SHOWN
    if tree is not None:
        texts = read_scope(tree, task.files)
        language = toolchains.fence(toolchains.language_of_actions(task.reference_actions))
        code = code_view(texts, task.target_diff, prompts.code_chars, language)
    user = prompts.user.format(
        code=code,
        instruction=task.instruction,
        repo=task.repo,
        files=", ".join(task.files),
        test_command=" ".join(task.test_command),
        step=step,
        max_steps=max_steps,
        last_result=last_result or "(none yet)",
    )
    if not user.endswith("\n"):
        user += "\n"
    user += prompts.state.format(state=state_text)
    return [{"role": "system", "content": prompts.system}, {"role": "user", "content": user}]


def prompt_text(messages: list[dict[str, Any]]) -> str:
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)


class ParseFailure(ValueError):
    """The answer lacks the required blocks; the failure class is `parse`."""


def _block(text: str, tag: str) -> str | None:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    if match:
        return match.group(1).strip()
    # a stop sequence may have cut the last closing tag
    tail = re.search(rf"<{tag}>(.*)\Z", text, re.DOTALL)
    if tail and tag == "state_update":
        return tail.group(1).strip()
    return None


def parse_output(text: str) -> ModelOutput:
    """The three blocks (think and state_update may be empty; an action is required)."""
    action = _block(text, "action")
    if not action:
        raise ParseFailure("no <action>…</action> block in the answer")
    return ModelOutput(
        think=_block(text, "think") or "",
        action=action,
        state_update=_block(text, "state_update") or "",
        raw=text,
    )
