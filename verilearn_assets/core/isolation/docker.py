"""The Docker backend: a `JailSpec` rendered as docker-py `containers.run/create` arguments.

No network (`network_mode=none`), a read-only root, every capability dropped, no new
privileges, the spec's uid, its binds as volumes (read-only unless writable), its tmpfs
mounts, and its limits as the container's: `memory_mb` (swap included, so no swap),
`pids`, `cpus`, and the rlimits Docker knows as ulimits (`cpu`, `fsize`, `nofile`,
`core`; Docker has no address-space ulimit: the container's memory limit bounds it).
A client adds what is its own (name, labels, PID 1, a seccomp profile, capabilities).
"""

from __future__ import annotations

from typing import Any

from verilearn_assets.core.isolation.spec import JailSpec, Tmpfs


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
