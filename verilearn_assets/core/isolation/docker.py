"""The Docker backend: a `JailSpec` rendered as docker-py `containers.run/create` arguments.

No network (`network_mode=none`), a read-only root, every capability dropped, no new
privileges, the spec's uid, its binds as volumes (read-only unless writable), its tmpfs
mounts, and its limits as the container's: `memory_mb` (swap included, so no swap),
`pids`, `cpus`, and the rlimits Docker knows as ulimits (`cpu`, `fsize`, `nofile`,
`core`; Docker has no address-space ulimit: the container's memory limit bounds it).
A client adds what is its own (name, labels, PID 1, a seccomp profile, capabilities).
No registry is needed: `ensure_offline_image` imports an empty scratch image.
"""

from __future__ import annotations

import io
import logging
import tarfile
from typing import Any

import docker
from docker.errors import DockerException, ImageNotFound

from verilearn_assets.core.isolation.spec import JailSpec, Tmpfs

log = logging.getLogger("verilearn.isolation.docker")


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


def container_kwargs(spec: JailSpec) -> dict[str, Any]:
    from docker.types import Ulimit

    limits = spec.limits
    kwargs: dict[str, Any] = {
        "network_mode": "bridge" if spec.network else "none",
        "read_only": True,
        "user": f"{spec.uid}:{spec.uid}" if spec.uid is not None else None,
        "working_dir": spec.chdir,
        "environment": spec.env,
        "volumes": {
            b.host: {"bind": b.inside, "mode": "rw" if b.writable else "ro"} for b in spec.binds
        },
        "tmpfs": {t.path: tmpfs_options(t, spec.uid) for t in spec.tmpfs},
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
    }
    if kwargs["user"] is None:
        del kwargs["user"]
    if limits.memory_mb is not None:
        kwargs["mem_limit"] = kwargs["memswap_limit"] = f"{limits.memory_mb}m"
    if limits.pids is not None:
        kwargs["pids_limit"] = limits.pids
    if limits.cpus is not None:
        kwargs["nano_cpus"] = int(limits.cpus * 1e9)
    ulimits = []
    if limits.cpu_s is not None:
        ulimits.append(Ulimit(name="cpu", soft=limits.cpu_s, hard=limits.cpu_s))
    if limits.file_size_mb is not None:
        size = limits.file_size_mb * 1024 * 1024
        ulimits.append(Ulimit(name="fsize", soft=size, hard=size))
    if limits.open_files is not None:
        ulimits.append(Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files))
    if limits.no_core:
        ulimits.append(Ulimit(name="core", soft=0, hard=0))
    if ulimits:
        kwargs["ulimits"] = ulimits
    return kwargs


def tmpfs_options(tmpfs: Tmpfs, uid: int | None) -> str:
    """Docker's tmpfs option string (size, mode, owner, exec: Docker's default is noexec)."""
    options = [f"size={tmpfs.size_mb}m"] if tmpfs.size_mb is not None else []
    if tmpfs.mode is not None:
        options.append(f"mode={tmpfs.mode}")
    if tmpfs.owned and uid is not None:
        options.append(f"uid={uid},gid={uid}")
    if tmpfs.exec_:
        options.append("exec")
    return ",".join(options)
