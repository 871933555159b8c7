"""Verification: candidates become QuestionRecords only through clean re-execution.

Ground truth is what the reference program submits in a fresh sandbox task. Every
candidate runs `verify.runs` times (default 2), each in its own fresh task, and must
produce one valid submission with the same answer hash every time. Each alternative
reading runs once; its answer is validated and its hash joins `answer_hashes`. A failing
check rejects the question, and the rejected record is kept with its reason for the
reports.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from verilearn_assets.analysis.config import QuestionsConfig
from verilearn_assets.analysis.quality.readability import readability
from verilearn_assets.analysis.records import Alternative, QuestionRecord
from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.core.answers import (
    AnswerError,
    answer_hash,
    explain_mismatch,
    parse_answer,
    validate_answer,
)
from verilearn_assets.core.records import AnswerSchema, Split, TableRecord
from verilearn_assets.core.sandbox.config import SandboxConfig, load_sandbox_config
from verilearn_assets.core.sandbox.pool import SandboxError, SandboxPool, TaskResult


class RunFailed(Exception):
    """One execution did not yield a usable answer; the message says why."""


@dataclass
class VerifyStats:
    """Counts and time spent, for benchmarks and logs."""

    runs: int = 0
    sandbox_ms: float = 0.0  # time spent executing cells inside the sandbox (summed)
    wall_s: float = 0.0
    accepted: int = 0
    rejected: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def count(self, record: QuestionRecord) -> None:
        if record.status == "accepted":
            self.accepted += 1
        else:
            self.rejected += 1
            key = (record.rejection_reason or "").split(":", 1)[0]
            self.reasons[key] = self.reasons.get(key, 0) + 1


def _tail(text: str, n: int = 400) -> str:
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


def check_run(result: TaskResult, schema: AnswerSchema) -> tuple[str, str]:
    """(canonical answer, hash) of one run, or RunFailed with the reason."""
    if result.status != "ok":
        raise RunFailed(f"status {result.status}: {_tail(result.stderr) or 'no stderr'}")
    if len(result.submissions) != 1:
        raise RunFailed(f"expected exactly one submit(...), got {len(result.submissions)}")
    answer = result.submissions[0]
    try:
        value = parse_answer(answer)
        problem = validate_answer(value, schema)
        if problem:
            raise RunFailed(problem)
        return answer, answer_hash(answer, schema)  # the JSON text: a bare str is data
    except AnswerError as exc:
        raise RunFailed(str(exc)) from exc


def record_fields(
    table: TableRecord, cand: Candidate, *, dataset: str | None = None, split: Split | None = None
) -> dict:
    """What a question record takes from its table and candidate, whatever the verdict."""
    dataset = dataset or table.dataset
    return dict(
        id=QuestionRecord.make_id(cand.source, dataset, table.id, cand.code),
        source=cand.source,
        split=split or table.split,
        dataset=dataset,
        table=table.id,
        question=cand.question,
        question_mechanical=cand.question_mechanical,
        answer_schema=cand.answer_schema,
        code=cand.code,
        n_steps=cand.n_steps,
        difficulty=cand.difficulty,
        template=cand.template,
        program_ops=cand.program_ops,
        op_families=cand.op_families,
        conventions=cand.conventions,
        readability=readability(cand.question),
    )


def screened_out(
    table: TableRecord, cand: Candidate, *, dataset: str | None = None, split: Split | None = None
) -> QuestionRecord:
    """The rejected record of a candidate the screen turned away (never run in the sandbox):
    kept so the diagnostics count it under its reason."""
    if not cand.rejection_reason:
        raise ValueError(f"candidate {cand.template or cand.program_ops}: no rejection reason")
    return QuestionRecord(
        **record_fields(table, cand, dataset=dataset, split=split),
        answer="null",
        answer_hashes=[],
        status="rejected",
        rejection_reason=cand.rejection_reason,
    )


class Verifier:
    """Runs candidates in a started SandboxPool and turns them into QuestionRecords."""

    def __init__(self, pool: SandboxPool, cfg: QuestionsConfig) -> None:
        self.pool = pool
        self.cfg = cfg
        self.stats = VerifyStats()

    async def _run(self, code: str, table_path: str) -> TaskResult | SandboxError:
        try:
            result = await self.pool.run_program(code, table_path, self.cfg.verify.timeout_s)
        except SandboxError as exc:
            return exc
        self.stats.runs += 1
        self.stats.sandbox_ms += sum(c.duration_ms for c in result.cells)
        return result

    async def verify(
        self,
        table: TableRecord,
        cand: Candidate,
        *,
        dataset: str | None = None,
        split: Split | None = None,
    ) -> QuestionRecord:
        runs = self.cfg.verify.runs
        results = await asyncio.gather(
            *[self._run(cand.code, table.path) for _ in range(runs)],
            *[self._run(a.code, table.path) for a in cand.alternatives],
        )
        base = record_fields(table, cand, dataset=dataset, split=split)
        try:
            record = QuestionRecord(**base, **self._judge(cand, results[:runs], results[runs:]))
        except RunFailed as exc:
            first = results[0]
            hooks = first.hooks if isinstance(first, TaskResult) else []
            record = QuestionRecord(
                **base,
                answer="null",
                answer_hashes=[],
                hooks=hooks,
                status="rejected",
                rejection_reason=str(exc),
            )
        self.stats.count(record)
        return record

    def _judge(
        self,
        cand: Candidate,
        primary: Sequence[TaskResult | SandboxError],
        alternatives: Sequence[TaskResult | SandboxError],
    ) -> dict:
        schema = cand.answer_schema
        answers = []
        for i, result in enumerate(primary, start=1):
            if isinstance(result, SandboxError):
                raise RunFailed(f"sandbox_failure: run {i}: {result}")
            try:
                answers.append(check_run(result, schema))
            except RunFailed as exc:
                raise RunFailed(f"reference_failed: run {i}: {exc}") from exc
        answer, digest = answers[0]
        for i, (other, other_hash) in enumerate(answers[1:], start=2):
            if other_hash != digest:
                why = explain_mismatch(parse_answer(answer), parse_answer(other), schema)
                raise RunFailed(
                    f"nondeterministic: run 1 hash {digest} != run {i} hash "
                    f"{other_hash} ({why or 'equal within tolerance, not in hash'})"
                )
        hashes = [digest]
        alts = []
        for alt, result in zip(cand.alternatives, alternatives, strict=True):
            if isinstance(result, SandboxError):
                raise RunFailed(f"sandbox_failure: alternative {alt.description!r}: {result}")
            try:
                alt_answer, alt_hash = check_run(result, schema)
            except RunFailed as exc:
                raise RunFailed(f"alternative_failed: {alt.description!r}: {exc}") from exc
            alts.append(
                Alternative(
                    description=alt.description,
                    code=alt.code,
                    answer=alt_answer,
                    answer_hash=alt_hash,
                )
            )
            if alt_hash not in hashes:
                hashes.append(alt_hash)
        first = primary[0]
        assert isinstance(first, TaskResult)
        return dict(
            answer=answer,
            answer_hashes=hashes,
            alternatives=alts,
            hooks=first.hooks,
            status="accepted",
        )

    async def verify_all(
        self,
        jobs: Sequence[tuple[TableRecord, Candidate]],
        *,
        dataset: str | None = None,
        split: Split | None = None,
    ) -> list[QuestionRecord]:
        """Verify every (table, candidate) concurrently; same-code duplicates run once."""
        t0 = time.perf_counter()
        unique: dict[tuple[str, str], tuple[TableRecord, Candidate]] = {}
        for table, cand in jobs:
            unique.setdefault((table.id, cand.code), (table, cand))
        records = await asyncio.gather(
            *(self.verify(t, c, dataset=dataset, split=split) for t, c in unique.values())
        )
        self.stats.wall_s += time.perf_counter() - t0
        return list(records)


def verify_candidates(
    jobs: Sequence[tuple[TableRecord, Candidate]],
    cfg: QuestionsConfig,
    sandbox: SandboxConfig | None = None,
    *,
    dataset: str | None = None,
    split: Split | None = None,
) -> tuple[list[QuestionRecord], VerifyStats]:
    """Start a pool, verify every candidate, stop the pool."""

    async def main() -> tuple[list[QuestionRecord], VerifyStats]:
        async with SandboxPool(sandbox or load_sandbox_config()) as pool:
            verifier = Verifier(pool, cfg)
            records = await verifier.verify_all(jobs, dataset=dataset, split=split)
            return records, verifier.stats

    return asyncio.run(main())


# --- re-verification of stored questions ---------------------------------------------------
@dataclass
class Mismatch:
    question_id: str
    reason: str


async def reverify(
    pool: SandboxPool,
    records: Sequence[QuestionRecord],
    table_paths: dict[str, str],
    timeout_s: float | None = None,
) -> list[Mismatch]:
    """Re-execute each accepted question in a clean task; report those that differ."""

    async def one(rec: QuestionRecord) -> Mismatch | None:
        path = table_paths.get(rec.table)
        if path is None:
            return Mismatch(rec.id, f"table {rec.table!r} not found")
        if not rec.answer_hashes:
            return Mismatch(rec.id, "accepted question has no answer hash")
        try:
            result = await pool.run_program(rec.code, path, timeout_s)
            answer, digest = check_run(result, rec.answer_schema)
        except (SandboxError, RunFailed) as exc:
            return Mismatch(rec.id, f"re-execution failed: {exc}")
        if digest != rec.answer_hashes[0]:
            why = explain_mismatch(
                parse_answer(rec.answer), parse_answer(answer), rec.answer_schema
            )
            return Mismatch(
                rec.id,
                f"hash {digest} != stored {rec.answer_hashes[0]}"
                f" ({why or 'within tolerance, but the hash differs'})",
            )
        return None

    accepted = [r for r in records if r.status == "accepted"]
    found = await asyncio.gather(*(one(r) for r in accepted))
    return [m for m in found if m is not None]
