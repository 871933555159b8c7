"""The jail's limits, for every client (the cell pool, the command runner, the DafnyServer
jail) on both backends: time, memory, processes; and nothing a program starts outlives it."""

from __future__ import annotations

import os
import time
import uuid

from isolation_clients import Jailed


def test_time_limit_kills_a_busy_loop(limited: Jailed) -> None:
    start = time.monotonic()
    outcome = limited.run("while True:\n    pass\n", timeout_s=2)
    assert outcome.timed_out, outcome
    assert time.monotonic() - start < 30


def test_memory_limit_refuses_a_gigabyte(limited: Jailed) -> None:
    code = """
import json
try:
    block = bytearray(1 << 30)
    got = "allocated"
except MemoryError:
    got = "MemoryError"
print(json.dumps({"got": got}))
"""
    outcome = limited.run(code)
    assert "allocated" not in outcome.stdout, outcome
    assert "MemoryError" in outcome.stdout or not outcome.stdout.strip(), outcome


def test_process_limit_stops_a_fork_bomb(limited: Jailed) -> None:
    """300 forks asked, fewer than the jail's pids limit granted (the rest refused: EAGAIN)."""
    code = """
import errno, json, os, time
kids, refused = [], None
for _ in range(300):
    try:
        pid = os.fork()
    except OSError as exc:
        refused = errno.errorcode[exc.errno]
        break
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.kill(pid, 9)
for pid in kids:
    os.waitpid(pid, 0)
print(json.dumps({"forked": len(kids), "refused": refused}))
"""
    report = limited.run(code, timeout_s=30).report()
    assert report["forked"] < limited.pids_limit and report["refused"] == "EAGAIN", report


def _alive_with(marker: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def test_no_process_outlives_its_program(jailed: Jailed) -> None:
    """A daemon in a session of its own, started by the program, is gone once the
    program's run is over (the jail's pid namespace, the container's PID 1, the cell's
    task all end it)."""
    marker = f"iso-daemon-{uuid.uuid4().hex}"
    code = f"""
import json, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", {marker!r}],
                         start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
print(json.dumps({{"started": child.pid}}))
"""
    report = jailed.run(code).report()
    assert report["started"] > 0
    deadline = time.monotonic() + 10
    while _alive_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive_with(marker) == [], "a process the program started outlived it"
