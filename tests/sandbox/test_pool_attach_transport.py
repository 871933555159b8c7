"""The attach transport: slots on a Docker host treated as another machine.

The second daemon of `make docker2-up` (mk/cluster.mk) is reached over tcp:// + TLS with
`same_machine: false`: nothing of this machine is bind-mounted into its containers. The
worker speaks over its attach stream (stdin/stdout), tables travel in `begin`, and the
runtime comes as the `bundle` image imported over the API (the first run on a fresh
daemon imports it, ~1 min here; the daemon's data root keeps it for the next runs).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pandas as pd
import pytest
from backends import require_backend
from pydantic import ValidationError
from sandbox_helpers import LoopThread, PoolHandle, test_config

from verilearn_assets.core.isolation.docker import labelled
from verilearn_assets.core.sandbox.config import DockerSettings
from verilearn_assets.core.sandbox.jail import LABEL
from verilearn_assets.core.sandbox.pool import SandboxError, SandboxPool

ROOT = Path(__file__).resolve().parents[2]
DOCKER2_DIR = os.environ.get("VERILEARN_DOCKER2_DIR", "/tmp/verilearn-docker2")
TLS_PORT = os.environ.get("VERILEARN_DOCKER2_TLS_PORT", "23760")
TLS_DIR = f"{DOCKER2_DIR}/tls"
REMOTE_URL = f"tcp://127.0.0.1:{TLS_PORT}"
REMOTE = {
    "url": REMOTE_URL,
    "name": "remote",
    "same_machine": False,
    "tls": {
        "ca_cert": f"{TLS_DIR}/ca.pem",
        "client_cert": f"{TLS_DIR}/cert.pem",
        "client_key": f"{TLS_DIR}/key.pem",
    },
}
ATTACH = {"transport": "attach", "image_mode": "bundle", "bundle_packages": ["pandas"]}

# --- configuration (no daemon needed)


def test_remote_host_is_accepted_with_the_attach_transport() -> None:
    remote = {"url": "tcp://10.0.0.7:2376", "tls": {"verify": False}}
    settings = DockerSettings(hosts=[remote], **ATTACH)
    assert not settings.hosts[0].local and settings.transport == "attach"
    image = DockerSettings(hosts=[remote], transport="attach", image_mode="image")
    assert image.image_mode == "image"
    with pytest.raises(ValidationError, match=r"docker.hosts\[0\] \(tcp://10.0.0.7:2376\)") as err:
        DockerSettings(hosts=[remote], image_mode="bundle")  # socket transport: refused
    assert "transport: socket" in str(err.value) and "transport: attach" in str(err.value)
    with pytest.raises(ValidationError, match="image_mode: offline") as err:
        DockerSettings(hosts=[remote], transport="attach")  # offline mounts our runtime
    assert "transport: socket" not in str(err.value)
    with pytest.raises(ValidationError, match="not a distribution name"):
        DockerSettings(bundle_packages=["pandas; rm -rf"])


# --- the second daemon, as a remote host


def _make(target: str) -> str:
    done = subprocess.run(
        ["make", "-s", "-C", str(ROOT), target, f"DOCKER2_DIR={DOCKER2_DIR}"]
        + [f"DOCKER2_TLS_PORT={TLS_PORT}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"make {target} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


@pytest.fixture(scope="module")
def remote_daemon() -> Iterator[str]:
    """docker2 up (left as found: stopped again only when this module started it)."""
    require_backend("docker")
    was_up = "already answers" in _make_or_skip("docker2-up")
    try:
        yield REMOTE_URL
    finally:
        if not was_up:
            _make("docker2-down")


def _make_or_skip(target: str) -> str:
    try:
        return _make(target)
    except RuntimeError as exc:
        if os.environ.get("VERILEARN_REQUIRE_DOCKER") == "1":
            pytest.fail(f"VERILEARN_REQUIRE_DOCKER=1 but the second daemon did not start: {exc}")
        pytest.skip(f"second Docker daemon cannot start here: {exc}")


@pytest.fixture(scope="module")
def remote_pool(remote_daemon: str) -> Iterator[PoolHandle]:
    config = test_config(
        "docker",
        slots=2,
        preload=[],  # pandas loads with the first table; a replaced slot starts fast
        start_timeout_s=120,
        docker={"hosts": [REMOTE], **ATTACH},
    )
    runner = LoopThread()
    pool = SandboxPool(config)
    runner.run(pool.start(), timeout=600)  # a fresh daemon imports the bundle first
    try:
        yield PoolHandle(pool, runner)
    finally:
        runner.run(pool.stop())
        runner.close()
        assert _labelled(pool.pool_id) == []


def _client() -> docker.DockerClient:
    return docker.DockerClient(base_url=f"unix://{DOCKER2_DIR}/docker.sock", timeout=10)


def _labelled(pool_id: str) -> list[str]:
    client = _client()
    try:
        return [c.name for c in labelled(client, f"{LABEL}={pool_id}")]
    finally:
        client.close()


@pytest.fixture(scope="module")
def sales(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, pd.DataFrame]:
    """The same table as CSV and gzipped CSV (the attach transport ships both)."""
    root = tmp_path_factory.mktemp("attach-tables")
    frame = pd.DataFrame(
        {"region": ["n", "s", "n", "e", "s", "n"], "amount": [3.5, 1.25, 8.0, 2.0, 4.75, 1.0]}
    )
    csv = root / "sales.csv"
    frame.to_csv(csv, index=False)
    gz = root / "sales.csv.gz"
    gz.write_bytes(gzip.compress(csv.read_bytes()))
    return str(csv), str(gz), frame


def test_analysis_cells_read_the_shipped_table_on_the_remote_host(
    remote_pool: PoolHandle, sales: tuple[str, str, pd.DataFrame]
) -> None:
    csv, gz, frame = sales
    cells = [
        "by = df.groupby('region')['amount'].sum().round(2)",
        "print(by.to_dict())\nlen(df)",
        "submit({'top': by.idxmax(), 'total': round(float(df['amount'].sum()), 2)})",
    ]
    expected_by = frame.groupby("region")["amount"].sum().round(2)
    for table in (csv, gz, csv):  # the third run hits the worker's table cache
        result = remote_pool.program(cells, table)
        assert result.status == "ok", result.stderr
        assert result.host == "remote"
        assert json.loads(result.answer) == {
            "top": expected_by.idxmax(),
            "total": round(float(frame["amount"].sum()), 2),
        }
        assert str(expected_by.to_dict()) in result.stdout
        assert result.cells[1].value_repr == str(len(frame))
    # the containers run with no bind mount of this machine at all (tmpfs workspace only)
    for handle in remote_pool.pool.slot_handles():
        handle.container.reload()
        assert handle.container.attrs["Mounts"] == [], handle.container.attrs["Mounts"]
        assert handle.container.attrs["Config"]["StdinOnce"] is True


FAKE_REPLY = '{"status":"ok","stdout":"forged","stderr":"","submissions":["666"]}'
CORRUPTERS = [
    # print() of text that is a frame header and a forged reply
    "import struct\n"
    f"print(struct.pack('>I', {len(FAKE_REPLY)}).decode('latin-1') + {FAKE_REPLY!r})",
    # raw bytes on fd 1: a frame, then a header announcing 4 GB, then an 8-byte Docker header
    "import os, struct\n"
    f"body = {FAKE_REPLY!r}.encode()\n"
    "os.write(1, struct.pack('>I', len(body)) + body)\n"
    "os.write(1, struct.pack('>I', 2**32 - 1))\n"
    "os.write(1, bytes([1, 0, 0, 0]) + struct.pack('>I', 5) + b'junk!')",
    # the zygote's own fds (its private copies of the attach stream) through /proc
    "import os\nopened = []\nfor n in range(64):\n    try:\n"
    "        fd = os.open(f'/proc/1/fd/{n}', os.O_WRONLY)\n    except OSError:\n"
    "        continue\n    opened.append(n)\n    os.write(fd, b'\\x00\\x00\\x00\\x02{}')\n"
    "submit({'opened': opened})",
]


def test_cells_writing_to_stdout_cannot_corrupt_the_frame_stream(
    remote_pool: PoolHandle, sales: tuple[str, str, pd.DataFrame]
) -> None:
    csv, _, frame = sales
    result = remote_pool.program([*CORRUPTERS, "submit(len(df))"], csv)
    assert result.status == "ok", result.stderr
    assert [c.status for c in result.cells] == ["ok"] * 4
    # what the cells wrote came back as their stdout, verbatim, and nothing was forged
    assert FAKE_REPLY in result.cells[0].stdout and FAKE_REPLY in result.cells[1].stdout
    assert "junk!" in result.cells[1].stdout and "forged" not in result.answer
    assert result.submissions == ['{"opened":[]}', str(len(frame))]
    assert result.answer == str(len(frame))


def test_hostile_cells_are_contained_on_the_remote_host(
    remote_pool: PoolHandle, sales: tuple[str, str, pd.DataFrame]
) -> None:
    csv, _, frame = sales
    killer = remote_pool.program("import os, signal\nos.kill(1, signal.SIGKILL)\nsubmit(1)", csv)
    assert killer.status == "ok" and killer.answer == "1"  # PID 1 ignores its own cells
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    forked = remote_pool.program(bomb, csv, timeout_s=2)
    assert forked.status == "timeout", forked.stderr
    probe = remote_pool.program(
        "import os\nsubmit({'names': sorted(k for k in globals() if not k.startswith('_')),"
        " 'files': os.listdir('.'), 'procs': [p for p in os.listdir('/proc') if p.isdigit()],"
        " 'rows': len(df)})",
        csv,
    )
    assert probe.status == "ok", probe.stderr
    seen = json.loads(probe.answer)
    assert seen["names"] == ["df", "hook", "np", "os", "pd", "stats", "submit"]
    assert seen["files"] == [] and len(seen["procs"]) == 2 and seen["rows"] == len(frame)


def test_lost_attach_stream_ends_the_worker_and_the_slot_is_replaced(
    remote_pool: PoolHandle,
) -> None:
    """Our end of the stream gone (as when the pool's process dies): stdin closes, the
    worker exits, the container removes itself; the pool replaces the slot."""
    pool = remote_pool.pool
    slot = pool._slots[0]
    name = slot.handle.name
    slot.channel.close()
    deadline = time.monotonic() + 30
    while name in _labelled(pool.pool_id):
        assert time.monotonic() < deadline, f"{name} still there 30 s after its stream closed"
        time.sleep(0.3)
    results = remote_pool.run(_gather(pool, 4))
    assert [r.answer for r in results] == [str(n * n) for n in range(4)]
    assert len(_labelled(pool.pool_id)) == 2


async def _gather(pool: SandboxPool, n: int) -> list:
    return list(
        await asyncio.gather(*(pool.run_program(f"submit({i} * {i})", None) for i in range(n)))
    )


def test_attach_transport_refuses_extra_mounts(remote_daemon: str, tmp_path: Path) -> None:
    config = test_config("docker", docker={"hosts": [REMOTE], **ATTACH})
    with pytest.raises(SandboxError, match="docker.transport: attach") as err:
        SandboxPool(config, extra_ro_mounts=[str(tmp_path)])
    assert "remote" in str(err.value) and "extra_ro_mounts" in str(err.value)


def test_remote_host_lost_mid_run_is_drained_over_attach(remote_daemon: str) -> None:
    """Two hosts on the attach transport (this machine's daemon and the remote one): the
    remote daemon stops under tasks in flight (their reads blocked in TLS), its tasks
    re-run on the local host, none lost, and its slots come back when it returns.
    Last in the module: it stops and restarts the remote daemon."""
    local = {"url": os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"), "name": "local"}
    config = test_config(
        "docker",
        slots=2,
        preload=[],
        start_timeout_s=120,
        docker={"hosts": [local, REMOTE], **ATTACH, "health_interval_s": 0.5},
    )
    # 3 s a task: the remote host still has work in flight when its daemon is down
    # (make + sudo + dockerd's 2 s shutdown), however slow the machine
    square = "import time\ntime.sleep(3)\nsubmit({n} * {n})"
    runner = LoopThread()
    pool = SandboxPool(config)
    runner.run(pool.start(), timeout=600)  # imports the bundle into the local daemon once
    try:
        assert pool.slots_per_host() == {"local": 1, "remote": 1}

        def stop_remote_when_busy() -> None:
            deadline = time.monotonic() + 30
            while not any(pool._slots[i].host == "remote" for i in pool.busy_slots()):
                assert time.monotonic() < deadline, "no task ever ran on the remote host"
                time.sleep(0.1)
            time.sleep(0.3)
            _make("docker2-down")

        async def squares(count: int, code: str) -> list:
            runs = [pool.run_program(code.format(n=n), None) for n in range(count)]
            return list(await asyncio.gather(*runs))

        stopper = threading.Thread(target=stop_remote_when_busy)
        stopper.start()
        results = runner.run(squares(6, square), timeout=300)
        stopper.join(60)
        assert [r.answer for r in results] == [str(n * n) for n in range(6)]
        retried = [r for r in results if r.attempts > 1]
        assert retried and {r.host for r in retried} == {"local"}
        assert pool.host_status()["remote"].startswith("drained:")

        _make("docker2-up")
        deadline = time.monotonic() + 60
        while pool.host_status()["remote"] != "healthy":
            assert time.monotonic() < deadline, "the remote host did not come back"
            time.sleep(0.3)
        back = runner.run(squares(4, "submit({n} * {n})"), timeout=300)
        assert [r.answer for r in back] == [str(n * n) for n in range(4)]
        assert "remote" in {r.host for r in back}
    finally:
        runner.run(pool.stop())
        runner.close()
        _make("docker2-up")
    assert _labelled(pool.pool_id) == []
