"""The toy family's Dagster definitions: two assets, its blocking check, `toy_job`."""

from dagster import AssetExecutionContext, AssetSelection, Definitions, asset, define_asset_job

from resources.home import HomeResource
from verilearn_assets.core import lake
from verilearn_assets.core.partitions import SOURCE_SPLIT, source_split
from verilearn_assets.gate.adapter import blocking_checks

from .family import FAMILY, ToyRollout, ToyTask, make_tasks, roll_out


@asset(key_prefix=["toy"], partitions_def=SOURCE_SPLIT, group_name="toy")
def tasks(context: AssetExecutionContext, home: HomeResource) -> None:
    source, split = source_split(context.partition_key)
    recs = make_tasks(source, split)
    lake.write_records(
        FAMILY.task_lake, recs, ToyTask, home.lake_root(), source=source, split=split
    )


@asset(key_prefix=["toy"], partitions_def=SOURCE_SPLIT, deps=[tasks], group_name="toy")
def rollouts(context: AssetExecutionContext, home: HomeResource) -> None:
    source, split = source_split(context.partition_key)
    recs = [roll_out(t) for t in FAMILY.read_tasks(home.dir(), source, split)]
    lake.write_records(
        FAMILY.rollout_lake, recs, ToyRollout, home.lake_root(), source=source, split=split
    )


def defs() -> Definitions:
    job = define_asset_job("toy_job", selection=AssetSelection.assets(tasks, rollouts))
    return Definitions(assets=[tasks, rollouts], asset_checks=blocking_checks(FAMILY), jobs=[job])
