"""What a jailed program can reach, for every client of the isolation layer on every backend
it supports: no network, no host file outside its mounts, no write outside its writable
mounts, nothing of the host's environment, no capability and no way back to root."""

from __future__ import annotations

import os
import socket
import sys
import threading
import uuid
from pathlib import Path

import pytest
from isolation_clients import Jailed

SECRET_VAR = "VERILEARN_ISOLATION_SECRET"


def _host_address() -> str:
    """This machine's address on its default route (no packet is sent), else loopback."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))
        return probe.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


def test_no_network(jailed: Jailed) -> None:
    """Neither the internet nor a port listening on the host answers; the jail's only
    interface is its own loopback."""
    listener = socket.create_server(("0.0.0.0", 0))
    listener.settimeout(0.2)
    port, host = listener.getsockname()[1], _host_address()
    accepted: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[1])
            except OSError:
                continue

    watcher = threading.Thread(target=accept, daemon=True)
    watcher.start()
    code = f"""
import json, socket
def attempt(addr):
    try:
        socket.create_connection(addr, timeout=2).close()
        return "connected"
    except OSError as exc:
        return type(exc).__name__
try:
    ifaces = [l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:]]
except OSError as exc:
    ifaces = [type(exc).__name__]
print(json.dumps({{"internet": attempt(("1.1.1.1", 53)), "host": attempt(({host!r}, {port})),
                  "ifaces": ifaces}}))
"""
    try:
        report = jailed.run(code).report()
    finally:
        stop.set()
        watcher.join(5)
        listener.close()
    assert report["internet"] != "connected" and report["host"] != "connected", report
    assert set(report["ifaces"]) <= {"lo"}, report
    assert accepted == []


def test_no_host_file_outside_the_mounts(
    jailed: Jailed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of the host beside the jail's mounts is not there; nor is the host's
    environment."""
    secret = tmp_path / "secret.txt"
    secret.write_text("host-secret")
    secret.chmod(0o644)
    monkeypatch.setenv(SECRET_VAR, "host-secret")
    code = f"""
import json, os
try:
    seen = open({str(secret)!r}).read()
except OSError as exc:
    seen = type(exc).__name__
print(json.dumps({{"file": seen, "env": os.environ.get({SECRET_VAR!r}),
                  "home": os.path.exists("/root/.bashrc")}}))
"""
    report = jailed.run(code).report()
    assert report["file"] in ("FileNotFoundError", "PermissionError"), report
    assert report["env"] is None and report["home"] is False, report


def test_no_write_outside_the_writable_mounts(jailed: Jailed) -> None:
    """The host folders the jail sees (its Python runtime, the standard library, the system
    libraries; read-only binds at their host paths) refuse every write; the host finds
    nothing new there. (A jail's own root is a private tmpfs: not the host's.)"""
    name = f"iso-probe-{uuid.uuid4().hex[:8]}"
    prefix = "/usr" if jailed.client == "dafny" else sys.prefix
    stdlib = os.path.dirname(os.__file__)
    targets = [os.path.join(prefix, name), os.path.join(stdlib, name), f"/usr/lib/{name}"]
    code = f"""
import errno, json
out = {{}}
for path in {targets!r}:
    try:
        with open(path, "w") as fh:
            fh.write("x")
        out[path] = "written"
    except OSError as exc:
        out[path] = errno.errorcode.get(exc.errno, str(exc.errno))
print(json.dumps(out))
"""
    try:
        report = jailed.run(code).report()
        assert set(report) == set(targets), report
        assert all(v in ("EROFS", "EACCES", "EPERM", "ENOENT") for v in report.values()), report
        assert not any(os.path.exists(path) for path in targets)
    finally:
        for path in targets:
            if os.path.exists(path):
                os.unlink(path)


def test_no_capability_and_no_way_back_to_root(jailed: Jailed) -> None:
    """Every capability is dropped; a jail with a uid of its own (65534) cannot become root
    (Dafny's bwrap jail keeps the caller's uid, without a capability; its Docker jail runs
    as 65534 too)."""
    code = """
import errno, json, os
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
try:
    os.setuid(0)
    became = "root"
except OSError as exc:
    became = errno.errorcode[exc.errno]
print(json.dumps({"uid": os.getuid(), "euid": os.geteuid(), "setuid": became,
                  "CapEff": status["CapEff"].strip(), "CapPrm": status["CapPrm"].strip()}))
"""
    report = jailed.run(code).report()
    assert int(report["CapEff"], 16) == 0 and int(report["CapPrm"], 16) == 0, report
    if jailed.client != "dafny" or jailed.backend == "docker":
        assert report["uid"] == report["euid"] == 65534, report
        # EINVAL: uid 0 is not even mapped in the bwrap jail's user namespace
        assert report["setuid"] in ("EPERM", "EINVAL"), report
