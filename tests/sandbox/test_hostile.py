"""Hostile cells: each is contained, and the slot then serves a pristine next task.

Every case runs on both real backends (Docker, bubblewrap). After each hostile program a
probe task checks that nothing survived: no globals, no files, no threads, no processes,
the original table.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from verilearn_assets.core.sandbox.pool import TaskResult

os.environ["VERILEARN_SECRET_PROBE"] = "host-secret-value"  # must never reach a jail

PROBE = """
_names = sorted(k for k in globals() if not k.startswith('_'))
import os, threading
submit({"names": _names, "a": [int(v) for v in df["a"]], "b": list(df["b"]),
        "files": sorted(os.listdir(".")), "shm": sorted(os.listdir("/dev/shm"))
        if os.path.isdir("/dev/shm") else [], "threads": threading.active_count(),
        "procs": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())})
"""


def assert_pristine(pool, table: str) -> None:
    result = pool.program(PROBE, table)
    assert result.status == "ok", result.stderr
    probe = json.loads(result.answer)
    assert probe["names"] == ["df", "hook", "np", "pd", "stats", "submit"]
    assert probe["a"] == [1, 2, 3, 4] and probe["b"] == ["x", "y", "x", "z"]
    assert probe["files"] == [] and probe["shm"] == []
    assert probe["threads"] == 1
    assert len(probe["procs"]) == 2, probe["procs"]  # the zygote (PID 1) and this task


@dataclass
class Case:
    name: str
    cells: list[str]
    check: Callable[[TaskResult], None]
    timeout_s: float | None = None


def status_is(*statuses: str, text: str | None = None) -> Callable[[TaskResult], None]:
    def check(result: TaskResult) -> None:
        assert result.status in statuses, (result.status, result.stdout, result.stderr)
        if text is not None:
            assert text in result.stdout + result.stderr, result.stderr

    return check


def answer_is(expected: object) -> Callable[[TaskResult], None]:
    def check(result: TaskResult) -> None:
        assert result.status == "ok", result.stderr
        assert json.loads(result.answer) == expected

    return check


def big_output(result: TaskResult) -> None:
    assert result.status == "ok", result.stderr[-500:]
    assert "bytes cut from the middle" in result.stdout
    assert len(result.stdout) < 6000  # cap 4000 per stream + marker
    assert result.stdout.startswith("x") and result.stdout.rstrip().endswith("END")
    assert result.submissions == ['"after-100MB"']  # not lost to truncation


def cpu_limited(result: TaskResult) -> None:
    assert result.status == "ok", result.stderr
    used = json.loads(result.answer)
    # two spinning processes for 1.5 s wall: unlimited would use well over 1.5 s of CPU;
    # the 0.5-CPU quota allows about 0.75 s.
    assert used < 1.2, used


HOST_SECRET_DIR = Path(os.path.expanduser("~"))

CASES = [
    Case(
        "socket_connect",
        ["import socket\ns = socket.create_connection(('1.1.1.1', 80), 2)"],
        status_is("error", text="Error: [Errno"),
    ),
    Case(
        "loopback_socket",
        ["import socket\nsocket.create_connection(('127.0.0.1', 22), 2)"],
        status_is("error", text="Error"),
    ),
    Case(
        "http_request",
        ["import urllib.request\nurllib.request.urlopen('http://example.com', timeout=2)"],
        status_is("error", text="URLError"),
    ),
    Case(
        "read_etc_shadow",
        ["open('/etc/shadow').read()"],
        status_is("error", text="FileNotFoundError"),
    ),
    Case(
        "read_host_home",
        [f"import os\nos.listdir({str(HOST_SECRET_DIR)!r})"],
        # the home either does not exist in the jail or holds only the read-only runtime
        lambda r: (
            (r.status == "error" and "FileNotFoundError" in r.stderr)
            or (
                r.status == "ok"
                and set(json.loads(r.cells[-1].value_repr.replace("'", '"'))) <= {".pyenv"}
            )
            or pytest.fail(r.stdout + r.stderr)
        ),
    ),
    Case(
        "read_host_env",
        ["import os\nsubmit(sorted(os.environ))"],
        lambda r: (
            r.status == "ok"
            and "VERILEARN_SECRET_PROBE" not in r.answer
            and "PATH" in r.answer
            or pytest.fail(r.answer)
        ),
    ),
    Case("write_root", ["open('/evil', 'w').write('x')"], status_is("error", text="Error")),
    Case("write_tmp", ["open('/tmp/evil', 'w').write('x')"], status_is("error", text="Error")),
    Case(
        "write_runtime",
        [f"open({sys.prefix + '/evil'!r}, 'w').write('x')"],
        status_is("error", text="Error: [Errno"),
    ),
    Case(
        "write_worker_code",
        ["open('/opt/verilearn/sandbox/worker.py', 'a').write('x')"],
        status_is("error", text="Error: [Errno"),
    ),
    Case(
        "write_table_file",
        ["import glob\nfor p in glob.glob('/data/tables/*'):\n    open(p, 'a').write('1,2,3')"],
        status_is("error", text="Error: [Errno"),
    ),
    Case(
        "fork_bomb",
        ["import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"],
        status_is("timeout"),
        timeout_s=2,
    ),
    Case(
        "memory_bomb",
        ["x = []\nwhile True:\n    x.append(bytearray(50 * 1024 * 1024))"],
        status_is("error", "killed"),
    ),
    Case(
        "numpy_memory_bomb",
        ["import numpy as np\na = np.ones(10**10)"],
        status_is("error", text="MemoryError"),
    ),
    Case("while_true", ["x = 1", "while True:\n    pass", "x"], status_is("timeout"), timeout_s=1),
    Case(
        "output_100MB",
        [
            "import sys\nfor _ in range(100):\n"
            "    sys.stdout.write('x' * (1024 * 1024))\n"
            "print('END')\nsubmit('after-100MB')"
        ],
        big_output,
        timeout_s=30,
    ),
    Case("os_exit", ["import os\nos._exit(3)"], status_is("killed", text="exit code 3")),
    Case("sys_exit", ["import sys\nsys.exit(1)"], status_is("error", text="SystemExit")),
    Case(
        "kill_parent",
        ["import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nsubmit(os.getppid())"],
        answer_is(1),
    ),
    Case(
        "kill_everything",
        [
            "import os, signal, time\nif os.fork() == 0:\n"
            "    time.sleep(300)\ntime.sleep(0.1)\n"
            "os.kill(-1, signal.SIGKILL)\nsubmit('survived')"
        ],
        answer_is("survived"),
    ),
    Case(
        "sigsegv_ctypes",
        ["import ctypes\nctypes.string_at(0)"],
        status_is("killed", text="SIGSEGV"),
    ),
    Case(
        "deep_recursion",
        ["def f(n):\n    return f(n + 1)\nf(0)"],
        status_is("error", text="RecursionError"),
    ),
    Case(
        "c_stack_overflow",
        ["import sys\nsys.setrecursionlimit(10**8)\ndef f(n):\n    return f(n + 1)\nf(0)"],
        status_is("killed", "error", "timeout"),
        timeout_s=3,
    ),
    Case(
        "spawn_shell",
        ["import subprocess\nsubprocess.run(['/bin/sh', '-c', 'id'])"],
        status_is("error", text="FileNotFoundError"),
    ),
    Case(
        "spawn_escapee",
        [
            "import subprocess, sys\n"
            "p = subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(300)'], start_new_session=True)\n"
            "submit(p.pid)"
        ],
        status_is("ok"),
    ),
    Case(
        "double_fork_daemon",
        [
            "import os, time\nif os.fork() == 0:\n    os.setsid()\n"
            "    if os.fork() == 0:\n        time.sleep(300)\n"
            "    os._exit(0)\nsubmit('parent')"
        ],
        answer_is("parent"),
    ),
    Case(
        "mutate_table",
        ["df['a'] = 0\ndf.drop(columns=['b'], inplace=True)\nsubmit(int(df['a'].sum()))"],
        answer_is(0),
    ),
    Case("leftover_global", ["secret_global = 42\nimport os\nfrom math import *"], status_is("ok")),
    Case(
        "thread_left_running",
        [
            "import threading, time\n"
            "def spin():\n    while True:\n"
            "        open('thread.txt', 'a').write('x')\n"
            "        time.sleep(0.01)\n"
            "threading.Thread(target=spin, daemon=True).start()"
        ],
        status_is("ok"),
    ),
    Case(
        "files_left_behind",
        [
            "import os\nos.makedirs('d/e')\nopen('d/e/f', 'w').write('x')\n"
            "os.chmod('d/e', 0)\nos.chmod('d', 0)\n"
            "open('/dev/shm/leak', 'w').write('x')"
        ],
        status_is("ok"),
    ),
    Case(
        "fill_workspace",
        ["open('big', 'wb').write(b'x' * 200 * 1024 * 1024)"],
        status_is("error", "killed"),
    ),
    Case(
        "non_root",
        [
            "import os\nstatus = open('/proc/self/status').read()\n"
            "cap = [l for l in status.splitlines() if l.startswith('CapEff')][0]\n"
            "submit([os.getuid(), os.getgid(), cap.split()[1]])"
        ],
        answer_is([65534, 65534, "0000000000000000"]),
    ),
    Case(
        "pids_limit",
        [
            "import threading, time\nn = 0\ntry:\n"
            "    for _ in range(500):\n"
            "        threading.Thread(target=time.sleep, args=(5,), daemon=True)"
            ".start()\n        n += 1\nexcept RuntimeError:\n    pass\nsubmit(n)"
        ],
        lambda r: r.status == "ok" and json.loads(r.answer) < 48 or pytest.fail(r.answer),
    ),
    Case(
        "cpu_limit",
        [
            "import os, time, resource\nkids = []\nfor _ in range(2):\n"
            "    pid = os.fork()\n    if pid == 0:\n"
            "        end = time.time() + 1.5\n        while time.time() < end:\n"
            "            pass\n        os._exit(0)\n    kids.append(pid)\n"
            "used = 0.0\nfor pid in kids:\n    _, _, ru = os.wait4(pid, 0)\n"
            "    used += ru.ru_utime + ru.ru_stime\nsubmit(round(used, 3))"
        ],
        cpu_limited,
        timeout_s=20,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_cell_is_contained(pool, table_csv: str, case: Case) -> None:
    result = pool.program(case.cells, table_csv, case.timeout_s)
    case.check(result)
    assert_pristine(pool, table_csv)


def test_at_least_twenty_hostile_cases() -> None:
    assert len(CASES) >= 20
