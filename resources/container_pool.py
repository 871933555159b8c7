"""Dagster resource: the sandbox pool for assets (thin wiring over `sandbox.pool`)."""

from __future__ import annotations

from dagster import ConfigurableResource

from verilearn_assets.core.sandbox.config import SandboxConfig, load_sandbox_config
from verilearn_assets.core.sandbox.pool import SandboxPool


class ContainerPoolResource(ConfigurableResource):
    """Gives assets a `SandboxPool` built from configs/sandbox.yaml plus overrides."""

    backend: str | None = None  # auto | docker | bwrap; None keeps the YAML's choice
    slots: int | None = None
    config_dir: str | None = None

    def sandbox_config(self) -> SandboxConfig:
        config = load_sandbox_config(self.config_dir)
        overrides = {
            k: v for k, v in (("backend", self.backend), ("slots", self.slots)) if v is not None
        }
        return SandboxConfig.model_validate({**config.model_dump(), **overrides})

    def get_pool(self, extra_ro_mounts: list[str] | None = None) -> SandboxPool:
        """A new, not yet started pool: use it as `async with resource.get_pool() as p`."""
        return SandboxPool(self.sandbox_config(), extra_ro_mounts=extra_ro_mounts or [])
