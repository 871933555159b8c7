"""`DafnyVerifierResource`: the Dafny verifier for assets, configured from
`configs/dafny.yaml` (fields set on the resource override the file). Thin: the pool,
cache and jail live in `verilearn_assets/dafny/verify/verifier.py`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from verilearn_assets.dafny.config import cache_dir, load_dafny_config
from verilearn_assets.dafny.verify.verifier import DafnyVerifier, VerifierConfig


class DafnyVerifierResource(ConfigurableResource):
    mode: str | None = Field(default=None, description="server | cli (default: the config)")
    processes: int | None = Field(default=None, description="pool size (0: min(2, cores))")
    timeout_s: float | None = Field(default=None, description="wall clock per program")

    def config(self) -> VerifierConfig:
        base = load_dafny_config().verifier.model_dump()
        overrides = {
            k: v
            for k, v in (
                ("mode", self.mode),
                ("processes", self.processes),
                ("timeout_s", self.timeout_s),
            )
            if v is not None
        }
        return VerifierConfig.model_validate({**base, **overrides})

    @contextlib.contextmanager
    def verifier(self, home: Path) -> Iterator[DafnyVerifier]:
        """A started pool with its cache under `home`, closed when the block ends."""
        with DafnyVerifier(self.config(), cache_dir=cache_dir(home)) as v:
            yield v
