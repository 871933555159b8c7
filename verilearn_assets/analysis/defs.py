"""The analysis family's Dagster definitions, merged by `verilearn_assets/definitions.py`."""

from dagster import AssetSelection, Definitions, define_asset_job

from verilearn_assets.analysis.assets import ANALYSIS_ASSETS
from verilearn_assets.analysis.checks import ANALYSIS_CHECKS
from verilearn_assets.analysis.family import FAMILY

analysis_job = define_asset_job(
    f"{FAMILY.name}_job",
    selection=AssetSelection.assets(*ANALYSIS_ASSETS),
    description="Questions and teacher episodes for one source × split, with their gate.",
)


def defs() -> Definitions:
    return Definitions(assets=ANALYSIS_ASSETS, asset_checks=ANALYSIS_CHECKS, jobs=[analysis_job])
