"""Teachers: who writes the `<think>/<action>/<state_update>` answer of a step.

- `program`: replays the reference actions that made the task (no model; the default);
- `vllm`: a served model through the shared client (`core/llm/client.py`: several servers,
  retries, health), with a fallback chain of models. Actors are declared in
  `configs/vllm_actors.yaml`; quantization, tensor-parallel size and device ids are
  deployment metadata.

Every vLLM prompt is fitted to the served window by the context budget (`actor_messages`:
the `<state>` block loses its oldest items first, the last result's file list is
middle-truncated last; the system prompt and the task lines are never cut). A prompt that
still does not fit, or a server 400 for length, raises `ContextOverflow` at once — never
the next fallback model, which would be sent the same prompt — and the actor records that
step with failure class `context_overflow`.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml
from pydantic import Field, field_validator

from verilearn_assets.core.config import StrictConfig, load_config
from verilearn_assets.core.llm.budget_records import BudgetCounts
from verilearn_assets.core.llm.client import VllmClient, VllmError
from verilearn_assets.core.llm.config import SamplingDefaults, VllmConfig
from verilearn_assets.core.llm.fit import ContextOverflow
from verilearn_assets.core.llm.segments import (
    BudgetMessage,
    Keep,
    RenderingsSegment,
    Segment,
    TextSegment,
    keep_all,
    split_around,
)
from verilearn_assets.refactor.records import RefactorTask
from verilearn_assets.refactor.rollout.prompts import parse_code_view
from verilearn_assets.refactor.rollout.state import DROP_ORDER, State, render
from verilearn_assets.refactor.sources.catalog import scoped_function
from verilearn_assets.refactor.verify import toolchains
from verilearn_assets.refactor.verify.jail_policy import ast_grep_binary
from verilearn_assets.refactor.verify.languages import ast_grep_name, language_of_path


class Teacher(Protocol):
    name: str
    model: str

    async def respond(
        self, messages: list[dict[str, Any]], task: RefactorTask, step: int, state: State, seed: int
    ) -> str: ...


@dataclass(frozen=True)
class Place:
    """One place of the shown code a rule rewrites: where, the line now, the line after."""

    path: str
    line: int
    lines: int  # how many lines the match spans
    before: str
    after: str

    def cite(self, width: int = 90) -> str:
        more = f" (+{self.lines - 1} lines)" if self.lines > 1 else ""
        return f"{self.path}:{self.line} `{_short(self.before, width)}`{more}"


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def shown_places(
    view: dict[str, dict[int, str]], actions: list[dict[str, Any]]
) -> list[list[Place]]:
    """Per rule action, the places of the shown code (`prompts.parse_code_view`) its rule
    rewrites, found by ast-grep (one host run over the shown lines only, never the
    workspace: elided lines are blank, so nothing outside the prompt is ever cited)."""
    rules = []
    for i, action in enumerate(actions):
        if action.get("kind") == "rule":  # a rule file's documents: one id per document
            docs = action["rule"] if isinstance(action["rule"], list) else [action["rule"]]
            rules += [
                yaml.safe_dump({**doc, "id": f"step-{i}-{j}"}, sort_keys=False)
                for j, doc in enumerate(docs)
                if isinstance(doc, dict)
            ]
    found: list[list[Place]] = [[] for _ in actions]
    if not rules or not view:
        return found
    with tempfile.TemporaryDirectory(prefix="refactor-teacher-") as tmp:
        for rel, numbered in view.items():
            if not numbered or language_of_path(rel) is None:  # a file ast-grep parses
                continue
            lines = [""] * max(numbered)
            for n, text in numbered.items():
                lines[n - 1] = text
            path = Path(tmp, rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n")
        done = subprocess.run(
            [ast_grep_binary(), "scan", "--inline-rules", "\n---\n".join(rules), "--json=compact"],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"program teacher: ast-grep over the shown code failed: {done.stderr}")
    by_line: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for match in json.loads(done.stdout or "[]"):
        i = int(str(match["ruleId"]).removeprefix("step-").split("-")[0])
        paths = actions[i].get("paths") or []
        rel = Path(match["file"]).as_posix().removeprefix("./")
        if paths and not any(rel == p or rel.startswith(p.rstrip("/") + "/") for p in paths):
            continue
        by_line.setdefault((i, rel, match["range"]["start"]["line"]), []).append(match)
    for (i, rel, start), matches in sorted(by_line.items()):
        found[i].append(_place(rel, start, matches))
    return found


def _place(rel: str, start: int, matches: list[dict[str, Any]]) -> Place:
    """The place of the matches starting on one line: the line now and after every
    replacement on it (right to left, so earlier columns stay valid)."""
    src = matches[0]["lines"]
    first = src.splitlines()[0] if src else ""
    end = max(m["range"]["end"]["line"] for m in matches)
    after = first
    for m in sorted(matches, key=lambda m: -m["range"]["start"]["column"]):
        col, text = m["range"]["start"]["column"], m["text"]
        new = m.get("replacement", text)
        if "\n" in text or after[col : col + len(text)] != text:
            whole = (
                src[: m["charCount"]["leading"]]
                + new
                + src[len(src) - m["charCount"]["trailing"] :]
            )
            after = whole.splitlines()[0] if whole.strip() else ""
            break
        after = after[:col] + new + after[col + len(text) :]
    return Place(rel, start + 1, end - start + 1, first, after.splitlines()[0] if after else "")


def _shape(action: dict[str, Any]) -> str:
    """The rewrite's structural shape in words, from the rule itself (never its id)."""
    rule = action.get("rule") or {}
    rule = (rule[0] if rule else {}) if isinstance(rule, list) else rule  # the first document
    body = rule.get("rule") or {}
    if "all" in body and isinstance(body["all"], list) and body["all"]:
        body = body["all"][0]  # a rule scoped to one function: its own rule comes first
    pattern, fix = body.get("pattern"), rule.get("fix")
    if isinstance(pattern, str) and isinstance(fix, str) and not re.fullmatch(r"\$\w+", pattern):
        return f"`{_short(pattern, 60)}` becomes `{_short(fix, 60)}`"
    message = str(rule.get("message") or "").strip()
    return message or "one structural rewrite of these lines"


def _scope(action: dict[str, Any]) -> tuple[str, str]:
    """(where the rule runs, why) from the action's paths and an `inside` function."""
    paths = ", ".join(action.get("paths") or [])
    function = scoped_function(action.get("rule") or {})
    if function is not None:
        return (
            f"inside the function {function} of {paths}",
            "the task limits the change to that function, so the rule is wrapped in an "
            "`inside` of its definition and the same shape elsewhere stays as it is",
        )
    if paths:
        return paths, "the task names only that file, so the action is limited to it"
    return "the whole repository", "the task asks for every such place, so no path limit"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _unscoped(action: dict[str, Any]) -> dict[str, Any] | None:
    """A function-scoped rule action without its `inside` (same paths): where the shape
    is that the scope leaves alone. None for any other action."""
    rule = action.get("rule") or {}
    if scoped_function(rule) is None:
        return None
    return {**action, "rule": {**rule, "rule": rule["rule"]["all"][0]}}


def program_answer(
    messages: list[dict[str, Any]], task: RefactorTask, step: int
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(think, action, state update) of the program teacher at `step`: the reference
    action, with reasoning about the code the prompt shows (what this rewrite reaches there,
    where, why this shape and scope, what is left after it), never a rule's id."""
    actions = task.reference_actions
    user = str(messages[-1]["content"]) if messages else ""
    view = parse_code_view(user)
    if step > len(actions):
        think = "Every planned rewrite is applied; I re-run the tests to confirm the tree."
        update: dict[str, Any] = {"history": [f"step {step}: re-ran the tests"]}
        return think, {"kind": "command", "argv": list(task.test_command)}, update
    action = actions[step - 1]
    unscoped = _unscoped(action)
    places = shown_places(view, [*actions[step - 1 :], *([unscoped] if unscoped else [])])
    if unscoped:
        here_lines = {(p.path, p.line) for p in places[0]}
        spared = [p for p in places.pop() if (p.path, p.line) not in here_lines]
    else:
        spared = []
    here, later = places[0], [p for rest in places[1:] for p in rest]
    where, why_scope = _scope(action)
    shape = _shape(action)
    shown = ", ".join(sorted(view)) or "no file"
    language = ast_grep_name(toolchains.language_of_actions(actions))  # Go, JavaScript, ...
    lines = [f"Step {step} of {len(actions)}. The {language} code shows {shown}."]
    if here:
        files = ", ".join(sorted({p.path for p in here}))
        lines.append(
            f"{_count(len(here), 'place')} in {files} still "
            f"{'has' if len(here) == 1 else 'have'} the shape this part of the task is about:"
        )
        lines += [f"- {p.cite()} -> `{_short(p.after, 90)}`" for p in here[:6]]
        if len(here) > 6:
            lines.append(f"- and {len(here) - 6} more of the same shape")
        lines.append(
            f"{'Its' if len(here) == 1 else 'They share one'} structure ({shape}) is what a "
            "single ast-grep rule with a fix rewrites, leaving every other line alone."
        )
    else:
        lines.append(
            "None of the shown lines has the shape yet (the excerpt may leave it out); "
            f"the rewrite ({shape}) runs where the task points."
        )
    lines.append(f"Scope: {where}; {why_scope}.")
    if spared:
        cites = ", ".join(p.cite(50) for p in spared[:3])
        lines.append(
            f"The same shape outside that function ({cites}) must stay as it is, so a rule "
            "without the `inside` would do too much."
        )
    if step < len(actions):
        rest = (
            f"{_count(len(later), 'more place')} shown ({', '.join(p.cite(40) for p in later[:3])})"
            if later
            else "the places it changes"
        )
        lines.append(f"What is left: the task's next part, {rest}, in the next step.")
    else:
        lines.append("What is left: nothing after this; the tests must still pass.")
    think = "\n".join(lines)
    summary = f"{_count(len(here), 'place')} in {where}" if here else where
    update = {"history": [f"step {step}: rewrote {summary}"[:256]]}
    if step == 1:
        update["goals"] = [task.instruction[:256]]
        update["constraints"] = ["keep the repository's tests passing"]
    update["decisions"] = [f"one rule for the shape: {shape}"[:256]]
    update["next_focus"] = (
        "the task's next part" if step < len(actions) else "check the tests and stop"
    )
    return think, action, update


class ProgramTeacher:
    """Replays `task.reference_actions` one per step; its `<think>` reasons about the code
    the prompt shows (`program_answer`)."""

    name = "program"
    model = "program"

    async def respond(
        self, messages: list[dict[str, Any]], task: RefactorTask, step: int, state: State, seed: int
    ) -> str:
        think, action, update = await asyncio.to_thread(program_answer, messages, task, step)
        return (
            f"<think>{think}</think>\n<action>{json.dumps(action)}</action>\n"
            f"<state_update>{json.dumps(update)}</state_update>"
        )


class ActorConfig(StrictConfig):
    name: str
    base_urls: list[str] = Field(min_length=1)
    model: str
    fallback_models: list[str] = Field(default_factory=list)
    quantization: str | None = None  # deployment metadata
    tensor_parallel_size: int = Field(default=1, ge=1)  # deployment metadata
    gpu_memory_utilization: float | None = Field(default=None, gt=0.0, le=1.0)  # launcher
    device_ids: list[int] = Field(default_factory=list)  # deployment metadata
    sampling: SamplingDefaults = Field(default_factory=SamplingDefaults)
    stop: list[str] = Field(default_factory=lambda: ["</state_update>"])

    @field_validator("device_ids")
    @classmethod
    def _devices(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value) or any(v < 0 for v in value):
            raise ValueError(f"device ids must be distinct and non-negative: {value}")
        return value

    def vllm_config(self, model: str) -> VllmConfig:
        return VllmConfig(base_urls=self.base_urls, model=model, sampling=self.sampling)


class ActorsConfig(StrictConfig):
    actors: list[ActorConfig] = Field(min_length=1)

    @field_validator("actors")
    @classmethod
    def _unique(cls, value: list[ActorConfig]) -> list[ActorConfig]:
        names = [a.name for a in value]
        if len(names) != len(set(names)):
            raise ValueError(f"duplicate actor names: {names}")
        return value

    def actor(self, name: str) -> ActorConfig:
        for actor in self.actors:
            if actor.name == name:
                return actor
        raise ValueError(f"no actor {name!r} in vllm_actors.yaml ({[a.name for a in self.actors]})")


def load_actors(directory: str | Path | None = None) -> ActorsConfig:
    return load_config("vllm_actors", ActorsConfig, directory)


KEPT_STATE = ("goals", "constraints")  # the task's contract: the budget never drops them
# `actor.last_result`'s file list: "action ok, files changed: a.py, b.py, tests passed"
_FILES_CHANGED = re.compile(r"files changed: (.+?), tests ")
_CODE_BLOCK = re.compile(r"<code>\n(.+?)\n</code>", re.DOTALL)  # `prompts.code_view`


def state_renderings(state: State) -> list[str]:
    """The `<state>` block, then with one more item left out each time: oldest first, in
    the deterministic compaction's order (hypotheses, open issues, decisions, history),
    never goals or constraints; each rendering says how many items it left out."""
    out = [render(state)]
    data = state.model_dump()
    dropped = 0
    for name in (n for n in DROP_ORDER if n not in KEPT_STATE):
        while data[name]:
            data[name] = data[name][1:]
            dropped += 1
            note = f"\n[context budget: {dropped} older state items omitted]"
            out.append(render(State.model_validate(data)) + note)
    return out


def actor_messages(messages: list[dict[str, Any]], state: State) -> list[BudgetMessage]:
    """An actor prompt (system + user, `prompts.render_messages`) as budget segments.

    The user message is split around the rendered `<state>` (a `state` segment), the code
    block (`context`: middle-truncated in its stage, after the state is compacted) and the
    last result's file list (the newest tool output: truncated only near the end of the
    ladder); the rest is the task, kept. Other prompts (the state compactor's) are kept
    whole: they fit or overflow.
    """
    if len(messages) != 2 or [m["role"] for m in messages] != ["system", "user"]:
        return keep_all(messages)
    user = str(messages[1]["content"])
    text = render(state)
    state_seg = RenderingsSegment(state_renderings(state), "state", "state_compact")
    parts = split_around(user, text, state_seg)
    coded: list[Segment] = []
    for part in parts:
        code = _CODE_BLOCK.search(part.text) if isinstance(part, Keep) else None
        if code:
            body = code.group(1)
            coded += split_around(part.text, body, TextSegment(body, "context"))
        else:
            coded.append(part)
    segments: list[Segment] = []
    for part in coded:
        match = _FILES_CHANGED.search(part.text) if isinstance(part, Keep) else None
        if match and match.group(1) != "none":
            files = match.group(1)
            segments += split_around(part.text, files, TextSegment(files, "tool_output"))
        else:
            segments.append(part)
    return [
        BudgetMessage("system", [Keep(str(messages[0]["content"]), "instructions")]),
        BudgetMessage("user", segments, sep=""),
    ]


class VllmTeacher:
    """One actor: its model first, then each fallback model when a server gives up."""

    name = "vllm"

    def __init__(self, actor: ActorConfig, client_overrides: dict[str, Any] | None = None) -> None:
        self.actor = actor
        self.model = actor.model
        self.overrides = client_overrides or {}
        self._clients: dict[str, VllmClient] = {}
        self.budget_counts = BudgetCounts()  # what fitting every prompt cost
        # (task id, step) -> (prompt, completion) tokens, popped by the actor's metrics
        self.usage: dict[tuple[str, int], tuple[int, int]] = {}

    async def _client(self, model: str) -> VllmClient:
        if model not in self._clients:
            cfg = self.actor.vllm_config(model).model_copy(update=self.overrides)
            client = VllmClient(cfg)
            await client.start()
            self._clients[model] = client
        return self._clients[model]

    async def respond(
        self, messages: list[dict[str, Any]], task: RefactorTask, step: int, state: State, seed: int
    ) -> str:
        errors = []
        segments = actor_messages(messages, state)
        for model in [self.actor.model, *self.actor.fallback_models]:
            try:
                client = await self._client(model)
                result = await client.chat_budgeted(
                    segments, self.budget_counts, seed=seed, stop=self.actor.stop
                )
            except ContextOverflow:
                raise  # the prompt's length, not the server: no fallback, the step fails
            except VllmError as exc:
                errors.append(f"{model}: {exc}")
                continue
            self.model = model
            if task is not None:
                tokens = (int(result.prompt_tokens or 0), int(result.completion_tokens or 0))
                self.usage[(task.id, step)] = tokens
            return result.text
        raise VllmError(f"actor {self.actor.name}: every model failed: {'; '.join(errors)}")

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()


class ModelChat:
    """A chat over one actor (its fallback chain too), budgeted like the actor's prompts;
    `budget_counts` are its losses."""

    def __init__(self, actor: ActorConfig) -> None:
        self.teacher = VllmTeacher(actor)
        self.budget_counts = self.teacher.budget_counts

    async def __call__(self, messages: list[dict[str, Any]]) -> str:
        return await self.teacher.respond(messages, None, 0, State(), 0)  # type: ignore[arg-type]


def model_chat(actor: ActorConfig) -> tuple[ModelChat, Any]:
    """`(chat, close)` over one actor: the state compactor's model."""
    chat = ModelChat(actor)
    return chat, chat.teacher.close
