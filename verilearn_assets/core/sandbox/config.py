"""Sandbox configuration (`configs/sandbox.yaml`), validated strictly at load.

The YAML is the reference configuration: backend choice, slot count, limits, the
binaries a jail may see and where executions are logged. A misspelt key is an error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from verilearn_assets.core.config import StrictConfig, load_config


class DockerSettings(StrictConfig):
    """How the Docker backend gets its image.

    `offline` imports an empty tarball as a scratch image and mounts the host's Python
    runtime read-only, so the sandbox runs exactly the host's pinned libraries and no
    registry is needed. `image` runs a prebuilt image (see docker/Dockerfile.sandbox).
    """

    image_mode: Literal["offline", "image"] = "offline"
    image: str = "verilearn-sandbox:latest"  # used when image_mode == "image"
    offline_image: str = "verilearn-sandbox-scratch:1"
    python: str = "/usr/local/bin/python"  # interpreter inside a prebuilt image
    worker_dir: str = "/opt/verilearn/sandbox"  # worker code inside a prebuilt image
    shm_mb: int = Field(default=8, ge=1)
    stop_timeout_s: float = Field(default=5.0, gt=0)


class SandboxConfig(StrictConfig):
    backend: Literal["auto", "docker", "bwrap"] = "auto"
    slots: int = Field(default=2, ge=1, le=64)
    cell_timeout_s: float = Field(default=30.0, gt=0)
    start_timeout_s: float = Field(default=60.0, gt=0)
    memory_mb: int = Field(default=2048, ge=128)  # extra memory a task may allocate
    pids: int = Field(default=64, ge=8)
    cpus: float = Field(default=1.0, gt=0)
    workspace_mb: int = Field(default=64, ge=1)
    output_cap_bytes: int = Field(default=20_000, ge=256)  # per stream, per cell
    value_repr_chars: int = Field(default=2_000, ge=80)
    hook_summary_chars: int = Field(default=500, ge=40)
    submission_cap_bytes: int = Field(default=1_000_000, ge=1024)
    preload: list[str] = Field(default_factory=lambda: ["numpy", "pandas", "scipy.stats"])
    # Host paths a jail may see besides the Python runtime (read-only). The bwrap backend
    # binds exactly these; Docker's offline mode mounts them too.
    system_ro_paths: list[str] = Field(
        default_factory=lambda: ["/usr/lib", "/usr/lib64", "/usr/share/zoneinfo", "/lib", "/lib64"]
    )
    # Binaries a cell may spawn (absolute paths inside the jail); empty = none besides
    # Python itself. Spawning is still bounded by the pids limit.
    allowed_binaries: list[str] = Field(default_factory=list)
    env_passthrough: list[str] = Field(
        default_factory=lambda: ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"]
    )
    log_path: str | None = None  # JSONL, one line per task; `$VAR` and `~` expanded
    docker: DockerSettings = Field(default_factory=DockerSettings)

    @field_validator("preload")
    @classmethod
    def _modules_are_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not all(part.isidentifier() for part in name.split(".")):
                raise ValueError(f"preload entry {name!r} is not a module name")
        return value

    def resolved_log_path(self) -> Path | None:
        """The log path with `$VERILEARN_HOME` etc. expanded (default home: ./.verilearn)."""
        if not self.log_path:
            return None
        home = os.environ.get("VERILEARN_HOME", ".verilearn")
        expanded = self.log_path.replace("${VERILEARN_HOME}", home)
        expanded = os.path.expandvars(expanded.replace("$VERILEARN_HOME", home))
        return Path(os.path.expanduser(expanded)).resolve()


def load_sandbox_config(directory: str | Path | None = None) -> SandboxConfig:
    """Load `configs/sandbox.yaml` (or `<directory>/sandbox.yaml`)."""
    return load_config("sandbox", SandboxConfig, directory)
