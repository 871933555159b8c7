"""Drift is a rule kind any family declares (`gate/drift.py`): here the toy family
(`tests/platform/toy_family/`) warns when its accepted rate drops between two
materializations of the same partition, through the gate's check factory and a real
Dagster instance."""

import sys
from pathlib import Path

from dagster import (
    AssetCheckSeverity,
    AssetExecutionContext,
    DagsterInstance,
    MaterializeResult,
    asset,
    materialize,
)

from resources.home import HomeResource
from verilearn_assets.core import lake
from verilearn_assets.core.contract import RuleContext
from verilearn_assets.core.partitions import SOURCE_SPLIT, source_split
from verilearn_assets.gate.adapter import drift_checks
from verilearn_assets.gate.drift import DriftRule

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))
from toy_family.family import FAMILY, ToyTask, make_tasks  # noqa: E402

PARTITION = "template|train"


def accepted_rate(ctx: RuleContext) -> float:
    tasks = ctx.tasks()
    return sum(t.status == "accepted" for t in tasks) / len(tasks) if tasks else 0.0


ACCEPTED_DRIFT = DriftRule(
    name="toy_accepted_drift",
    on="tasks",
    what="accepted rate",
    metadata_key="accepted_rate",
    measure=accepted_rate,
    limit=lambda: 0.1,
    worse_when_higher=False,
    description="Warns when the accepted rate drops more than 0.1 since the previous run.",
)


def _tasks_asset(rejected: int):  # noqa: ANN202
    @asset(key_prefix=["toy"], name="tasks", partitions_def=SOURCE_SPLIT)
    def tasks(context: AssetExecutionContext, home: HomeResource) -> MaterializeResult:
        source, split = source_split(context.partition_key)
        recs = make_tasks(source, split)
        for t in recs[:rejected]:
            t.status = "rejected"
        lake.write_records(FAMILY.task_lake, recs, ToyTask, home.lake_root(), source=source,
                           split=split)  # fmt: skip
        rate = sum(t.status == "accepted" for t in recs) / len(recs)
        return MaterializeResult(metadata={"accepted_rate": rate})

    return tasks


def test_a_family_drift_rule_warns_only_past_its_limit(tmp_path: Path) -> None:
    (check,) = drift_checks(FAMILY, (ACCEPTED_DRIFT,))
    resources = {"home": HomeResource(path=str(tmp_path / "home"))}
    verdicts = []
    with DagsterInstance.ephemeral() as instance:
        for rejected in (0, 0, 2):
            out = materialize(
                [_tasks_asset(rejected), check],
                partition_key=PARTITION,
                instance=instance,
                resources=resources,
            )
            (evaluation,) = out.get_asset_check_evaluations()
            verdicts.append(evaluation)
    first, same, dropped = verdicts
    assert first.passed and "previous None" in first.description
    assert same.passed and "previous 1.0" in same.description
    assert not dropped.passed and dropped.severity == AssetCheckSeverity.WARN
    assert dropped.description == "accepted rate 0.333 (previous 1.0, max drop 0.1)"
    assert dropped.metadata["previous"].value == 1.0
