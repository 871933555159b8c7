"""The container pool over several Docker hosts, against two real daemons on this machine.

The second daemon is started by `make docker2-up` (mk/cluster.mk) on its own socket and
stopped/restarted mid-run to show a host that disappears is drained with no task lost,
and that its return brings its slots back.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from backends import require_backend
from pydantic import ValidationError
from sandbox_helpers import LoopThread, PoolHandle, test_config

from verilearn_assets.core.isolation.docker import labelled
from verilearn_assets.core.sandbox.config import DockerSettings, SandboxConfig
from verilearn_assets.core.sandbox.jail import LABEL
from verilearn_assets.core.sandbox.pool import SandboxError, SandboxPool, spread

ROOT = Path(__file__).resolve().parents[2]
DOCKER2_DIR = os.environ.get("VERILEARN_DOCKER2_DIR", "/tmp/verilearn-docker2")
HOST1 = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
HOST2 = f"unix://{DOCKER2_DIR}/docker.sock"
TLS_PORT = os.environ.get("VERILEARN_DOCKER2_TLS_PORT", "23760")
TLS_DIR = f"{DOCKER2_DIR}/tls"  # throwaway CA and client certificate from `make docker2-up`

# Each task squares its number after a pause, so tasks are in flight when a host stops.
SQUARE = "import time\ntime.sleep({pause})\nsubmit({n} * {n})"


# --- configuration (no daemon needed)


def test_single_host_default_is_the_local_daemon() -> None:
    assert SandboxConfig().docker.hosts == []


def test_remote_host_is_refused_with_what_is_missing() -> None:
    with pytest.raises(ValidationError) as err:
        DockerSettings(hosts=[{"url": "tcp://10.0.0.7:2376"}])
    text = str(err.value)
    assert "docker.hosts[0] (tcp://10.0.0.7:2376) is on another machine" in text
    assert "image_mode: offline" in text and "transport: socket" in text
    with pytest.raises(ValidationError, match="transport: socket"):
        DockerSettings(image_mode="image", hosts=[{"url": "tcp://10.0.0.7:2376"}])


def test_host_urls_and_tls_options_are_validated() -> None:
    with pytest.raises(ValidationError, match="unix:///path or tcp://host:port"):
        DockerSettings(hosts=[{"url": "ssh://box"}])
    with pytest.raises(ValidationError, match="tls options need a tcp:// URL"):
        DockerSettings(hosts=[{"url": "unix:///x.sock", "tls": {"verify": False}}])
    with pytest.raises(ValidationError, match="client_cert and client_key go together"):
        DockerSettings(hosts=[{"url": "tcp://h:2376", "tls": {"client_cert": "c.pem"}}])
    with pytest.raises(ValidationError, match="verify needs ca_cert"):
        DockerSettings(hosts=[{"url": "tcp://h:2376", "same_machine": True, "tls": {}}])
    with pytest.raises(ValidationError, match="must be unique"):
        DockerSettings(hosts=[{"url": "unix:///a.sock"}, {"url": "unix:///a.sock"}])
    local_tls = DockerSettings(
        hosts=[
            {
                "url": "tcp://127.0.0.1:2376",
                "same_machine": True,
                "tls": {"ca_cert": "ca.pem", "client_cert": "c.pem", "client_key": "k.pem"},
            }
        ]
    )
    assert local_tls.hosts[0].local and local_tls.hosts[0].tls.verify


def test_slots_spread_by_weight_interleaved() -> None:
    assert spread(6, {"a": 2, "b": 1}) == ["a", "a", "b", "a", "a", "b"]
    homes = spread(7, {"a": 1, "b": 1, "c": 2})
    assert {h: homes.count(h) for h in "abc"} == {"a": 2, "b": 2, "c": 3}


# --- two real daemons


class Daemon2:
    """The second dockerd, driven through the Makefile targets."""

    def make(self, target: str) -> str:
        done = subprocess.run(
            [
                "make",
                "-s",
                "-C",
                str(ROOT),
                target,
                f"DOCKER2_DIR={DOCKER2_DIR}",
                f"DOCKER2_TLS_PORT={TLS_PORT}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"make {target} failed:\n{done.stdout}{done.stderr}")
        return done.stdout

    def start(self) -> None:
        self.make("docker2-up")

    def stop(self) -> None:
        self.make("docker2-down")


@pytest.fixture(scope="session")
def daemon2() -> Iterator[Daemon2]:
    require_backend("docker")
    d2 = Daemon2()
    try:
        d2.start()
    except RuntimeError as exc:
        if os.environ.get("VERILEARN_REQUIRE_DOCKER") == "1":
            pytest.fail(f"VERILEARN_REQUIRE_DOCKER=1 but the second daemon did not start: {exc}")
        pytest.skip(f"second Docker daemon cannot start here: {exc}")
    try:
        yield d2
    finally:
        d2.stop()


@pytest.fixture(scope="module")
def two_host_pool(daemon2: Daemon2) -> Iterator[PoolHandle]:
    config = test_config(
        "docker",
        slots=4,
        preload=[],  # slot start-up time is not what these tests measure
        docker={
            "hosts": [{"url": HOST1, "name": "h1"}, {"url": HOST2, "name": "h2"}],
            "health_interval_s": 0.5,
            "health_timeout_s": 2.0,
        },
    )
    runner = LoopThread()
    pool = SandboxPool(config)
    runner.run(pool.start())
    try:
        yield PoolHandle(pool, runner)
    finally:
        runner.run(pool.stop())
        runner.close()
        daemon2.start()  # the drain test may leave it stopped; the sweep check needs it
        assert pool_names(HOST1, pool.pool_id) == [] and pool_names(HOST2, pool.pool_id) == []


def pool_names(url: str, pool_id: str) -> list[str]:
    client = docker.DockerClient(base_url=url, timeout=10)
    try:
        return [c.name for c in labelled(client, f"{LABEL}={pool_id}")]
    finally:
        client.close()


def run_squares(handle: PoolHandle, numbers: range, pause: float) -> list:
    async def go():
        return await asyncio.gather(
            *(handle.pool.run_program(SQUARE.format(n=n, pause=pause), None) for n in numbers)
        )

    return handle.run(go(), timeout=180)


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(0.2)


def test_tasks_spread_over_both_hosts(two_host_pool: PoolHandle) -> None:
    pool = two_host_pool.pool
    assert pool.host_status() == {"h1": "healthy", "h2": "healthy"}
    assert pool.slots_per_host() == {"h1": 2, "h2": 2}
    assert len(pool_names(HOST1, pool.pool_id)) == 2 and len(pool_names(HOST2, pool.pool_id)) == 2
    results = run_squares(two_host_pool, range(8), pause=0.3)
    assert [r.answer for r in results] == [str(n * n) for n in range(8)]
    assert {r.host for r in results} == {"h1", "h2"}


def test_host_lost_mid_run_drains_loses_no_task_and_comes_back(
    two_host_pool: PoolHandle, daemon2: Daemon2
) -> None:
    pool = two_host_pool.pool
    busy_on_h2 = threading.Event()

    def stop_h2_when_busy() -> None:
        wait_for(
            lambda: any(pool._slots[i].host == "h2" for i in pool.busy_slots()),
            30,
            "a task running on h2",
        )
        time.sleep(0.3)
        busy_on_h2.set()
        daemon2.stop()

    stopper = threading.Thread(target=stop_h2_when_busy)
    stopper.start()
    # 3 s a task: h2 still has work in flight when its daemon is down (make + sudo +
    # dockerd's 2 s shutdown), however slow the machine
    results = run_squares(two_host_pool, range(12), pause=3.0)
    stopper.join(60)
    assert busy_on_h2.is_set()
    assert [r.answer for r in results] == [str(n * n) for n in range(12)]  # nothing lost
    retried = [r for r in results if r.attempts > 1]
    assert retried and {r.host for r in retried} == {"h1"}
    assert pool.host_status()["h2"].startswith("drained:")
    assert pool.slots_per_host()["h2"] == 0

    daemon2.start()
    wait_for(lambda: pool.host_status()["h2"] == "healthy", 30, "h2 to be healthy again")
    back = run_squares(two_host_pool, range(8), pause=0.3)
    assert [r.answer for r in back] == [str(n * n) for n in range(8)]
    assert "h2" in {r.host for r in back}
    assert pool.slots_per_host() == {"h1": 2, "h2": 2}


def test_host_down_at_start_gets_no_slots(daemon2: Daemon2, tmp_path: Path) -> None:
    gone = {"url": f"unix://{tmp_path}/none.sock", "name": "gone"}
    with pytest.raises(SandboxError, match="no Docker host answered: gone"):
        SandboxPool(test_config("docker", docker={"hosts": [gone]}))
    config = test_config(
        "docker", preload=[], docker={"hosts": [{"url": HOST1, "name": "h1"}, gone]}
    )

    async def go(pool: SandboxPool):
        async with pool:
            result = await pool.run_program("submit(6 * 7)", None)
            return result, pool.host_status(), pool.slots_per_host()

    result, status, slots = asyncio.run(go(SandboxPool(config)))
    assert result.answer == "42" and result.host == "h1"
    assert status["h1"] == "healthy" and status["gone"].startswith("drained:")
    assert slots == {"h1": 2, "gone": 0}


def test_tcp_host_with_tls_client_certificates(daemon2: Daemon2) -> None:
    """The second daemon over tcp:// + TLS: with the client certificate it serves slots;
    the same URL without one fails its ping (bad certificate) and is drained at start."""
    daemon2.start()  # a test above stopped and restarted it
    url = f"tcp://127.0.0.1:{TLS_PORT}"
    with_cert = {
        "ca_cert": f"{TLS_DIR}/ca.pem",
        "client_cert": f"{TLS_DIR}/cert.pem",
        "client_key": f"{TLS_DIR}/key.pem",
    }
    hosts = [
        {"url": url, "name": "tls", "same_machine": True, "tls": with_cert},
        {
            "url": url,
            "name": "no-cert",
            "same_machine": True,
            "tls": {"ca_cert": with_cert["ca_cert"]},
        },
    ]
    config = test_config("docker", preload=[], docker={"hosts": hosts[::-1]})

    async def go(pool: SandboxPool):
        async with pool:
            result = await pool.run_program("submit(6 * 7)", None)
            return result, pool.host_status(), pool.slots_per_host()

    pool = SandboxPool(config)
    result, status, slots = asyncio.run(go(pool))
    assert result.answer == "42" and result.host == "tls"
    assert status["tls"] == "healthy" and slots == {"tls": 2, "no-cert": 0}
    assert status["no-cert"].startswith("drained:") and "certificate" in status["no-cert"]
    assert pool_names(HOST2, pool.pool_id) == []
