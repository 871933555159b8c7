"""Dagster wiring for the training side: the sandbox smoke suite and `sft_dataset`.

`sft_dataset` is the training-data asset. Its direct dependencies are every registered
family's task and rollout assets (every source of its split) and `smoke_suite`; it refuses
to materialize unless every blocking check on those inputs passed on their latest
materialization, and its failure names each check, partition and reason. It reads only
the family contract, so a new family's rows arrive here with no edit to this file.
"""

from dagster import (
    AssetCheckExecutionContext,
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
from resources.home import HomeResource
from verilearn_assets.core import lake
from verilearn_assets.core.deploy import op_tags_for
from verilearn_assets.core.family import SftRow, families, family
from verilearn_assets.core.partitions import SPLIT, source_split
from verilearn_assets.core.records import SOURCES
from verilearn_assets.core.sandbox.smoke import run_smoke_suite
from verilearn_assets.gate.adapter import asset_key
from verilearn_assets.gate.training_gate import GateOptions, gate_closed, training_gate

_BY_SPLIT = MultiToSingleDimensionPartitionMapping(partition_dimension_name="split")


@asset(
    group_name="training",
    op_tags=op_tags_for(["sandbox"]),
    description="Fixed programs with hand-known answers run "
    "through the real sandbox: normalisation, isolation between tasks, no network.",
)
def smoke_suite(
    context: AssetExecutionContext, container_pool: ContainerPoolResource, home: HomeResource
) -> MaterializeResult:
    outcome = run_smoke_suite(container_pool.sandbox_config(), home.dir() / "smoke")
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


def _family_deps() -> list[AssetDep]:
    """Every family's task and rollout asset, all sources of the split."""
    return [
        AssetDep(asset_key(fam, which), partition_mapping=_BY_SPLIT)
        for fam in families().values()
        for which in ("tasks", "rollouts")
    ]


@asset(
    partitions_def=SPLIT,
    group_name="training",
    deps=[*_family_deps(), smoke_suite],
    description="Chat-format SFT rows (every family, one shape) from the verified rollouts "
    "of one split, behind the reliability gate: refuses unless every blocking check on its "
    "inputs passed, and refuses an empty split.",
)
def sft_dataset(context: AssetExecutionContext, home: HomeResource) -> MaterializeResult:
    split = context.partition_key
    gate = training_gate(
        context.instance,
        split,
        list(families()),
        SOURCES,
        GateOptions(unpartitioned=(smoke_suite_passes.check_key,)),
    )
    if not gate.open:
        raise gate_closed(f"training gate closed for split {split!r}: ", gate)
    considered = {n: p for n, p in gate.partitions.items() if n in gate.families}
    rows: list[SftRow] = []
    seen = 0
    per_family: dict[str, int] = {}
    for name, parts in considered.items():
        fam = family(name)
        before = len(rows)
        for part in parts:
            source, _ = source_split(part)
            rollouts = [r for r in fam.read_rollouts(home.dir(), source, split) if r.verified]
            seen += len(rollouts)
            rows.extend(fam.sft_rows(rollouts))
        per_family[name] = len(rows) - before
    if not rows:
        raise Failure(
            description=f"sft_dataset [{split}]: no verified rollout in any materialized "
            f"partition ({', '.join(f'{n}: {p}' for n, p in considered.items())}) — "
            "an empty split is never training data"
        )
    lake.write_records("sft_dataset", rows, SftRow, home.lake_root(), split=split)
    return MaterializeResult(
        metadata={
            "rows": len(rows),
            "verified_rollouts_seen": seen,
            **{f"rows/{n}": c for n, c in per_family.items()},
            "partitions": MetadataValue.md(
                "\n".join(f"- {n} {p}" for n, ps in considered.items() for p in ps)
            ),
        }
    )


TRAINING_ASSETS = [smoke_suite, sft_dataset]
TRAINING_CHECKS = [smoke_suite_passes]
