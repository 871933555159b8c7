"""`procs.running`: a zombie is not running, though `kill -0` still succeeds on it."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from verilearn_assets.core.procs import running, state


def test_a_live_process_runs_and_a_zombie_does_not():
    assert running(os.getpid())
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while state(child.pid) != "Z":  # exited, not reaped: Popen waits only when asked
        assert time.monotonic() < deadline, "the child never exited"
        time.sleep(0.05)
    os.kill(child.pid, 0)  # what `kill -0` says: still there
    assert not running(child.pid)
    child.wait()
    assert not running(child.pid) and state(child.pid) is None


def test_a_command_name_with_parentheses_and_spaces_is_read_right(tmp_path: Path):
    odd = tmp_path / "x) Z (y"  # /proc/<pid>/stat shows the name in parentheses
    shutil.copy(shutil.which("sleep"), odd)
    proc = subprocess.Popen([str(odd), "30"])
    try:
        assert running(proc.pid)  # read as "Z" by a naive split of the line
    finally:
        proc.kill()
        proc.wait()
