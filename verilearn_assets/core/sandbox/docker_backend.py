"""Docker backend: one long-lived container per slot, labelled with its pool's id.

Containers run with no network, a read-only root, a tmpfs workspace, all capabilities
dropped, no-new-privileges, a non-root user and memory/pids/CPU limits (the options are
the isolation layer's `container_kwargs` of the slot's JailSpec). Clean-up only ever
touches containers carrying this pool's label, so two pools can share a daemon; each
container also names its owning process (`core.isolation.docker.owner_labels`), and the
first use of a daemon removes the slots of pools whose process died without a sweep
(`reap_orphans`). Why these slots are not the command pool's (`docker_pool.py`): see
`core/isolation/__init__.py`.
A pool may span several daemons (`docker.hosts`): the backend keeps one client per host
and the pool decides which host a slot runs on. With `docker.transport: attach` a slot's
container is created with stdin open, attached to (stdin + stdout) before it starts,
and its attach socket travels with the slot (see attach.py).
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import uuid
from dataclasses import dataclass, replace
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound

from verilearn_assets.core.isolation.docker import (
    attach_stdio,
    container_kwargs,
    ensure_offline_image,
    labelled,
    owner_labels,
    reap_orphans_once,
)
from verilearn_assets.core.isolation.docker import host_client as isolation_host_client
from verilearn_assets.core.isolation.spec import JailSpec
from verilearn_assets.core.sandbox.config import DockerHost, SandboxConfig
from verilearn_assets.core.sandbox.jail import LABEL, worker_argv

log = logging.getLogger("verilearn.sandbox.docker")


LOCAL_HOST = "local"  # the label of the daemon from the environment (single-host setup)


def host_client(host: DockerHost | None, timeout: float = 10) -> docker.DockerClient:
    """A client for one configured host (None: the daemon from the environment)."""
    if host is None:
        return isolation_host_client(None, timeout)
    tls = host.tls
    return isolation_host_client(
        host.url,
        timeout,
        tls=tls is not None,
        ca_cert=tls.ca_cert if tls else None,
        client_cert=tls.client_cert if tls else None,
        client_key=tls.client_key if tls else None,
        verify=tls.verify if tls else True,
    )


def hosts_available(config: SandboxConfig) -> tuple[bool, str]:
    """Whether at least one of `docker.hosts` answers, and what each said."""
    said = []
    for host in config.docker.hosts:
        try:
            client = host_client(host, timeout=config.docker.health_timeout_s)
            try:
                client.ping()
            finally:
                client.close()
            return True, f"{host.label} answered"
        except Exception as exc:  # docker-py lets requests' TLS/connection errors through
            said.append(f"{host.label}: {exc}")
    return False, "no Docker host answered: " + "; ".join(said)


@dataclass
class DockerSlot:
    container: Any
    name: str
    host: str = LOCAL_HOST
    attached: Any = None  # the attach socket (transport: attach), else None

    @property
    def ident(self) -> str:
        return f"{self.name} ({self.container.short_id} on {self.host})"


class DockerBackend:
    """Containers on one or more daemons; every method names the host it acts on."""

    name = "docker"

    def __init__(self, config: SandboxConfig, pool_id: str) -> None:
        self.config = config
        self.pool_id = pool_id
        self.hosts: dict[str, DockerHost | None] = {h.label: h for h in config.docker.hosts} or {
            LOCAL_HOST: None
        }
        self.weights = {h.label: h.weight for h in config.docker.hosts} or {LOCAL_HOST: 1}
        self.clients: dict[str, docker.DockerClient] = {}
        self.image = ""
        self._bundle: tuple[str, str] | None = None  # (tag, tarball path), built once
        self._bundle_lock = threading.Lock()
        self._tag: str | None = None

    @property
    def client(self) -> docker.DockerClient:
        """The first host's client (what single-host callers used)."""
        return self._client(next(iter(self.hosts)))

    def _client(self, host: str) -> docker.DockerClient:
        if host not in self.clients:
            self.clients[host] = host_client(self.hosts[host])
        return self.clients[host]

    def ping(self, host: str) -> tuple[bool, str]:
        """Whether the host's daemon answers within the health timeout, and why not."""
        try:
            client = host_client(self.hosts[host], timeout=self.config.docker.health_timeout_s)
            try:
                client.ping()
            finally:
                client.close()
            return True, "daemon answered"
        except Exception as exc:  # any transport failure means "not usable now"; say which
            return False, f"{type(exc).__name__}: {exc}"

    def prepare(self, host: str | None = None) -> None:
        """Make the image available on `host` (default: the first host)."""
        client = self._client(host or next(iter(self.hosts)))
        reap_orphans_once(client, LABEL)  # slots of pools whose process died unannounced
        settings = self.config.docker
        if settings.image_mode == "offline":
            self.image = ensure_offline_image(client, settings.offline_image)
        elif settings.image_mode == "bundle":
            self.image = self._ensure_bundle_image(client, host or next(iter(self.hosts)))
        else:
            try:
                client.images.get(settings.image)
            except ImageNotFound as exc:
                raise RuntimeError(
                    f"sandbox image {settings.image} not found on {host or 'the daemon'}: "
                    f"build it with `docker build -f docker/Dockerfile.sandbox -t "
                    f"{settings.image} .` or set docker.image_mode: offline in "
                    "configs/sandbox.yaml"
                ) from exc
            self.image = settings.image

    def _bundle_tarball(self) -> tuple[str, str]:
        """(tag, path) of this machine's runtime bundle, written once per backend."""
        from verilearn_assets.core.sandbox import bundle

        with self._bundle_lock:
            if self._bundle is None:
                manifest = bundle.bundle_manifest(self.config)
                tag = bundle.bundle_tag(manifest)
                fd, path = tempfile.mkstemp(prefix="verilearn-bundle-", suffix=".tar")
                os.close(fd)
                try:
                    bundle.write_bundle(manifest, path)
                except BaseException:
                    os.unlink(path)
                    raise
                self._bundle = (tag, path)
            return self._bundle

    def _ensure_bundle_image(self, client: docker.DockerClient, host: str) -> str:
        """The bundle image on `host`: kept when its tag (content hash) is there, else
        imported from the tarball over the Docker API."""
        from verilearn_assets.core.sandbox import bundle

        repository = self.config.docker.bundle_image
        if self._bundle is None:
            # the tag alone needs no tarball: skip writing one when every host has it
            with self._bundle_lock:
                if self._tag is None:
                    self._tag = bundle.bundle_tag(bundle.bundle_manifest(self.config))
                tag = self._tag
            try:
                client.images.get(f"{repository}:{tag}")
                return f"{repository}:{tag}"
            except ImageNotFound:
                pass
        tag, path = self._bundle_tarball()
        reference = f"{repository}:{tag}"
        try:
            client.images.get(reference)
            return reference
        except ImageNotFound:
            pass
        log.info("importing sandbox bundle %s into %s", reference, host)
        client.api.import_image(src=path, repository=repository, tag=tag)
        client.images.get(reference)  # raises if the import did not produce it
        return reference

    def forget(self, host: str) -> None:
        """Drop a host's client (it went away): the next use opens a fresh connection."""
        client = self.clients.pop(host, None)
        if client is not None:
            client.close()

    def _spec_for_image(self, spec: JailSpec) -> JailSpec:
        """Prebuilt-image mode: the image brings Python and the worker; mount only data.
        Bundle mode: the image holds the runtime at this machine's paths (same argv)."""
        if self.config.docker.image_mode == "offline":
            return spec
        if self.config.docker.image_mode == "bundle":
            return spec.without_runtime()
        argv = worker_argv(self.config, self.config.docker.python, self.config.docker.worker_dir)
        return replace(spec.without_runtime(), argv=argv)

    def start_slot(self, index: int, spec: JailSpec, host: str | None = None) -> DockerSlot:
        host = host or next(iter(self.hosts))
        spec = self._spec_for_image(spec)
        name = f"verilearn-sandbox-{self.pool_id}-{index}-{uuid.uuid4().hex[:6]}"
        attach = self.config.docker.transport == "attach"
        client = self._client(host)
        create = client.containers.create if attach else client.containers.run
        # attach: stdin open and, not detached, StdinOnce (docker-py sets it with
        # stdin_open): stdin closes when we detach, so a worker whose pool died reads
        # EOF and exits, and auto_remove removes the container
        extra: dict[str, Any] = {"stdin_open": True, "tty": False} if attach else {"detach": True}
        container = create(
            self.image,
            command=spec.argv,
            name=name,
            labels={**owner_labels(LABEL, self.pool_id), "verilearn.sandbox.slot": str(index)},
            **container_kwargs(spec),
            shm_size=f"{self.config.docker.shm_mb}m",
            init=False,  # the worker is PID 1: the kernel shields it from its own cells
            auto_remove=True,  # a host that dies leaves no container behind
            **extra,
        )
        if not attach:
            return DockerSlot(container=container, name=name, host=host)
        # attach before start, so that not a byte the worker writes is missed
        try:
            attached = attach_stdio(client, container, stderr=False)
        except BaseException:
            try:
                container.remove(force=True)
            except DockerException:
                pass
            raise
        return DockerSlot(container=container, name=name, host=host, attached=attached)

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

    def own_containers(self, host: str | None = None) -> list[Any]:
        client = self._client(host or next(iter(self.hosts)))
        return labelled(client, f"{LABEL}={self.pool_id}")

    def sweep(self, hosts: list[str] | None = None) -> list[tuple[str, str]]:
        """Remove every container left with this pool's label on the given hosts (default:
        all); (id, error) for failures, an unreachable host included."""
        failures: list[tuple[str, str]] = []
        for host in hosts if hosts is not None else list(self.hosts):
            try:
                containers = self.own_containers(host)
            except Exception as exc:  # an unreachable host (requests' errors included)
                failures.append((f"<all on {host}>", f"host unreachable: {exc}"))
                continue
            failures += self._remove_all(containers)
        return failures

    @staticmethod
    def _remove_all(containers: list[Any]) -> list[tuple[str, str]]:
        failures = []
        for container in containers:
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
        for host in list(self.clients):
            self.forget(host)
        if self._bundle is not None:
            try:
                os.unlink(self._bundle[1])
            except OSError:
                pass
            self._bundle = None
