"""The Dagster code location: `dagster dev -m verilearn_assets.definitions`."""

from dagster import Definitions

from jobs import JOBS, executor_from_env
from resources.container_pool import ContainerPoolResource
from resources.vllm import VllmResource
from resources.warehouse import WarehouseResource
from verilearn_assets.analysis.assets import ANALYSIS_ASSETS
from verilearn_assets.analysis.checks import ANALYSIS_CHECKS
from verilearn_assets.core.report import REPORT_ASSETS
from verilearn_assets.platform.assets import INGEST_ASSETS
from verilearn_assets.training.assets import TRAINING_ASSETS, TRAINING_CHECKS

RESOURCES = {
    "container_pool": ContainerPoolResource(),
    "vllm": VllmResource(),
    "warehouse": WarehouseResource(),
}

defs = Definitions(
    assets=[*INGEST_ASSETS, *ANALYSIS_ASSETS, *TRAINING_ASSETS, *REPORT_ASSETS],
    asset_checks=[*ANALYSIS_CHECKS, *TRAINING_CHECKS],
    resources=RESOURCES,
    jobs=JOBS,
    executor=executor_from_env(),
)
