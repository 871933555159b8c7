"""Dagster wiring of the SFT stage (`sft_model` and the trainability check)."""

from dagster import AssetChecksDefinition, AssetsDefinition, JobDefinition

SFT_ASSETS: list[AssetsDefinition] = []
SFT_CHECKS: list[AssetChecksDefinition] = []
SFT_JOBS: list[JobDefinition] = []
