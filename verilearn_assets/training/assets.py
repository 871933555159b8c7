"""Dagster wiring for the training side: the sandbox smoke suite and `sft_dataset`.

`sft_dataset` is the training-data asset. Its direct dependencies are `questions`,
`episodes` (every source of its split) and `smoke_suite`; it refuses to materialize
unless every blocking check on those inputs passed on their latest materialization, and
its failure names each check, partition and reason.
"""

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetDep,
    AssetExecutionContext,
    Failure,
    MaterializeResult,
    MetadataValue,
    MultiToSingleDimensionPartitionMapping,
    asset,
    asset_check,
)

from resources.container_pool import ContainerPoolResource
from verilearn_assets.analysis.assets import episodes, questions
from verilearn_assets.analysis.checks import BLOCKING_CHECKS
from verilearn_assets.analysis.records import Episode
from verilearn_assets.analysis.sft_rows import sft_frame
from verilearn_assets.core import lake
from verilearn_assets.core.records import SOURCES
from verilearn_assets.core.sandbox.smoke import run_smoke_suite
from verilearn_assets.gate.adapter import gate_failures
from verilearn_assets.platform.defs import SPLIT, partition_key

_BY_SPLIT = MultiToSingleDimensionPartitionMapping(partition_dimension_name="split")


@asset(
    group_name="training",
    description="Fixed programs with hand-known answers run "
    "through the real sandbox: normalisation, isolation between tasks, no network.",
)
def smoke_suite(
    context: AssetExecutionContext, container_pool: ContainerPoolResource
) -> MaterializeResult:
    outcome = run_smoke_suite(container_pool.sandbox_config(), lake.home() / "smoke")
    context.log.info(outcome.summary())
    return MaterializeResult(
        metadata={
            "programs": outcome.checked,
            "failures": len(outcome.failures),
            "summary": outcome.summary(),
        }
    )


@asset_check(
    asset=smoke_suite,
    blocking=True,
    description="The smoke suite's programs all gave their known answers.",
)
def smoke_suite_passes(context: AssetCheckExecutionContext) -> AssetCheckResult:
    mat = context.instance.get_latest_materialization_event(smoke_suite.key)
    meta = mat.asset_materialization.metadata if mat and mat.asset_materialization else {}
    failures = int(meta["failures"].value) if "failures" in meta else -1
    summary = meta["summary"].value if "summary" in meta else "smoke suite never ran"
    return AssetCheckResult(
        passed=failures == 0, description=str(summary), metadata={"failures": failures}
    )


GATE_CHECK_KEYS: list[AssetCheckKey] = [key for chk in BLOCKING_CHECKS for key in chk.check_keys]


@asset(
    partitions_def=SPLIT,
    group_name="training",
    deps=[
        AssetDep(questions, partition_mapping=_BY_SPLIT),
        AssetDep(episodes, partition_mapping=_BY_SPLIT),
        smoke_suite,
    ],
    description="Chat-format SFT rows from verified episodes of one split, behind the "
    "reliability gate: refuses unless every blocking check on its inputs passed.",
)
def sft_dataset(context: AssetExecutionContext) -> MaterializeResult:
    split = context.partition_key
    partitions = [str(partition_key(s, split)) for s in SOURCES]
    reasons, considered = gate_failures(context.instance, GATE_CHECK_KEYS, partitions)
    smoke_key = smoke_suite_passes.check_key
    smoke = context.instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [smoke_key]
    ).get(smoke_key)
    if smoke is None or smoke.event is None:
        reasons.append("check smoke_suite_passes on smoke_suite: never evaluated")
    elif not smoke.event.dagster_event.event_specific_data.passed:
        reasons.append(
            "check smoke_suite_passes on smoke_suite: FAILED — "
            f"{smoke.event.dagster_event.event_specific_data.description}"
        )
    if not considered:
        reasons.append(f"no episodes partition of split {split!r} has been materialized")
    if reasons:
        raise Failure(
            description=f"training gate closed for split {split!r}: " + " | ".join(reasons),
            metadata={"blocked_by": MetadataValue.md("\n".join(f"- {r}" for r in reasons))},
        )
    eps = []
    for part in considered:
        source = part.split("|")[0]
        eps.extend(lake.read_records("episodes", Episode, source=source, split=split))
    frame = sft_frame(eps)
    lake.write_partition("sft_dataset", frame, split=split)
    return MaterializeResult(
        metadata={
            "rows": frame.height,
            "episodes_seen": len(eps),
            "partitions": MetadataValue.md("\n".join(f"- {p}" for p in considered)),
        }
    )


TRAINING_ASSETS = [smoke_suite, sft_dataset]
TRAINING_CHECKS = [smoke_suite_passes]
