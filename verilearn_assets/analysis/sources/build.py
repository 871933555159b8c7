"""Build one questions partition: generate per table, verify in the sandbox, summarise.

Pure orchestration over `generate`, `verify` and the teacher's LLM proposals; the Dagster
asset only resolves the partition, hands in a started pool, and writes the result.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from verilearn_assets.analysis.config import QuestionsConfig
from verilearn_assets.analysis.quality.readability import distribution
from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.analysis.sources.generate import generate
from verilearn_assets.analysis.sources.procedural import coverage_report
from verilearn_assets.analysis.verify.verifier import Verifier, screened_out
from verilearn_assets.core.records import Split, TableRecord
from verilearn_assets.core.sandbox.pool import SandboxPool

log = logging.getLogger(__name__)


@dataclass
class PartitionQuestions:
    """One partition's records (accepted and rejected, screened-out included) and the
    diagnostics the questions asset puts in its metadata."""

    records: list[QuestionRecord] = field(default_factory=list)
    not_applicable: Counter[str] = field(default_factory=Counter)  # template → tables
    candidates: int = 0  # candidates generated (screened out ones included)
    sandbox_ms: float = 0.0
    # procedural search-stage rejections by reason (programs never compiled to candidates),
    # over the partition and per dataset (the lake rows of `generation_stats`)
    search_rejected: Counter[str] = field(default_factory=Counter)
    search_rejected_by_dataset: dict[str, Counter[str]] = field(default_factory=dict)
    # programs.coverage_report over the accepted procedural candidates (empty for templates)
    coverage: dict[str, int] = field(default_factory=dict)

    @property
    def accepted(self) -> list[QuestionRecord]:
        return [r for r in self.records if r.status == "accepted"]


async def build_generated(
    tables: list[TableRecord], source: str, split: Split, cfg: QuestionsConfig, pool: SandboxPool
) -> PartitionQuestions:
    """Template or procedural questions for every table of the split, verified."""
    out = PartitionQuestions()
    jobs = []
    screened: dict[str, QuestionRecord] = {}
    for table in tables:
        gen = generate(table, source, cfg)
        out.not_applicable.update(gen.not_applicable.keys())
        out.search_rejected.update(gen.search_rejected)
        out.search_rejected_by_dataset.setdefault(table.dataset, Counter()).update(
            gen.search_rejected
        )
        jobs.extend((table, cand) for cand in gen.candidates)
        for cand in gen.rejected:
            rec = screened_out(table, cand, split=split)
            screened.setdefault(rec.id, rec)
    out.candidates = len(jobs) + len(screened)
    verifier = Verifier(pool, cfg)
    verified = await verifier.verify_all(jobs, split=split)
    out.records = sorted([*verified, *screened.values()], key=lambda r: r.id)
    out.sandbox_ms = verifier.stats.sandbox_ms
    if source == "procedural":
        ok = {r.id for r in out.accepted}
        accepted = [
            c for t, c in jobs if QuestionRecord.make_id(source, t.dataset, t.id, c.code) in ok
        ]
        out.coverage = coverage_report(accepted)
    return out


def summarize(records: list[QuestionRecord]) -> dict[str, Any]:
    """Counts per template / operator family, rejection reasons and the alternatives rate."""
    accepted = [r for r in records if r.status == "accepted"]
    rejected = [r for r in records if r.status == "rejected"]
    reasons = Counter((r.rejection_reason or "").split(":", 1)[0] for r in rejected)
    with_alts = sum(1 for r in accepted if r.alternatives)
    scored = [r.readability for r in accepted if r.readability >= 1]
    return {
        "accepted": len(accepted),
        "rejected": len(rejected),
        "by_template": dict(Counter(r.template for r in accepted if r.template)),
        "by_operator_family": dict(Counter(f for r in accepted for f in set(r.op_families))),
        "rejection_reasons": dict(reasons),
        "readability_mean": round(sum(r.readability for r in accepted) / len(accepted), 3)
        if accepted
        else 0.0,
        # over scored questions (1..5; a record built without a score carries 0)
        "readability": distribution(scored),
        "readability_histogram": dict(sorted(Counter(scored).items())),
        "readability_by_template": readability_by_template(accepted),
        "alternatives_rate": round(with_alts / len(accepted), 4) if accepted else 0.0,
        "datasets": len({r.dataset for r in accepted}),
    }


def readability_by_template(records: list[QuestionRecord]) -> dict[str, dict[str, float]]:
    """Readability (count, mean, min) of the scored questions per template; procedural
    questions under `procedural:<answer operator>`, so a wording that reads badly is
    traced to the part that assembles it (issue 24)."""
    groups: dict[str, list[float]] = {}
    for r in records:
        if r.readability >= 1:
            key = r.template or f"{r.source}:{(r.program_ops or ['?'])[-1]}"
            groups.setdefault(key, []).append(r.readability)
    out = {
        k: {"count": len(v), "mean": round(sum(v) / len(v), 3), "min": min(v)}
        for k, v in sorted(groups.items())
    }
    for k, v in out.items():
        log.info("readability %s: mean %.2f, min %.2f over %d", k, v["mean"], v["min"], v["count"])
    return out


def markdown_counts(counts: dict[str, int], header: str) -> str:
    rows = "\n".join(f"| {k} | {v} |" for k, v in sorted(counts.items()))
    return f"| {header} | count |\n|---|---|\n{rows}" if rows else f"_no {header}_"


def readability_markdown(summary: dict[str, Any]) -> str:
    """The accepted questions' readability: quartiles, then questions per score."""
    dist = summary["readability"]
    if not dist.get("count"):
        return "_no scored question_"
    head = (
        f"mean {dist['mean']}, p25 {dist['p25']}, median {dist['median']}, p75 {dist['p75']}, "
        f"min {dist['min']}, share >= 4: {dist['share_ge_4']}\n\n"
    )
    table = markdown_counts(
        {f"{k:.2f}": v for k, v in summary["readability_histogram"].items()}, "readability score"
    )
    per = summary.get("readability_by_template") or {}
    rows = "\n".join(
        f"| {k} | {v['count']} | {v['mean']} | {v['min']} |" for k, v in sorted(per.items())
    )
    by_template = (
        f"\n\n| template | questions | mean | min |\n|---|---|---|---|\n{rows}" if rows else ""
    )
    return head + table + by_template
