"""A cell slot names its owning process (the isolation layer's owner labels); the first use
of a daemon by a later pool removes the slots of a pool whose process died unannounced,
and leaves those of a live owner, another host's and an unlabelled one alone."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from backends import require_backend
from sandbox_helpers import test_config


def test_slots_of_a_dead_owner_are_reaped_and_no_other(tmp_path) -> None:
    require_backend("docker")
    from verilearn_assets.core.isolation import docker as iso
    from verilearn_assets.core.sandbox.docker_backend import DockerBackend
    from verilearn_assets.core.sandbox.jail import LABEL

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # reaped: its pid names no process now
    host = socket.gethostname()
    owners = {
        "dead": f"{host}:{dead.pid}",
        "alive": f"{host}:{os.getpid()}",
        "elsewhere": f"another-host:{dead.pid}",
    }
    client = iso.docker_client()
    image = iso.ensure_offline_image(client, "verilearn-sandbox-scratch:1")
    made = {}
    try:
        for name, owner in [*owners.items(), ("unlabelled", None)]:
            labels = {LABEL: f"orphan-test-{name}"}
            if owner is not None:
                labels[iso.owner_label(LABEL)] = owner
            made[name] = client.containers.create(image, command=["/none"], labels=labels).id
        iso._REAPED.clear()  # this process's first use of the daemon, as a new pool's is
        config = test_config("docker", log_path=str(tmp_path / "cells.jsonl"))
        backend = DockerBackend(config, "orphan-test")
        try:
            backend.prepare()
        finally:
            backend.close()
        left = {c.id for c in iso.labelled(client, LABEL)}
        assert made["dead"] not in left
        assert {made["alive"], made["elsewhere"], made["unlabelled"]} <= left
    finally:
        for container_id in made.values():
            try:
                client.api.remove_container(container_id, force=True)
            except Exception:  # noqa: BLE001 - reaped already
                pass
        client.close()
