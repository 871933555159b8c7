"""The refactor family's Dagster definitions, merged by `verilearn_assets/definitions.py`."""

from dagster import AssetSelection, Definitions, define_asset_job

from verilearn_assets.refactor.assets import REFACTOR_ASSETS
from verilearn_assets.refactor.checks import CHECKS
from verilearn_assets.refactor.family import FAMILY

refactor_job = define_asset_job(
    f"{FAMILY.name}_job",
    selection=AssetSelection.assets(*REFACTOR_ASSETS),
    description="Refactoring tasks and verified trajectories for one source × split.",
)


def defs() -> Definitions:
    return Definitions(assets=REFACTOR_ASSETS, asset_checks=CHECKS, jobs=[refactor_job])
