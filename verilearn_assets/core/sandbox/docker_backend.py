"""Docker backend: one long-lived container per slot, labelled with its pool's id.

Containers run with no network, a read-only root, a tmpfs workspace, all capabilities
dropped, no-new-privileges, a non-root user and memory/pids/CPU limits. Clean-up only
ever touches containers carrying this pool's label, so two pools can share a daemon.
"""

from __future__ import annotations

import io
import json
import logging
import tarfile
import uuid
from dataclasses import dataclass
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound

from verilearn_assets.core.sandbox.config import SandboxConfig
from verilearn_assets.core.sandbox.jail import (
    CTL_DIR_IN_JAIL,
    LABEL,
    SANDBOX_UID,
    WORKSPACE,
    JailSpec,
    worker_settings,
)

log = logging.getLogger("verilearn.sandbox.docker")

ZYGOTE_ALLOWANCE_MB = 512  # the zygote's libraries and cached tables, besides the task


def docker_client(timeout: int = 10) -> docker.DockerClient:
    return docker.from_env(timeout=timeout)


def docker_available() -> tuple[bool, str]:
    """Whether a daemon answers, and why not when it doesn't."""
    try:
        client = docker_client(timeout=3)
        client.ping()
        client.close()
        return True, "daemon answered"
    except DockerException as exc:
        return False, f"no Docker daemon: {exc}"


def empty_tarball() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w"):
        pass
    return buf.getvalue()


def ensure_offline_image(client: docker.DockerClient, reference: str) -> str:
    """A scratch image from an empty tarball: no registry, no layers, nothing inside."""
    try:
        client.images.get(reference)
        return reference
    except ImageNotFound:
        pass
    repository, _, tag = reference.partition(":")
    client.api.import_image_from_data(empty_tarball(), repository=repository, tag=tag or "latest")
    client.images.get(reference)  # raises if the import did not produce it
    log.info("imported offline scratch image %s", reference)
    return reference


@dataclass
class DockerSlot:
    container: Any
    name: str

    @property
    def ident(self) -> str:
        return f"{self.name} ({self.container.short_id})"


class DockerBackend:
    name = "docker"

    def __init__(self, config: SandboxConfig, pool_id: str) -> None:
        self.config = config
        self.pool_id = pool_id
        self.client = docker_client()
        self.image = ""

    def prepare(self) -> None:
        settings = self.config.docker
        if settings.image_mode == "offline":
            self.image = ensure_offline_image(self.client, settings.offline_image)
        else:
            try:
                self.client.images.get(settings.image)
            except ImageNotFound as exc:
                raise RuntimeError(
                    f"sandbox image {settings.image} not found: build it with "
                    f"`docker build -f docker/Dockerfile.sandbox -t {settings.image} .` "
                    "or set docker.image_mode: offline in configs/sandbox.yaml"
                ) from exc
            self.image = settings.image

    def _spec_for_image(self, spec: JailSpec) -> tuple[list[tuple[str, str]], list[str]]:
        """Prebuilt-image mode: the image brings Python and the worker; mount only data."""
        if self.config.docker.image_mode == "offline":
            return spec.ro_mounts, spec.argv
        worker = self.config.docker.worker_dir
        argv = [
            self.config.docker.python,
            "-I",
            "-B",
            f"{worker}/worker.py",
            "--socket",
            f"{CTL_DIR_IN_JAIL}/ctl.sock",
            "--config",
            json.dumps(worker_settings(self.config)),
        ]
        return spec.data_mounts, argv

    def start_slot(self, index: int, spec: JailSpec) -> DockerSlot:
        mounts, argv = self._spec_for_image(spec)
        volumes = {host: {"bind": jail, "mode": "ro"} for host, jail in mounts}
        memory = f"{self.config.memory_mb + ZYGOTE_ALLOWANCE_MB}m"
        name = f"verilearn-sandbox-{self.pool_id}-{index}-{uuid.uuid4().hex[:6]}"
        container = self.client.containers.run(
            self.image,
            command=argv,
            name=name,
            detach=True,
            labels={LABEL: self.pool_id, "verilearn.sandbox.slot": str(index)},
            network_mode="none",
            read_only=True,
            user=f"{SANDBOX_UID}:{SANDBOX_UID}",
            working_dir=WORKSPACE,
            environment=spec.env,
            volumes=volumes,
            tmpfs={
                WORKSPACE: f"size={self.config.workspace_mb}m,mode=0700,"
                f"uid={SANDBOX_UID},gid={SANDBOX_UID}"
            },
            shm_size=f"{self.config.docker.shm_mb}m",
            mem_limit=memory,
            memswap_limit=memory,
            pids_limit=self.config.pids,
            nano_cpus=int(self.config.cpus * 1e9),
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            init=False,  # the worker is PID 1: the kernel shields it from its own cells
            auto_remove=True,  # a host that dies leaves no container behind
        )
        return DockerSlot(container=container, name=name)

    def is_alive(self, slot: DockerSlot) -> bool:
        try:
            slot.container.reload()
        except NotFound:
            return False
        return slot.container.status == "running"

    def logs(self, slot: DockerSlot) -> str:
        try:
            return slot.container.logs(tail=40).decode(errors="replace")
        except DockerException as exc:
            return f"<no logs: {exc}>"

    def kill_slot(self, slot: DockerSlot) -> None:
        """Remove the container; NotFound means it is already gone (not an error)."""
        try:
            slot.container.remove(force=True)
        except NotFound:
            pass
        except APIError as exc:
            if exc.status_code != 409:  # 409: the daemon is already removing it
                raise

    def own_containers(self) -> list[Any]:
        return self.client.containers.list(all=True, filters={"label": f"{LABEL}={self.pool_id}"})

    def sweep(self) -> list[tuple[str, str]]:
        """Remove every container left with this pool's label; (id, error) for failures."""
        failures = []
        for container in self.own_containers():
            try:
                container.remove(force=True)
            except NotFound:
                continue
            except APIError as exc:
                if exc.status_code != 409:
                    failures.append((container.short_id, str(exc)))
            except DockerException as exc:
                failures.append((container.short_id, str(exc)))
        return failures

    def close(self) -> None:
        self.client.close()
