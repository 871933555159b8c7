"""The Dagster code location: `dagster dev -m verilearn_assets.definitions`.

The platform's own definitions (training, reports, jobs, resources) merged with ingestion's
`defs()` (`verilearn_assets/ingest/defs.py`) and each family's `defs()`
(`verilearn_assets/<family>/defs.py`), found through the family registry, so adding a family
edits nothing here.

Dagster's beta/preview warnings about APIs used on purpose are kept off the terminal from
here on (`core/library_warnings.py`): the imports below are where they fire.
"""

from verilearn_assets.core.library_warnings import keep_off_console

# ruff: noqa: E402 - the imports below come after it on purpose
keep_off_console()

import importlib

from dagster import Definitions

from jobs import JOBS, executor_from_env
from resources.container_pool import ContainerPoolResource
from resources.home import HomeResource
from resources.vllm import VllmResource
from resources.warehouse import WarehouseResource
from verilearn_assets.core.family import family_modules
from verilearn_assets.ingest.defs import defs as ingest_defs
from verilearn_assets.reports.assets import REPORT_ASSETS
from verilearn_assets.training.eval.assets import EVAL_ASSETS, EVAL_CHECKS, EVAL_JOBS
from verilearn_assets.training.grpo.assets import GRPO_ASSETS, GRPO_CHECKS, GRPO_JOBS
from verilearn_assets.training.sft.assets import SFT_ASSETS, SFT_CHECKS, SFT_JOBS
from verilearn_assets.training.sft.dataset_assets import TRAINING_ASSETS, TRAINING_CHECKS

HOME = HomeResource()
RESOURCES = {
    "container_pool": ContainerPoolResource(),
    "vllm": VllmResource(),
    "warehouse": WarehouseResource(home=HOME),
    "home": HOME,
}


def family_defs() -> list[Definitions]:
    """Each registered family's `defs()`, for families that ship a `defs` module."""
    out = []
    for mod in family_modules():
        try:
            module = importlib.import_module(f"{mod}.defs")
        except ModuleNotFoundError as exc:
            if exc.name != f"{mod}.defs":
                raise
            continue
        out.append(module.defs())
    return out


defs = Definitions.merge(
    Definitions(
        assets=[
            *TRAINING_ASSETS,
            *SFT_ASSETS,
            *GRPO_ASSETS,
            *EVAL_ASSETS,
            *REPORT_ASSETS,
        ],
        asset_checks=[*TRAINING_CHECKS, *SFT_CHECKS, *GRPO_CHECKS, *EVAL_CHECKS],
        resources=RESOURCES,
        jobs=[*JOBS, *SFT_JOBS, *GRPO_JOBS, *EVAL_JOBS],
        executor=executor_from_env(),
    ),
    ingest_defs(),
    *family_defs(),
)
