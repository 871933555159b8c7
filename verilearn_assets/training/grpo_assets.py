"""Dagster wiring of the GRPO stage (`grpo_model`)."""

from dagster import AssetChecksDefinition, AssetsDefinition, JobDefinition

GRPO_ASSETS: list[AssetsDefinition] = []
GRPO_CHECKS: list[AssetChecksDefinition] = []
GRPO_JOBS: list[JobDefinition] = []
