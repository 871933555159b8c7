"""The reliability-to-training gate on questions and episodes: partitioned asset checks.

Blocking checks (severity ERROR) stop downstream steps in the same run; `sft_dataset`
re-reads their latest evaluations so a later run cannot slip past a failed one. Drift
checks warn only. The rules themselves live in `verilearn_assets.gate` (pure).
"""

import asyncio

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetKey,
    AssetRecordsFilter,
    MetadataValue,
    asset_check,
)

from resources.container_pool import ContainerPoolResource
from verilearn_assets.analysis import episode_rules, question_rules
from verilearn_assets.analysis.assets import episodes, questions
from verilearn_assets.analysis.records import Episode, QuestionRecord
from verilearn_assets.analysis.verify import reverify
from verilearn_assets.core import lake
from verilearn_assets.core.ingest.tables import load_table_records
from verilearn_assets.core.records import SOURCES, SPLITS
from verilearn_assets.gate.config import load_gate_config
from verilearn_assets.gate.outcome import RuleOutcome
from verilearn_assets.platform.defs import SOURCE_SPLIT, source_split


def _result(outcome: RuleOutcome, **extra) -> AssetCheckResult:
    meta = {"checked": outcome.checked, "failures": len(outcome.failures), **outcome.stats, **extra}
    if outcome.failures:
        meta["failing"] = MetadataValue.md("\n".join(f"- {f}" for f in outcome.failures[:50]))
    return AssetCheckResult(passed=outcome.passed, description=outcome.summary(), metadata=meta)


def _questions(source: str, split: str) -> list[QuestionRecord]:
    return lake.read_records("questions", QuestionRecord, source=source, split=split)


# --- questions ---------------------------------------------------------------------------
def eval_schema_contract(source: str, split: str, pool=None) -> AssetCheckResult:
    frame = lake.read_partition("questions", source=source, split=split)
    return _result(question_rules.schema_contract(frame, source, split))


def eval_reproduce(source: str, split: str, container_pool) -> AssetCheckResult:
    qs = _questions(source, split)
    accepted = [q for q in qs if q.status == "accepted"]
    limit = load_gate_config().reproduce_limit
    sample = accepted if limit is None else accepted[:limit]
    paths = {t.id: t.path for t in load_table_records(lake.home(), split)}

    async def run():
        async with container_pool.get_pool() as pool:
            return await reverify(pool, sample, paths)

    mismatches = asyncio.run(run())
    return _result(
        RuleOutcome(
            rule="reproduce",
            checked=len(sample),
            failures=[f"question {m.question_id}: {m.reason}" for m in mismatches],
        )
    )


def eval_datasets_one_split(source: str, split: str, pool=None) -> AssetCheckResult:
    pairs = [(t.dataset, t.split) for t in load_table_records(lake.home())]
    for src in SOURCES:
        for spl in SPLITS:
            frame = lake.read_partition("questions", source=src, split=spl)
            if "dataset" in frame.columns:
                pairs.extend((d, spl) for d in frame["dataset"].unique().to_list())
    return _result(question_rules.datasets_in_one_split(pairs))


def eval_answer_hashes(source: str, split: str, pool=None) -> AssetCheckResult:
    return _result(question_rules.answer_hash_present(_questions(source, split)))


def eval_floors(source: str, split: str, pool=None) -> AssetCheckResult:
    qs = _questions(source, split)
    n_tables = len(load_table_records(lake.home(), split))
    floors = load_gate_config().floors.get(source)
    if floors is None or n_tables == 0:
        return AssetCheckResult(
            passed=True,
            metadata={"tables": n_tables},
            description="no floors apply (no floors for this source or no tables in this split)",
        )
    return _result(
        question_rules.floors(qs, floors.per_template, floors.per_operator_family, floors.total),
        tables=n_tables,
    )


def _previous_metadata(context, key: str, name: str) -> float | None:
    """`name` from the materialization before the latest one of this partition."""
    recs = context.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey(key), asset_partitions=[context.partition_key]),
        limit=2,
        ascending=False,
    ).records
    if len(recs) < 2:
        return None
    value = recs[1].asset_materialization.metadata.get(name)
    return None if value is None else float(value.value)


def _drift(
    what: str, rate: float, before: float | None, limit: float, *, worse_when_higher: bool
) -> AssetCheckResult:
    """A WARN-severity verdict on how far `rate` moved the wrong way since last time."""
    moved = 0.0 if before is None else (rate - before if worse_when_higher else before - rate)
    direction = "rise" if worse_when_higher else "drop"
    return AssetCheckResult(
        passed=moved <= limit,
        severity=AssetCheckSeverity.WARN,
        description=f"{what} {rate:.3f} (previous {before}, max {direction} {limit})",
        metadata={"rate": rate, "previous": -1.0 if before is None else before},
    )


@asset_check(
    asset=questions,
    blocking=False,
    partitions_def=SOURCE_SPLIT,
    description="Warns when the alternatives (ambiguity) rate rises more than "
    "configured versus the previous materialization.",
)
def questions_ambiguity_drift(context: AssetCheckExecutionContext) -> AssetCheckResult:
    qs = _questions(*source_split(context.partition_key))
    accepted = [q for q in qs if q.status == "accepted"]
    rate = sum(bool(q.alternatives) for q in accepted) / len(accepted) if accepted else 0.0
    before = _previous_metadata(context, "questions", "alternatives_rate")
    limit = load_gate_config().drift.max_alternatives_rate_rise
    return _drift("alternatives rate", rate, before, limit, worse_when_higher=True)


# --- episodes ----------------------------------------------------------------------------
def _episodes(source: str, split: str) -> list[Episode]:
    return lake.read_records("episodes", Episode, source=source, split=split)


def eval_trace_integrity(source: str, split: str, pool=None) -> AssetCheckResult:
    return _result(episode_rules.trace_integrity(_episodes(source, split)))


def eval_hooks_grounded(source: str, split: str, pool=None) -> AssetCheckResult:
    return _result(episode_rules.hooks_grounded(_episodes(source, split)))


def eval_verified_match(source: str, split: str, pool=None) -> AssetCheckResult:
    qs = {q.id: q for q in _questions(source, split)}
    return _result(episode_rules.verified_match_question(_episodes(source, split), qs))


@asset_check(
    asset=episodes,
    blocking=False,
    partitions_def=SOURCE_SPLIT,
    description="Warns when the pass rate drops more than configured versus the "
    "previous materialization.",
)
def episodes_pass_rate_drift(context: AssetCheckExecutionContext) -> AssetCheckResult:
    eps = _episodes(*source_split(context.partition_key))
    rate = sum(e.verified for e in eps) / len(eps) if eps else 0.0
    before = _previous_metadata(context, "episodes", "pass_rate")
    limit = load_gate_config().drift.max_pass_rate_drop
    return _drift("pass rate", rate, before, limit, worse_when_higher=False)


def _blocking_check(asset, name: str, evaluator, description: str, needs_pool: bool = False):
    """A blocking, partitioned asset check that wraps a plain evaluator, so `verilearn gate`
    runs the very same code headless (a checks-only job cannot take a partition key)."""
    if needs_pool:

        @asset_check(
            asset=asset,
            name=name,
            blocking=True,
            partitions_def=SOURCE_SPLIT,
            description=description,
        )
        def pooled(
            context: AssetCheckExecutionContext, container_pool: ContainerPoolResource
        ) -> AssetCheckResult:
            return evaluator(*source_split(context.partition_key), container_pool)

        return pooled

    @asset_check(
        asset=asset, name=name, blocking=True, partitions_def=SOURCE_SPLIT, description=description
    )
    def plain(context: AssetCheckExecutionContext) -> AssetCheckResult:
        return evaluator(*source_split(context.partition_key))

    return plain


_BLOCKING = [
    (
        questions,
        "questions_schema_contract",
        eval_schema_contract,
        "Every row is a valid "
        "QuestionRecord: triad vocabulary only, no legacy keys, in its own partition, id = "
        "content hash.",
    ),
    (
        questions,
        "questions_reproduce",
        eval_reproduce,
        "Every accepted answer reproduces in a fresh sandbox task.",
        True,
    ),
    (
        questions,
        "questions_datasets_one_split",
        eval_datasets_one_split,
        "No dataset appears in two splits (tables and every questions partition on disk).",
    ),
    (
        questions,
        "questions_answer_hashes",
        eval_answer_hashes,
        "Every accepted answer (primary and alternatives) has its hash in answer_hashes.",
    ),
    (
        questions,
        "questions_floors",
        eval_floors,
        "Accepted questions reach the floors of "
        "configs/gate.yaml (total, per template, per operator family) when the split has "
        "tables.",
    ),
    (
        episodes,
        "episodes_trace_integrity",
        eval_trace_integrity,
        "Zero critical integrity "
        "failures: contiguous turns, every cell paired with its assistant turn and tool "
        "output, no orphan output.",
    ),
    (
        episodes,
        "episodes_hooks_grounded",
        eval_hooks_grounded,
        "Every hook grounds in a "
        "whole executed line (strict matching); stored counts agree with a recomputation.",
    ),
    (
        episodes,
        "episodes_verified_match",
        eval_verified_match,
        "Verified episodes really match their question's answer.",
    ),
]
BLOCKING_CHECKS = [_blocking_check(*spec) for spec in _BLOCKING]
EVALUATORS = {spec[1]: spec[2] for spec in _BLOCKING}
ANALYSIS_CHECKS = BLOCKING_CHECKS + [questions_ambiguity_drift, episodes_pass_rate_drift]
