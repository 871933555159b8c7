"""Jobs and the executor choice.

The embedded default runs steps in process: the heavy lifting already fans out inside a
step (sandbox slots, vLLM requests), and a 2-core machine gains nothing from one process
per step. Set `VERILEARN_EXECUTOR=multiprocess` to run steps in parallel processes on a
bigger host, or `celery` (or `executor: celery` in configs/deploy.yaml) to hand each step to
Dagster's Celery executor (see docs/scale.md).
"""

from __future__ import annotations

import os

from dagster import (
    AssetSelection,
    ExecutorDefinition,
    define_asset_job,
    in_process_executor,
    multiprocess_executor,
)

from verilearn_assets.core.deploy import celery_executor_config, load_deploy_config

EXECUTORS: dict[str, ExecutorDefinition] = {
    "in_process": in_process_executor,
    "multiprocess": multiprocess_executor,
}


def executor_from_env() -> ExecutorDefinition:
    """`VERILEARN_EXECUTOR`, else `executor:` of configs/deploy.yaml, else in process.

    `celery` is Dagster's Celery executor configured from deploy.yaml (broker, backend, the
    settings the workers share), so the code location and every worker agree on it.
    """
    name = os.environ.get("VERILEARN_EXECUTOR") or load_deploy_config().executor
    if name == "celery":
        from dagster_celery import celery_executor  # only the distributed mode needs it

        return celery_executor.configured(celery_executor_config(load_deploy_config()))
    if name not in EXECUTORS:
        raise ValueError(
            f"VERILEARN_EXECUTOR={name!r}: expected one of {sorted([*EXECUTORS, 'celery'])}"
        )
    return EXECUTORS[name]


platform_job = define_asset_job(
    "platform_job",
    selection=AssetSelection.assets("raw_datasets", "tables"),
    description="Typed, profiled tables of one catalog dataset (one partition per dataset): "
    "a dataset that fails is one failed partition.",
)

# Its own job: an unpartitioned asset beside the per-dataset ones would make the job's
# partitioning ambiguous, and would re-run the smoke suite for every dataset.
smoke_job = define_asset_job(
    "smoke_job",
    selection=AssetSelection.assets("smoke_suite"),
    description="The sandbox smoke suite (known answers, isolation, no network).",
)

training_job = define_asset_job(
    "training_job",
    selection=AssetSelection.assets("sft_dataset"),
    description="The smoke suite and the SFT data behind the reliability gate.",
)

reports_job = define_asset_job(
    "reports_job",
    selection=AssetSelection.groups("reports"),
    description="DuckDB staging views, marts and the report.",
)

# Each family's own job (`analysis_job`, `dafny_job`, …) comes with its `defs()`.
JOBS = [platform_job, smoke_job, training_job, reports_job]
