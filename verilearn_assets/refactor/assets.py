"""The refactor family's assets: tasks and trajectories, both partitioned source × split.

Thin wiring over `sources/` (generation by jailed execution) and `rollout/actor.py` (the actor
loop); the jail is the family's own runner (`configs/sandbox.yaml` `refactor:`), not the pool.
"""

import asyncio
from collections import Counter

from dagster import AssetExecutionContext, Failure, MaterializeResult, MetadataValue, asset

from resources.home import HomeResource
from verilearn_assets.core import lake
from verilearn_assets.core.deploy import op_tags_for
from verilearn_assets.core.llm.budget_records import BudgetCounts, write_counts
from verilearn_assets.core.partitions import SOURCE_SPLIT, source_split
from verilearn_assets.refactor.config import load_refactor_config
from verilearn_assets.refactor.family import FAMILY
from verilearn_assets.refactor.records import RefactorTask
from verilearn_assets.refactor.rollout.actor import TASKS_LAKE, Actor
from verilearn_assets.refactor.rollout.prompts import load_prompts
from verilearn_assets.refactor.rollout.teachers import (
    ProgramTeacher,
    VllmTeacher,
    load_actors,
    model_chat,
)
from verilearn_assets.refactor.sources.catalog import load_catalog, load_corpus, read_corpus
from verilearn_assets.refactor.sources.llm import generate_llm_tasks, vllm_proposer
from verilearn_assets.refactor.sources.partition import generate_tasks


@asset(
    name="tasks",
    key_prefix=[FAMILY.name],
    partitions_def=SOURCE_SPLIT,
    op_tags=op_tags_for(["sandbox"]),  # ast-grep in a jail: a Celery worker with the sandbox
    group_name="refactor",
    description="ast-grep refactoring tasks on the bundled corpora for one source × split: "
    "template (one catalog rule) and procedural (two rules in sequence, one rule on one "
    "file); the target is computed by running the rule in the jail, and the repository's "
    "tests must still pass. Rejected candidates are kept with their reason.",
)
def tasks(context: AssetExecutionContext, home: HomeResource) -> MaterializeResult:
    source, split = source_split(context.partition_key)
    config = load_refactor_config().for_home(home.dir())
    rules = load_catalog()  # every language's task rules
    wanted = config.generation.rules
    if wanted is not None:
        unknown = sorted(set(wanted) - {r.id for r in rules})
        if unknown:
            raise Failure(description=f"refactor.yaml: generation.rules names unknown {unknown}")
        rules = [r for r in rules if r.id in wanted]
    gen = config.generation
    # an entry that cannot be fetched or fails its pin fails alone: the split's other
    # repositories still get their tasks, and the failure is logged and in the metadata
    corpus = read_corpus(home=home.dir()).for_split(split)
    for failure in corpus.failures:
        context.log.error(f"refactor corpus: {failure.error}")
    budget = BudgetCounts()
    if source == "llm":
        records = _llm_tasks(context, split, config, corpus.repos, budget)
    else:
        records = generate_tasks(
            source,
            split,
            config,
            repos=corpus.repos,
            rules=rules,
            max_pairs_per_repo=gen.max_pairs_per_repo,
        )
    lake.write_records(
        TASKS_LAKE, records, RefactorTask, home.lake_root(), source=source, split=split
    )
    write_counts(budget, FAMILY.name, "tasks", home.lake_root(), source, split)
    status = Counter(t.status for t in records)
    return MaterializeResult(
        metadata={
            **budget.metadata(),
            "tasks": len(records),
            "accepted": status["accepted"],
            "rejected": status["rejected"],
            "repos": ", ".join(sorted({t.repo for t in records})) or "-",
            "reference_steps": sum(
                len(t.reference_actions) for t in records if t.status == "accepted"
            ),
            "backend": config.backend,
            "corpus_failures": "; ".join(f.error for f in corpus.failures) or "-",
        }
    )


def _llm_tasks(
    context: AssetExecutionContext,
    split: str,
    config,  # noqa: ANN001
    repos: list,
    budget: BudgetCounts,
) -> list[RefactorTask]:
    """Model-proposed tasks, triangulated; none when no proposing actor is configured.
    The proposer's context-budget losses are added to `budget`."""
    gen = config.generation
    if gen.llm_actor is None:
        context.log.info("refactor/llm: generation.llm_actor is not set, so no llm tasks")
        return []
    propose, close = vllm_proposer(load_actors().actor(gen.llm_actor))

    async def run() -> list[RefactorTask]:
        try:
            return await generate_llm_tasks(
                repos, propose, load_prompts(), config, gen.llm_proposals_per_repo,
                gen.llm_code_chars, config.actors.seed,
            )  # fmt: skip
        finally:
            await close()
            budget.merge(propose.budget_counts)

    return asyncio.run(run())


@asset(
    name="trajectories",
    key_prefix=[FAMILY.name],
    partitions_def=SOURCE_SPLIT,
    op_tags=op_tags_for(["sandbox"]),  # ast-grep in a jail: a Celery worker with the sandbox
    deps=[tasks],
    group_name="refactor",
    description="SRL trajectories: per step a <think>/<action>/<state_update> answer, the "
    "action run in the jail, tests, a reward (1 / capped partial / 0 + failure class) and "
    "the state version. Committed step by step to SQLite, so a killed run resumes.",
)
def trajectories(context: AssetExecutionContext, home: HomeResource) -> MaterializeResult:
    source, split = source_split(context.partition_key)
    config = load_refactor_config().for_home(home.dir())
    task_records = [t for t in FAMILY.read_tasks(home.dir(), source, split)]
    if config.actors.teacher == "vllm":
        if not config.actors.actor:
            raise Failure(description="refactor.yaml: actors.teacher is vllm but no actors.actor")
        teacher = VllmTeacher(load_actors().actor(config.actors.actor))
    else:
        teacher = ProgramTeacher()
    actor = Actor(
        home=home.dir(),
        teacher=teacher,
        config=config,
        prompts=load_prompts(),
        repos={r.name: r for r in load_corpus(home=home.dir(), strict=False)},
        extra_steps=config.actors.extra_steps,
        seed=config.actors.seed,
        concurrency=config.actors.concurrency,
        redis_url=config.actors.redis_url if config.actors.queue == "redis" else None,
    )

    close_compactor = None
    if config.state.compaction_actor:
        actor.compactor, close_compactor = model_chat(
            load_actors().actor(config.state.compaction_actor)
        )

    async def run():  # noqa: ANN202
        try:
            return await actor.run(task_records, source, split)  # type: ignore[arg-type]
        finally:
            if isinstance(teacher, VllmTeacher):
                await teacher.close()
            if close_compactor is not None:
                await close_compactor()

    try:
        summary = asyncio.run(run())
    finally:
        actor.close()
    budget = BudgetCounts()
    for model in (teacher, actor.compactor):  # the actor's and the state compactor's prompts
        budget.merge(getattr(model, "budget_counts", None) or BudgetCounts())
    write_counts(budget, FAMILY.name, "trajectories", home.lake_root(), source, split)
    meta = summary.metadata()
    context.log.info(
        f"refactor/{source}/{split}: {meta['verified_steps']}/{meta['steps']} verified steps "
        f"by {teacher.name} (precision {meta['precision']})"
    )
    return MaterializeResult(
        metadata={
            **meta,
            **budget.metadata(),
            "teacher": teacher.name,
            "model": teacher.model,
            "run": MetadataValue.text(summary.run),
        }
    )


REFACTOR_ASSETS = [tasks, trajectories]
