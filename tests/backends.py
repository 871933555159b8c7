"""The jail backends a test may ask for: skip when one is missing here, fail when CI says it
must be present (`VERILEARN_REQUIRE_DOCKER=1`)."""

from __future__ import annotations

import os

import pytest

from verilearn_assets.core.isolation.bwrap import bwrap_path
from verilearn_assets.core.isolation.docker import docker_available

BACKENDS = ["docker", "bwrap"]


def require_backend(backend: str) -> None:
    if backend == "docker":
        ok, why = docker_available()
        if not ok:
            if os.environ.get("VERILEARN_REQUIRE_DOCKER") == "1":
                pytest.fail(f"VERILEARN_REQUIRE_DOCKER=1 but {why}")
            pytest.skip(why)
    elif bwrap_path() is None:
        pytest.skip("bubblewrap is not installed")
