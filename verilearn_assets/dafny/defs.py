"""The Dafny family's Dagster definitions, merged by `verilearn_assets/definitions.py`."""

from dagster import AssetSelection, Definitions, define_asset_job

from resources.dafny import DafnyVerifierResource
from verilearn_assets.dafny.assets import DAFNY_ASSETS
from verilearn_assets.dafny.checks import CHECKS
from verilearn_assets.dafny.family import FAMILY

dafny_job = define_asset_job(
    f"{FAMILY.name}_job",
    selection=AssetSelection.assets(*DAFNY_ASSETS),
    description="Dafny tasks and verified trajectories for one source × split, with the gate.",
)


def defs() -> Definitions:
    return Definitions(
        assets=DAFNY_ASSETS,
        asset_checks=CHECKS,
        jobs=[dafny_job],
        resources={"dafny": DafnyVerifierResource()},
    )
