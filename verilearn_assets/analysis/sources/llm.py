"""`llm`-source questions: the model explores a table, proposes questions, traces answer them.

1. An exploration trace: the model inspects the table in the sandbox and submits a list
   of proposals, each `{"question": str, "answer_schema": {...}}`.
2. Each well-formed proposal is answered by a gold trace plus K consistency traces and
   triangulated; malformed proposals are logged and counted, not dropped silently.
3. A verified answer becomes a `QuestionRecord` whose code is the gold trace's successful
   cells — and only after that code, re-run in a clean slot, submits the same answer.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from verilearn_assets.analysis.records import FailureClass, QuestionRecord
from verilearn_assets.analysis.rollout.config import TeacherConfig
from verilearn_assets.analysis.rollout.loop import Trace, run_trace
from verilearn_assets.analysis.rollout.policy import Policy, VllmPolicy
from verilearn_assets.analysis.rollout.prompts import question_prompt
from verilearn_assets.analysis.rollout.triangulate import (
    TraceOutcome,
    Triangulation,
    triangulate,
)
from verilearn_assets.core.answers import answer_hash, answers_match, parse_answer
from verilearn_assets.core.llm.budget_records import BudgetCounts
from verilearn_assets.core.llm.fit import FAILURE_CLASS
from verilearn_assets.core.records import AnswerSchema, TableRecord
from verilearn_assets.core.sandbox.pool import SandboxPool

log = logging.getLogger(__name__)

EXPLORE_PROMPT = """\
Explore this table with code, then propose up to {n} data-analysis questions about it.
Each question must have one closed-form answer that code over `df` can compute.
When done, call `submit(proposals)` with a list of dicts, each of the form
{{"question": "<the question>", "answer_schema": {{"kind": "<kind>"}}}}
where kind is one of number, integer, string, boolean, list, mapping (a list adds
"items": {{"kind": ...}}; a mapping with fixed keys adds "fields": {{"<key>": {{"kind": ...}}}})."""


class NoServerError(RuntimeError):
    """`llm`-source questions need a model, and none is configured."""


def proposal_policy_factory(cfg: TeacherConfig, client: Any | None) -> Any:
    """Policies for exploring and answering: always the model (no reference code exists).

    Fails fast without a client, saying how to configure one, so an `llm` partition never
    runs half-way or silently yields nothing.
    """
    if client is None:
        raise NoServerError(
            "llm-source questions need a vLLM server and none is configured: set base_urls "
            "in configs/vllm.yaml to a running OpenAI-compatible vLLM server (or launch: true "
            "with server.model_path pointing at a model; `make tiny-model` builds a test "
            "model), then re-run the llm partitions"
        )

    def make(code: str | None, index: int) -> Policy:
        return VllmPolicy(client, cfg.sampling, cfg.seed + index)

    return make


@dataclass(frozen=True)
class Proposal:
    question: str
    answer_schema: AnswerSchema


@dataclass(frozen=True)
class MalformedProposal:
    index: int
    entry: Any
    reason: str


def parse_proposals(
    submission: str | None,
    limit: int | None = None,
) -> tuple[list[Proposal], list[MalformedProposal]]:
    """Read the exploration trace's submission (canonical JSON) into proposals.

    A submission that is not a list is one malformed entry (index -1); within a list each
    bad entry is reported with its index and reason. Proposals past `limit` are malformed
    too ("over the limit"), so the count always adds up.
    """
    if submission is None:
        return [], [MalformedProposal(-1, None, "the exploration trace submitted nothing")]
    try:
        data = json.loads(submission)
    except json.JSONDecodeError as exc:
        return [], [MalformedProposal(-1, submission, f"submission is not JSON: {exc}")]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        return [], [
            MalformedProposal(-1, data, f"expected a list of proposals, got {type(data).__name__}")
        ]
    good: list[Proposal] = []
    bad: list[MalformedProposal] = []
    for i, entry in enumerate(data):
        reason = _proposal_problem(entry)
        if reason is None and limit is not None and len(good) >= limit:
            reason = f"over the limit of {limit} proposals"
        if reason:
            log.warning("proposal %d malformed: %s", i, reason)
            bad.append(MalformedProposal(i, entry, reason))
            continue
        good.append(
            Proposal(entry["question"].strip(), AnswerSchema.model_validate(entry["answer_schema"]))
        )
    return good, bad


def _proposal_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return f"proposal is a {type(entry).__name__}, not a dict"
    extra = set(entry) - {"question", "answer_schema"}
    if extra:
        return f"unknown keys {sorted(extra)}"
    question = entry.get("question")
    if not isinstance(question, str) or not question.strip():
        return "'question' must be a non-empty string"
    try:
        AnswerSchema.model_validate(entry.get("answer_schema"))
    except ValidationError as exc:
        return (
            f"invalid answer_schema: {exc.errors()[0]['msg']} at "
            f"{'.'.join(str(p) for p in exc.errors()[0]['loc']) or '<root>'}"
        )
    return None


@dataclass
class ProposalOutcome:
    """What happened to one proposal; `record` is set only when it was verified."""

    proposal: Proposal
    triangulation: Triangulation
    traces: list[Trace]
    record: QuestionRecord | None = None
    failure_class: FailureClass | None = None
    reason: str = ""


@dataclass
class TableProposals:
    exploration: Trace
    outcomes: list[ProposalOutcome] = field(default_factory=list)
    malformed: list[MalformedProposal] = field(default_factory=list)

    @property
    def budget(self) -> BudgetCounts:
        """Context-budget losses of every trace run for this table (exploration included)."""
        total = BudgetCounts()
        for trace in [self.exploration, *(t for o in self.outcomes for t in o.traces)]:
            total.merge(trace.budget)
        return total

    @property
    def records(self) -> list[QuestionRecord]:
        return [o.record for o in self.outcomes if o.record is not None]

    def rejected_records(self, table: TableRecord) -> list[QuestionRecord]:
        """Well-formed proposals that failed, as rejected records: the reports count
        rejections per reason for every source, and the model's attempt stays inspectable."""
        return [rejected_record(o, table) for o in self.outcomes if o.record is None]


def llm_record(
    proposal: Proposal, table: TableRecord, code: str, gold: Trace | None, **verdict: Any
) -> QuestionRecord:
    """The record of one proposal on `table`; `verdict` holds the answer or the rejection."""
    n_steps = sum(c.status == "ok" for c in gold.cells) if gold else 0
    return QuestionRecord(
        id=QuestionRecord.make_id("llm", table.dataset, table.id, code),
        source="llm",
        split=table.split,
        dataset=table.dataset,
        table=table.id,
        question=proposal.question,
        question_mechanical=proposal.question,
        answer_schema=proposal.answer_schema,
        code=code,
        n_steps=n_steps,
        difficulty=_difficulty(n_steps),
        hooks=gold.hooks if gold else [],
        **verdict,
    )


def rejected_record(outcome: ProposalOutcome, table: TableRecord) -> QuestionRecord:
    """A failed proposal as a `rejected` record; its code is what the gold trace ran.

    The question heads the code as a comment so two proposals whose gold traces ran the
    same (or no) code still get distinct content-hash ids.
    """
    gold = outcome.traces[0] if outcome.traces else None
    ran = gold_code(gold) if gold else ""
    code = f"# proposed: {' '.join(outcome.proposal.question.split())}\n{ran}"
    return llm_record(
        outcome.proposal,
        table,
        code,
        gold,
        answer="null",
        answer_hashes=[],
        status="rejected",
        rejection_reason=f"{outcome.failure_class or 'unknown'}: {outcome.reason}",
    )


def gold_code(trace: Trace) -> str:
    """The gold trace's successful cells, in order: the question's reference program."""
    return "\n\n".join(c.code for c in trace.cells if c.status == "ok")


def _difficulty(n_steps: int) -> str:
    return "easy" if n_steps <= 2 else "medium" if n_steps <= 4 else "hard"


async def reexecute(
    code: str,
    table: TableRecord,
    pool: SandboxPool,
    cfg: TeacherConfig,
) -> tuple[str | None, str]:
    """Run `code` as one cell in a clean slot: (last submission, status and error)."""
    async with pool.task(table.path) as task:
        result = await task.run_cell(code, timeout_s=cfg.cell_timeout_s)
    answer = result.submissions[-1] if result.submissions else None
    return answer, f"{result.status}: {result.stderr.strip()[-300:]}"


async def answer_proposal(
    proposal: Proposal,
    table: TableRecord,
    make_policy: Callable[[str | None, int], Policy],
    pool: SandboxPool,
    cfg: TeacherConfig,
) -> ProposalOutcome:
    """Triangulate one proposal; on success build its record after a clean re-run."""
    prompt = question_prompt(proposal.question, proposal.answer_schema, cfg.prompts)
    policies: list[Policy] = [make_policy(None, i) for i in range(cfg.n_traces)]
    traces = list(await asyncio.gather(*(run_trace(prompt, table, p, pool, cfg) for p in policies)))
    outcomes = [
        TraceOutcome(t.answer, None if t.answer else t.failure_without_answer()) for t in traces
    ]
    tri = triangulate(outcomes, proposal.answer_schema, cfg.required_votes)
    out = ProposalOutcome(proposal, tri, traces, failure_class=tri.failure_class)
    if not tri.verified:
        out.reason = f"triangulation: {tri.failure_class} ({tri.votes}/{tri.required} votes)"
        overflowed = [t.overflow_reason for t in traces if t.end == FAILURE_CLASS]
        if overflowed:
            out.reason += f"; {len(overflowed)} trace(s) overflowed: {overflowed[0]}"
        return out
    gold = traces[0]
    code = gold_code(gold)
    replayed, status = await reexecute(code, table, pool, cfg)
    schema = proposal.answer_schema
    if replayed is None or not answers_match(
        parse_answer(gold.answer), parse_answer(replayed), schema
    ):
        out.failure_class = "execution_failure"
        out.reason = (
            f"gold code does not reproduce its answer in a clean slot (got {replayed!r}; {status})"
        )
        return out
    out.record = llm_record(
        proposal,
        table,
        code,
        gold,
        answer=gold.answer,
        answer_hashes=[answer_hash(gold.answer, schema)],
    )
    return out


async def propose_questions(
    table: TableRecord,
    make_policy: Callable[[str | None, int], Policy],
    pool: SandboxPool,
    cfg: TeacherConfig,
) -> TableProposals:
    """Explore `table`, then answer every well-formed proposal by triangulation.

    An exploration that does not fit the model's window proposes nothing: its one
    malformed entry's reason starts with `context_overflow:`, and the caller goes on.
    """
    explorer = make_policy(None, 0)
    exploration = await run_trace(
        EXPLORE_PROMPT.format(n=cfg.max_proposals), table, explorer, pool, cfg
    )
    if exploration.end == FAILURE_CLASS:
        # nothing was proposed: one malformed entry whose reason starts with the class
        overflow = MalformedProposal(-1, None, exploration.overflow_reason)
        return TableProposals(exploration, malformed=[overflow])
    proposals, malformed = parse_proposals(exploration.answer, cfg.max_proposals)
    result = TableProposals(exploration, malformed=malformed)
    result.outcomes = list(
        await asyncio.gather(
            *(answer_proposal(p, table, make_policy, pool, cfg) for p in proposals)
        )
    )
    return result
