"""Sandbox configuration (`configs/sandbox.yaml`), validated strictly at load.

The YAML is the reference configuration: backend choice, slot count, limits, the
binaries a jail may see and where executions are logged. A misspelt key is an error.
Its `refactor:` section is the refactor family's jail, validated by that family.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from verilearn_assets.core.config import StrictConfig, load_config
from verilearn_assets.core.home import expand_home


class DockerTls(StrictConfig):
    """TLS for a `tcp://` daemon: client certificate and the CA that signed the daemon's."""

    ca_cert: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    verify: bool = True

    @model_validator(mode="after")
    def _cert_and_key_together(self) -> DockerTls:
        if (self.client_cert is None) != (self.client_key is None):
            raise ValueError("tls: client_cert and client_key go together")
        if self.verify and self.ca_cert is None:
            raise ValueError("tls: verify needs ca_cert (or set verify: false)")
        return self


class DockerHost(StrictConfig):
    """One Docker daemon of the pool, as a `DOCKER_HOST`-style URL.

    `weight` is the host's share of the slots. `same_machine` says whether the daemon runs
    on this machine (default: true for `unix://`, false otherwise): only then can a slot
    use the unix control socket in a bind-mounted directory and the offline image mode.
    A host elsewhere needs `transport: attach` and `image_mode: bundle` or `image`.
    """

    url: str
    weight: int = Field(default=1, ge=1, le=64)
    name: str | None = None  # shown in logs and results; default: the URL
    tls: DockerTls | None = None
    same_machine: bool | None = None

    @field_validator("url")
    @classmethod
    def _docker_url(cls, value: str) -> str:
        if not value.startswith(("unix://", "tcp://")):
            raise ValueError(f"docker host {value!r}: use a unix:///path or tcp://host:port URL")
        return value

    @model_validator(mode="after")
    def _tls_only_over_tcp(self) -> DockerHost:
        if self.tls is not None and not self.url.startswith("tcp://"):
            raise ValueError(f"docker host {self.url}: tls options need a tcp:// URL")
        return self

    @property
    def label(self) -> str:
        return self.name or self.url

    @property
    def local(self) -> bool:
        return self.url.startswith("unix://") if self.same_machine is None else self.same_machine


class DockerSettings(StrictConfig):
    """How the Docker backend gets its image.

    `offline` imports an empty tarball as a scratch image and mounts the host's Python
    runtime read-only, so the sandbox runs exactly the host's pinned libraries and no
    registry is needed. `image` runs a prebuilt image (see docker/Dockerfile.sandbox).
    `bundle` bakes the part of this machine's runtime the jail needs (the interpreter,
    its stdlib, the `bundle_packages` and their dependencies, the shared libraries they
    link) into a scratch image imported into each host over the Docker API: the same
    pinned libraries as `offline`, with no host mount and no registry (docs/scale.md).
    """

    image_mode: Literal["offline", "image", "bundle"] = "offline"
    image: str = "verilearn-sandbox:latest"  # used when image_mode == "image"
    offline_image: str = "verilearn-sandbox-scratch:1"
    python: str = "/usr/local/bin/python"  # interpreter inside a prebuilt image
    worker_dir: str = "/opt/verilearn/sandbox"  # worker code inside a prebuilt image
    shm_mb: int = Field(default=8, ge=1)
    stop_timeout_s: float = Field(default=5.0, gt=0)
    # Daemons to spread slots over; empty = the local daemon from the environment
    # (DOCKER_HOST or /var/run/docker.sock), the single-host setup.
    hosts: list[DockerHost] = Field(default_factory=list)
    # image_mode: bundle: the distributions baked in, with their dependencies (the
    # image's tag is a hash of its content, so a change rebuilds it once per host).
    bundle_packages: list[str] = Field(
        default_factory=lambda: [
            "numpy",
            "pandas",
            "scipy",
            "statsmodels",
            "scikit-learn",
            "pyarrow",
        ]
    )
    bundle_image: str = "verilearn-sandbox-bundle"  # repository; the tag is the hash
    # How the pool talks to a slot's worker, for every host of the pool. `socket`: a unix
    # socket in a bind-mounted control directory (the container must run on this
    # machine). `attach`: the worker's stdin/stdout over the Docker API's attach stream
    # (works over tcp:// + TLS; tables travel in the `begin` message; no host mounts
    # besides offline mode's runtime on a local host).
    transport: Literal["socket", "attach"] = "socket"
    health_interval_s: float = Field(default=5.0, gt=0)  # ping every host this often
    health_timeout_s: float = Field(default=3.0, gt=0)

    @field_validator("bundle_packages")
    @classmethod
    def _distribution_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name or not all(c.isalnum() or c in "._-" for c in name):
                raise ValueError(f"bundle_packages entry {name!r} is not a distribution name")
        return value

    @model_validator(mode="after")
    def _remote_hosts_need_a_remote_transport(self) -> DockerSettings:
        labels = [h.label for h in self.hosts]
        if len(set(labels)) != len(labels):
            raise ValueError(f"docker.hosts: names/URLs must be unique, got {labels}")
        for i, host in enumerate(self.hosts):
            if host.local:
                continue
            missing = []
            if self.image_mode == "offline":
                missing.append(
                    "image_mode: offline mounts this machine's Python runtime "
                    "(use image_mode: bundle or image)"
                )
            if self.transport == "socket":
                missing.append(
                    "transport: socket needs a unix socket bind-mounted from this machine "
                    "(use transport: attach, the Docker attach stream)"
                )
            if not missing:
                continue
            raise ValueError(
                f"docker.hosts[{i}] ({host.url}) is on another machine, which this pool "
                f"cannot drive: {'; '.join(missing)}. Set same_machine: true only if the "
                "daemon really runs here (see docs/scale.md)"
            )
        return self


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
    # The refactor family's jail (one command per step, not a pool slot): kept in this
    # file so every sandbox is configured in one place, validated strictly by
    # `verilearn_assets.refactor.config.load_refactor_config`; the pool ignores it.
    refactor: dict[str, Any] | None = None

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
        return expand_home(self.log_path)


def load_sandbox_config(directory: str | Path | None = None) -> SandboxConfig:
    """Load `configs/sandbox.yaml` (or `<directory>/sandbox.yaml`)."""
    return load_config("sandbox", SandboxConfig, directory)
