"""The Docker backend: a `JailSpec` rendered as docker-py `containers.run/create` arguments.

No network (`network_mode=none`), a read-only root, every capability dropped, no new
privileges, the spec's uid, its binds as volumes (read-only unless writable), its tmpfs
mounts, and its limits as the container's: `memory_mb` (swap included, so no swap),
`pids`, `cpus`, and the rlimits Docker knows as ulimits (`cpu`, `fsize`, `nofile`,
`core`; Docker has no address-space ulimit: the container's memory limit bounds it).
A client adds what is its own (name, labels, PID 1, a seccomp profile, capabilities).
No registry is needed: `ensure_offline_image` imports an empty scratch image.

What every client's containers share is here too, so no Docker option is written twice:
the owner labels (`<label>.owner` = `<hostname>:<pid>`) and `reap_orphans`, which
removes a label's containers whose owner died; `run_once`, one command in a fresh
container; `attach_stdio`/`demux_stdio`, a container's stdin and multiplexed output
over the attach socket; and `host_client`, a client for a configured (remote) daemon.
"""

from __future__ import annotations

import io
import logging
import os
import socket
import struct
import tarfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import docker
from docker.errors import DockerException, ImageNotFound, NotFound

from verilearn_assets.core.isolation.spec import JailSpec, Tmpfs
from verilearn_assets.core.procs import running

log = logging.getLogger("verilearn.isolation.docker")


def docker_client(timeout: int = 10) -> docker.DockerClient:
    return docker.from_env(timeout=timeout)


def host_client(
    url: str | None,
    timeout: float = 10,
    *,
    ca_cert: str | None = None,
    client_cert: str | None = None,
    client_key: str | None = None,
    verify: bool = True,
    tls: bool = False,
) -> docker.DockerClient:
    """A client for the daemon at `url` (None: the daemon from the environment); `tls`
    with a CA to verify the daemon by and an optional client certificate."""
    from docker.constants import MINIMUM_DOCKER_API_VERSION
    from docker.tls import TLSConfig

    if url is None:
        return docker.from_env(timeout=int(timeout))
    if not tls:
        return docker.DockerClient(base_url=url, timeout=int(timeout))
    config = TLSConfig(
        client_cert=(client_cert, client_key) if client_cert and client_key else None,
        ca_cert=ca_cert,
        verify=ca_cert if verify else False,
    )
    # requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE (and proxy variables) override the
    # session's CA, so the host's own CA would be ignored: open the client without the
    # environment, at the minimum API version, then use the version the daemon speaks.
    client = docker.DockerClient(
        base_url=url, tls=config, timeout=int(timeout), version=MINIMUM_DOCKER_API_VERSION
    )
    client.api.trust_env = False
    try:
        client.api._version = client.api.version(api_version=False)["ApiVersion"]
    except BaseException:
        client.close()
        raise
    return client


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


# --- who owns a container, and removing those whose owner died ---

_REAPED: set[str] = set()  # (label, daemon) pairs whose orphans this process removed
_REAPED_LOCK = threading.Lock()


def owner() -> str:
    """This process as a container owner: `<hostname>:<pid>`."""
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_label(label: str) -> str:
    """The label naming the process that started a container (`<hostname>:<pid>`)."""
    return f"{label}.owner"


def owner_labels(label: str, role: str) -> dict[str, str]:
    """A container's labels: the client's `label` (value `role`) and its owner."""
    return {label: role, owner_label(label): owner()}


def labelled(client: Any, *labels: str) -> list[Any]:
    """Every container, stopped ones too, carrying all `labels` (`key` or `key=value`). One
    that removes itself between docker-py's listing and its inspect is left out instead of
    raising NotFound: pool slots and one-shot containers auto-remove at any moment."""
    return client.containers.list(all=True, ignore_removed=True, filters={"label": list(labels)})


def reap_orphans(client: Any, label: str) -> list[str]:
    """Remove the containers carrying `label` whose owning process on this host is gone
    (one without an owner label, or owned on another host, is left alone)."""
    host = socket.gethostname()
    removed = []
    for c in labelled(client, label):
        owner_host, _, pid = c.labels.get(owner_label(label), "").rpartition(":")
        if owner_host != host or not pid.isdigit() or running(int(pid)):
            continue
        try:
            c.remove(force=True)
        except NotFound:  # it removed itself (auto-remove) since the listing
            continue
        removed.append(c.short_id)
    if removed:
        log.warning("removed %d %s containers left by dead processes", len(removed), label)
    return removed


def reap_orphans_once(client: Any, label: str) -> None:
    """`reap_orphans` the first time this process uses `label` on `client`'s daemon."""
    key = f"{label}@{getattr(client.api, 'base_url', '')}"
    with _REAPED_LOCK:
        if key in _REAPED:
            return
        _REAPED.add(key)
    reap_orphans(client, label)


# --- one command in a fresh container ---


def is_timeout(exc: BaseException) -> bool:
    """Whether a docker-py wait failed for want of time (requests' timeouts)."""
    import requests

    return isinstance(exc, requests.exceptions.ReadTimeout | requests.exceptions.ConnectionError)


def run_once(
    client: Any,
    image: str,
    kwargs: dict[str, Any],
    argv: list[str],
    labels: dict[str, str],
    timeout_s: float,
    output_cap: int,
):  # noqa: ANN201 - run.Completed (run.py imports this module's neighbours)
    """Run `argv` in a fresh container of `kwargs` (`container_kwargs` plus the client's
    own), kill it at `timeout_s`, return its capped output, remove it whatever happens."""
    import docker

    from verilearn_assets.core.isolation.run import Completed, cap_output

    image = ensure_offline_image(client, image)
    start = time.perf_counter()
    container = client.containers.run(
        image, command=argv, labels=labels, **{**kwargs, "detach": True}
    )
    timed_out = False
    try:
        try:
            code = int(container.wait(timeout=timeout_s)["StatusCode"])
        except Exception as exc:  # requests' ReadTimeout / ConnectionError on timeout
            if not is_timeout(exc):
                raise
            timed_out = True
            container.kill()
            code = int(container.wait(timeout=30)["StatusCode"])
        duration = (time.perf_counter() - start) * 1000
        out = container.logs(stdout=True, stderr=False).decode(errors="replace")
        err = container.logs(stdout=False, stderr=True).decode(errors="replace")
        stdout, stderr = cap_output(out, output_cap), cap_output(err, output_cap)
    finally:
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            pass
    return Completed(code, stdout, stderr, duration, timed_out)


# --- a container's stdio over the attach socket ---

MUX_HEADER = struct.Struct(">BxxxL")  # stream type, 3 zero bytes, big-endian length
STDOUT, STDERR = 1, 2


def attach_stdio(client: Any, container: Any, stderr: bool = True) -> Any:
    """Attach to a created container's stdin and stdout (and stderr), then start it: not a
    byte it writes is missed. Without a tty Docker multiplexes the output
    (`demux_stdio`); stdin is written as it is."""
    params = {"stdin": 1, "stdout": 1, "stderr": int(stderr), "stream": 1}
    attached = client.api.attach_socket(container.id, params=params)
    container.start()
    return attached


def demux_stdio(sock: Any, streams: tuple[int, ...] = (STDOUT, STDERR)) -> Iterator[bytes]:
    """The payloads of the multiplexed attach stream, of the chosen `streams`, in order,
    until EOF; a bad header raises ValueError."""
    buffer = bytearray()
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            return
        buffer += chunk
        while len(buffer) >= MUX_HEADER.size:
            kind, size = MUX_HEADER.unpack_from(buffer)
            if kind not in (STDOUT, STDERR):
                raise ValueError(f"attach stream: bad header (stream type {kind})")
            if len(buffer) < MUX_HEADER.size + size:
                break
            payload = bytes(buffer[MUX_HEADER.size : MUX_HEADER.size + size])
            del buffer[: MUX_HEADER.size + size]
            if kind in streams:
                yield payload
