"""The analysis family as the platform sees it: questions, episodes, blocking rules, SFT rows.

Every rule is a plain function of a `RuleContext`; the Dagster checks and `verilearn gate`
run these same functions (`gate/registry.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from verilearn_assets.analysis.config import QuestionFloors, load_questions_config
from verilearn_assets.analysis.evaluation import evaluate_student
from verilearn_assets.analysis.grpo import (
    grpo_environment,
    grpo_pass_rates,
    grpo_prompt_segments,
    grpo_prompts,
    grpo_scorer,
)
from verilearn_assets.analysis.records import Episode, QuestionRecord
from verilearn_assets.analysis.rules import episodes as episode_rules
from verilearn_assets.analysis.rules import questions as question_rules
from verilearn_assets.analysis.sft import sft_rows
from verilearn_assets.analysis.sources.generation_stats import LAKE as GENERATION_STATS
from verilearn_assets.analysis.sources.generation_stats import SearchRejectionRecord
from verilearn_assets.analysis.verify.verifier import reverify
from verilearn_assets.core.contract import GateRule, RuleContext, RuleOutcome
from verilearn_assets.core.family import Family, GrpoTask
from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.coverage import catalog_coverage as ingest_coverage
from verilearn_assets.core.ingest.splits import catalog_splits
from verilearn_assets.core.ingest.tables import load_table_records
from verilearn_assets.core.records import SOURCES, SPLITS, Record


def _questions(ctx: RuleContext) -> list[QuestionRecord]:
    return cast(list[QuestionRecord], ctx.tasks())


def _episodes(ctx: RuleContext) -> list[Episode]:
    return cast(list[Episode], ctx.rollouts())


# --- questions ---------------------------------------------------------------------------
def schema_contract(ctx: RuleContext) -> RuleOutcome:
    return question_rules.schema_contract(ctx.task_frame(), ctx.source, ctx.split)


def reproduce(ctx: RuleContext) -> RuleOutcome:
    """Re-execute accepted questions in fresh sandbox tasks, under the very time limit
    that accepted them (`verify.timeout_s` of configs/questions.yaml)."""
    accepted = [q for q in _questions(ctx) if q.status == "accepted"]
    limit = load_questions_config().rules.reproduce_limit
    sample = accepted if limit is None else accepted[:limit]
    paths = {t.id: t.path for t in load_table_records(ctx.home, ctx.split)}
    timeout_s = load_questions_config().verify.timeout_s
    assert ctx.pool is not None  # the registry refuses a pool rule without one

    async def run():
        async with ctx.pool.get_pool() as pool:
            return await reverify(pool, sample, paths, timeout_s)

    mismatches = asyncio.run(run())
    return RuleOutcome(
        rule="reproduce",
        checked=len(sample),
        failures=[f"question {m.question_id}: {m.reason}" for m in mismatches],
        stats={"timeout_s": -1.0 if timeout_s is None else timeout_s},
    )


def datasets_one_split(ctx: RuleContext) -> RuleOutcome:
    pairs = [(t.dataset, t.split) for t in load_table_records(ctx.home)]
    for src in SOURCES:
        for spl in SPLITS:
            other = RuleContext(ctx.family, src, spl, ctx.home)
            frame = other.task_frame()
            if "dataset" in frame.columns:
                pairs.extend((d, spl) for d in frame["dataset"].unique().to_list())
    return question_rules.datasets_in_one_split(pairs)


def answer_hashes(ctx: RuleContext) -> RuleOutcome:
    return question_rules.answer_hash_present(_questions(ctx))


def floors(ctx: RuleContext) -> RuleOutcome:
    """Floors per source; and, whatever the source, a partition with no tables or no
    accepted question never passes: an empty split is not a verified one."""
    qs = _questions(ctx)
    tables = load_table_records(ctx.home, ctx.split)
    if not tables:
        return RuleOutcome(
            rule="floors",
            checked=0,
            failures=[f"no tables in split {ctx.split!r}: ingestion produced nothing for it"],
        )
    cfg = load_questions_config().floors.get(ctx.source) or QuestionFloors()
    outcome = question_rules.floors_for(qs, cfg, {t.dataset for t in tables})
    n_tables = len(tables)
    outcome.stats["tables"] = n_tables
    return outcome


def catalog_coverage(ctx: RuleContext) -> RuleOutcome:
    """Every enabled dataset the catalog assigns to this split has its tables in the lake;
    a failed download or parse is named with its reason instead of shrinking the split.
    Datasets marked `optional: true` are listed in the stats, not failed."""
    cfg = load_datasets_config()
    missing = ingest_coverage(cfg, ctx.home, ctx.split, include_optional=True)
    required = [m for m in missing if not m.optional]
    optional = [m.dataset for m in missing if m.optional]
    assigned = sum(1 for s in catalog_splits(cfg, ctx.home).values() if s == ctx.split)
    return RuleOutcome(
        rule="catalog_coverage",
        checked=assigned,
        failures=[m.line() for m in required],
        stats={"optional_missing": ", ".join(optional) or "none"},
    )


# --- episodes ----------------------------------------------------------------------------
def trace_integrity(ctx: RuleContext) -> RuleOutcome:
    return episode_rules.trace_integrity(_episodes(ctx))


def hooks_grounded(ctx: RuleContext) -> RuleOutcome:
    return episode_rules.hooks_grounded(_episodes(ctx))


def verified_match(ctx: RuleContext) -> RuleOutcome:
    qs = {q.id: q for q in _questions(ctx)}
    return episode_rules.verified_match_question(_episodes(ctx), qs)


RULES = (
    GateRule(
        "questions_schema_contract",
        "tasks",
        schema_contract,
        "Every row is a valid QuestionRecord: triad vocabulary only, no legacy keys, in its "
        "own partition, id = content hash.",
    ),
    GateRule(
        "questions_reproduce",
        "tasks",
        reproduce,
        "Every accepted answer reproduces in a fresh sandbox task, under the time limit of "
        "configs/questions.yaml (verify.timeout_s).",
        needs_pool=True,
    ),
    GateRule(
        "questions_datasets_one_split",
        "tasks",
        datasets_one_split,
        "No dataset appears in two splits (tables and every questions partition on disk).",
    ),
    GateRule(
        "questions_answer_hashes",
        "tasks",
        answer_hashes,
        "Every accepted answer (primary and alternatives) has its hash in answer_hashes.",
    ),
    GateRule(
        "questions_floors",
        "tasks",
        floors,
        "The split has tables, at least one question is accepted, and accepted questions "
        "reach the floors of configs/questions.yaml (total, per template, per operator family).",
    ),
    GateRule(
        "questions_conventions_stated",
        "tasks",
        question_rules.conventions_stated_rule,
        "On a sample of accepted questions, no answer moves beyond tolerance under a named "
        "convention variant (tied mode, population std, Mann-Whitney continuity, ...) unless "
        "the wording states it or an alternative accepts it.",
    ),
    GateRule(
        "questions_catalog_coverage",
        "tasks",
        catalog_coverage,
        "Every enabled, non-optional catalog dataset assigned to the split has its tables in "
        "the lake; each missing one is named with why (download failed, parse failed, …).",
    ),
    GateRule(
        "episodes_trace_integrity",
        "rollouts",
        trace_integrity,
        "Zero critical integrity failures: contiguous turns, every cell paired with its "
        "assistant turn and tool output, no orphan output.",
    ),
    GateRule(
        "episodes_hooks_grounded",
        "rollouts",
        hooks_grounded,
        "Every hook grounds in a whole executed line (strict matching); stored counts agree "
        "with a recomputation.",
    ),
    GateRule(
        "episodes_verified_match",
        "rollouts",
        verified_match,
        "Verified episodes really match their question's answer.",
    ),
)


def _pass_rates(home: Path, split: str) -> dict[str, float]:
    return grpo_pass_rates(FAMILY, home, split)


def _sft_rows(rollouts: Sequence[Record]):
    return sft_rows(cast(Sequence[Episode], rollouts))


FAMILY = Family(
    name="analysis",
    task_asset="questions",
    rollout_asset="episodes",
    task_model=QuestionRecord,
    rollout_model=Episode,
    sft_rows=_sft_rows,
    rules=RULES,
    description="Data-analysis questions over real tables, answers proven by clean "
    "re-execution; multi-turn teacher episodes with grounded hooks.",
    task_columns=("dataset", "template", "difficulty", "answer"),
    rollout_columns=("question_id", "teacher", "failure_class", "n_turns", "answer"),
    # lake rows besides tasks/rollouts that the SQL reads (typed when absent)
    extra={"lake_models": {GENERATION_STATS: SearchRejectionRecord}},
    grpo=GrpoTask(
        prompts=grpo_prompts,
        prompt_segments=grpo_prompt_segments,
        scorer=grpo_scorer,
        rewards=("outcome", "partial", "process"),
        pass_rates=_pass_rates,
        environment=grpo_environment,
    ),
    # evaluation: the student loop in the sandbox (evaluation.py), not one completion
    evaluation=evaluate_student,
    eval_roles=("default",),
    eval_group_label="template family",
)
