"""Dagster wiring of evaluation (`model_eval`, partitioned by split)."""

from dagster import AssetChecksDefinition, AssetsDefinition, JobDefinition

EVAL_ASSETS: list[AssetsDefinition] = []
EVAL_CHECKS: list[AssetChecksDefinition] = []
EVAL_JOBS: list[JobDefinition] = []
