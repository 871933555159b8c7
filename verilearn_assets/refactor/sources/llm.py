"""The `llm` task source: a model proposes a refactoring in words plus an ast-grep rule.

A proposal becomes an accepted task only when (1) the rule is valid and applies cleanly in
the jail, (2) the repository's tests still pass, and (3) triangulation holds: a second,
independent request that sees only the words writes a rule producing the very same tree.
Everything else is kept as a rejected task naming why; so is a target that only touches
tests, contradicts its words, or is the target of an earlier accepted proposal
(`quality.finalize`, as for the generated sources).

With the vLLM proposer every request is fitted to the served window (the code excerpt is
middle-truncated; the instructions and the task words are kept); one that cannot fit is a
rejected task whose reason starts with `context_overflow`, and the next proposal is asked.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from verilearn_assets.core.llm.budget_records import BudgetCounts
from verilearn_assets.core.llm.client import VllmClient
from verilearn_assets.core.llm.fit import FAILURE_CLASS, ContextOverflow
from verilearn_assets.core.llm.segments import (
    BudgetMessage,
    Keep,
    TextSegment,
    keep_all,
    split_around,
)
from verilearn_assets.core.records import content_hash
from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.records import Difficulty, RefactorTask
from verilearn_assets.refactor.rollout.prompts import PromptConfig
from verilearn_assets.refactor.sources.candidate import TEST_COMMAND, Candidate, run_candidate
from verilearn_assets.refactor.sources.catalog import CatalogRule, Repo, RuleExamples
from verilearn_assets.refactor.sources.quality import finalize
from verilearn_assets.refactor.sources.repos.baseline import source_files
from verilearn_assets.refactor.verify.actions import ActionRejected, RuleAction
from verilearn_assets.refactor.verify.clean_copy import is_test_path
from verilearn_assets.refactor.verify.languages import canonical_language
from verilearn_assets.refactor.verify.rule_files import RuleFileError, parse_rule_documents

Proposer = Callable[[list[dict[str, Any]], int], Awaitable[str]]


# the line comment a file's path is written under in the excerpt
HASH_COMMENT = frozenset({"python", "ruby", "yaml", "bash", "elixir", "nix", "hcl"})


def code_excerpt(repo: Path, limit: int, language: str = "python") -> str:
    """The package's modules in its language (tests left out), each under its path as a
    comment of that language, cut at `limit` chars."""
    comment = "#" if language in HASH_COMMENT else "//"
    parts = []
    for path in source_files(repo, language):
        rel = path.relative_to(repo).as_posix()
        if rel.startswith("tests/") or path.stat().st_size == 0:
            continue
        if language != "python" and is_test_path(rel):
            continue
        parts.append(f"{comment} {rel}\n{path.read_text(errors='replace')}")
    return "\n".join(parts)[:limit]


def _block(text: str, tag: str) -> str | None:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    return match.group(1).strip() if match else None


_FENCE = re.compile(r"```[\w-]*[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)


def rule_body(text: str) -> str | None:
    """The rule file inside the answer's `<rule>` block: the first fenced block in it
    when there is one (a model's prose around the fence stays out), else the block."""
    body = _block(text, "rule")
    if not body:
        return None
    fenced = _FENCE.search(body)
    return fenced.group(1).strip("\n") if fenced else body


def parse_rule(text: str, language: str | None = None) -> RuleAction:
    """The `<rule>` block as a rule action, read as ast-grep reads a rule file (several
    documents, `utils`, `transform`, `rewriters`, any language alias in any case) by
    `rule_files`, the parser `verilearn refactor apply` uses; each document then rewrites:
    a `fix`, a string or a mapping with a `template`, that is not empty (an empty fix
    deletes whatever matched), and, with `language` (the repository's), in that language.
    ActionRejected names the document and the field."""
    body = rule_body(text)
    if not body:
        raise ActionRejected("parse", "no <rule>…</rule> block")
    try:
        _, documents = parse_rule_documents(body)
    except RuleFileError as exc:
        raise ActionRejected(exc.failure, f"rule: {exc}") from exc
    if not documents:
        raise ActionRejected("schema", "rule: the <rule> block holds no rule document")
    for index, doc in enumerate(documents, 1):
        _check_rewrites(f"rule: document {index}", doc, language)
    rule: dict[str, Any] | list[dict[str, Any]] = documents[0] if len(documents) == 1 else documents
    try:
        return RuleAction(rule=rule)
    except ValueError as exc:
        raise ActionRejected("schema", f"invalid rule: {str(exc).splitlines()[0]}") from exc


def _check_rewrites(where: str, doc: dict[str, Any], language: str | None) -> None:
    """One document of a proposal: it has a fix that writes something, in `language`."""
    if "fix" not in doc:
        raise ActionRejected("schema", f"{where}: missing field `fix` (a refactoring rewrites)")
    fix = doc["fix"]
    template = fix.get("template") if isinstance(fix, dict) else fix
    if not isinstance(template, str):
        field = "fix.template" if isinstance(fix, dict) else "fix"
        raise ActionRejected(
            "schema",
            f"{where}: field `{field}` must be a string, not {type(template).__name__} "
            "(quote it: YAML reads yes/no/on/off and numbers as other types)",
        )
    if not template.strip():
        raise ActionRejected(
            "schema", f"{where}: field `fix` is empty: it would delete the code it matches"
        )
    found = canonical_language(str(doc["language"]))
    if language is not None and found != language:
        raise ActionRejected(
            "schema",
            f"{where}: field `language` is {found}, but the repository is {language}: "
            "the rule would change none of its files",
        )


def with_ids(
    rule: dict[str, Any] | list[dict[str, Any]] | str, rule_id: str
) -> dict[str, Any] | list[dict[str, Any]]:
    """The proposal's documents under our ids (`rule_id`, then `rule_id-2`, …): the
    model's own may be missing or repeat."""
    assert not isinstance(rule, str)  # parse_rule gives documents
    if isinstance(rule, dict):
        return {**rule, "id": rule_id}
    return [{**d, "id": rule_id if i == 1 else f"{rule_id}-{i}"} for i, d in enumerate(rule, 1)]


def code_messages(messages: list[dict[str, Any]], code: str) -> list[BudgetMessage]:
    """A proposal chat as budget segments: the code excerpt is `context` (truncatable),
    the rest (instructions, repository name, the task words) is kept."""
    out = []
    for m in messages:
        role, text = m["role"], str(m["content"])
        if role == "system":
            out.append(BudgetMessage(role, [Keep(text, "instructions")]))
        else:
            out.append(
                BudgetMessage(role, split_around(text, code, TextSegment(code, "context")), sep="")
            )
    return out


async def ask(propose: Proposer, messages: list[dict[str, Any]], code: str, seed: int) -> str:
    """One proposal request: budgeted (`propose.fitted`) when the proposer has a budget,
    else the plain messages (a scripted model)."""
    fitted = getattr(propose, "fitted", None)
    if fitted is None:
        return await propose(messages, seed)
    return await fitted(code_messages(messages, code), seed)


def _overflow_reason(stage: str, exc: ContextOverflow) -> str:
    text = str(exc).removeprefix(f"{FAILURE_CLASS}: ")
    return f"{FAILURE_CLASS}: {stage}: {text}"


def rejected(
    repo: Repo, key: str, instruction: str, reason: str, rule: dict | None
) -> RefactorTask:
    return RefactorTask(
        id=content_hash("refactor-llm-task", repo.name, key),
        repo=repo.name,
        licence=repo.licence,
        files=[],
        instruction=instruction[:1000],
        target_diff="",
        target_tree="",
        step_trees=[],
        test_command=TEST_COMMAND,
        reference_actions=[RuleAction(rule=rule).model_dump(mode="json")] if rule else [],
        rules=[],
        source="llm",
        split=repo.split,
        status="rejected",
        reason=reason[:500],
        difficulty=Difficulty(matches=0, files_touched=0, rule_complexity=0, steps=0),
    )


async def propose_task(
    repo: Repo,
    index: int,
    propose: Proposer,
    prompts: PromptConfig,
    config: RefactorConfig,
    code_chars: int = 2000,
    seed: int = 0,
) -> RefactorTask:
    code = code_excerpt(repo.path, code_chars, repo.language)
    asked = [
        {"role": "system", "content": prompts.propose_system},
        {"role": "user", "content": prompts.propose_user.format(repo=repo.name, code=code)},
    ]
    try:
        first = await ask(propose, asked, code, seed + 2 * index)
    except ContextOverflow as exc:  # this proposal only: kept as a rejected task
        return rejected(
            repo, f"{index}:{FAILURE_CLASS}", "", _overflow_reason("proposal", exc), None
        )
    key = f"{index}:{first}"
    instruction = _block(first, "instruction") or ""
    if not instruction:
        return rejected(repo, key, "", "proposal: no <instruction>…</instruction> block", None)
    try:
        action = parse_rule(first, repo.language)
    except ActionRejected as exc:
        return rejected(repo, key, instruction, f"proposal: {exc}", None)
    rule_id = f"llm-{content_hash(action.rule, length=10)}"
    catalog_rule = CatalogRule(
        id=rule_id,
        path="<llm>",
        rule=with_ids(action.rule, rule_id),
        examples=RuleExamples(instruction=instruction, positive="", fixed="", negative=""),
    )
    task = await asyncio.to_thread(
        run_candidate, Candidate(repo, "llm", ((catalog_rule, ()),)), config
    )
    if task.status != "accepted":
        return task
    # triangulation: the same words, a fresh request that never saw the first rule
    asked = [
        {"role": "system", "content": prompts.propose_system},
        {
            "role": "user",
            "content": prompts.rule_user.format(repo=repo.name, code=code, instruction=instruction),
        },
    ]
    try:
        second = await ask(propose, asked, code, seed + 2 * index + 1)
    except ContextOverflow as exc:
        why = _overflow_reason("triangulation", exc)
        return task.model_copy(update={"status": "rejected", "reason": why})
    try:
        other = parse_rule(second, repo.language)
    except ActionRejected as exc:
        return task.model_copy(update={"status": "rejected", "reason": f"triangulation: {exc}"})
    other_rule = catalog_rule.model_copy(update={"rule": with_ids(other.rule, rule_id)})
    check = await asyncio.to_thread(
        run_candidate, Candidate(repo, "llm", ((other_rule, ()),)), config
    )
    if check.status != "accepted" or check.target_tree != task.target_tree:
        why = check.reason or "the second rule gave another tree"
        return task.model_copy(update={"status": "rejected", "reason": f"triangulation: {why}"})
    return task


async def generate_llm_tasks(
    repos: list[Repo],
    propose: Proposer,
    prompts: PromptConfig,
    config: RefactorConfig,
    per_repo: int,
    code_chars: int = 2000,
    seed: int = 0,
) -> list[RefactorTask]:
    """Every proposal as a task, checked like the generated ones (`quality.finalize`): one
    per id, tests-only or contradicting targets rejected, one accepted task per target."""
    out: dict[str, RefactorTask] = {}
    for repo in repos:
        for i in range(per_repo):
            task = await propose_task(repo, i, propose, prompts, config, code_chars, seed)
            out.setdefault(task.id, task)  # the same proposal twice is one task
    return finalize(list(out.values()), {r.name: r.path for r in repos})


class VllmProposer:
    """A proposer over one actor of `configs/vllm_actors.yaml`: plain messages are sent
    kept whole (they fit or overflow); `fitted` takes budget segments. `budget_counts` are
    the losses of every request."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self.client: Any = None
        self.budget_counts = BudgetCounts()

    async def _started(self) -> Any:
        if self.client is None:
            self.client = VllmClient(self.actor.vllm_config(self.actor.model))
            await self.client.start()
        return self.client

    async def fitted(self, messages: list[BudgetMessage], seed: int) -> str:
        client = await self._started()
        return (await client.chat_budgeted(messages, self.budget_counts, seed=seed)).text

    async def __call__(self, messages: list[dict[str, Any]], seed: int) -> str:
        return await self.fitted(keep_all(messages), seed)

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()


def vllm_proposer(actor: Any) -> tuple[VllmProposer, Callable[[], Awaitable[None]]]:
    """A proposer over one actor of `configs/vllm_actors.yaml` (and its close function)."""
    proposer = VllmProposer(actor)
    return proposer, proposer.close
