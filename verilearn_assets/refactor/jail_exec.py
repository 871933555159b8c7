"""Runs *inside* a workspace's Docker container as its PID 1 (stdlib only; the host's
Python, mounted read-only).

`jail_exec.py serve SOCKET` connects to the host's one-shot unix socket and then answers one
JSON line per command with one JSON line (exit code, timed_out, capped stdout/stderr,
duration, swept count): no `docker exec` (hundreds of milliseconds each) per command. As
the namespace's init it cannot be killed from inside (the kernel drops signals it does not
handle) and it reaps orphans. Before and after every command it sweeps every other process
of the container (`kill(-1)` spares only the caller) and empties `/tmp`, so nothing one
command leaves behind (a daemon, a fork bomb, a file in `$HOME`) reaches the next; on
timeout it kills the command's process group first. The host's socket accepts one
connection and is then removed, so a command cannot reach the host. A `reset` line (sent
before a pooled container serves its next workspace) also empties `/dev/shm` and removes
the System V IPC objects of the container's private IPC namespace: the only places besides
`/tmp` and the workspace where one workspace's commands could leave data for another's.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time

SCRATCH = "/tmp"  # the container's only writable place besides /workspace (a tmpfs)
SHM = "/dev/shm"  # Docker's per-container tmpfs (private IPC namespace)
IPC_RMID = 0


def _reap(main: int) -> int | None:
    """Reap every finished child; the exit code of `main` if it was among them."""
    code = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code
        if pid == 0:
            return code
        if pid == main:
            code = os.waitstatus_to_exitcode(status)


def wait(main: int, timeout_s: float) -> int | None:
    """Wait for `main` (reaping orphans meanwhile); None on timeout. SIGCHLD is blocked."""
    deadline = time.monotonic() + timeout_s
    while True:
        code = _reap(main)
        if code is not None:
            return code
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        signal.sigtimedwait({signal.SIGCHLD}, min(left, 1.0))


def others() -> list[int]:
    me = os.getpid()
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]


def sweep() -> int:
    """Kill every process but init and this one; wait until init has reaped them."""
    left = others()
    count = len(left)
    deadline = time.monotonic() + 5
    while left:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _reap(-1)  # as init, every orphan is ours to reap
        time.sleep(0.002)
        left = others()
        if left and time.monotonic() > deadline:
            raise SystemExit(f"jail_exec: processes {left[:10]} survive kill(-1)")
    return count


def mount_points() -> list[str]:
    """Where something is mounted in this container (`/proc/self/mounts`, octal escapes
    decoded): the host runtime may sit under `/tmp` when the repository lives there."""
    points = []
    with open("/proc/self/mounts") as fh:
        for line in fh:
            field = line.split()[1]
            points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field))
    return points


def wipe_scratch(directory: str = SCRATCH) -> None:
    """Empty `directory`, except the read-only mounts inside it and the folders that lead
    to them (created by the runtime as mount points: not anything a command left, and
    walking into a mount would visit the whole host runtime for nothing)."""
    if not os.path.isdir(directory):
        return
    inside = [m for m in mount_points() if m.startswith(directory.rstrip("/") + "/")]
    _wipe(directory, inside)


def _wipe(directory: str, mounts: list[str]) -> None:
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if path in mounts:
            continue
        if any(m.startswith(path + "/") for m in mounts):
            _wipe(path, mounts)  # a folder on the way to a mount: empty the rest of it
        elif os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def cap(data: bytes, limit: int) -> str:
    text = data.decode(errors="replace")
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n…[{len(text) - limit} characters cut]…\n{text[-half:]}"


def run(spec: dict) -> dict:
    swept = sweep()
    wipe_scratch()
    memory = spec["memory_bytes"]

    def limit() -> None:  # the command's own address-space cap, as in the bwrap jail
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})  # init blocks it
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    start = time.monotonic()
    timed_out = False
    out_path, err_path = f"{SCRATCH}/.step-{os.getpid()}.out", f"{SCRATCH}/.step-{os.getpid()}.err"
    with open(out_path, "w+b") as out, open(err_path, "w+b") as err:
        try:
            process = subprocess.Popen(
                spec["argv"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                preexec_fn=limit,  # noqa: PLW1509
            )
        except OSError as exc:  # not found / not executable here: the command's failure
            return {
                "exit_code": 127,
                "timed_out": False,
                "stdout": "",
                "stderr": f"jail: cannot run {spec['argv'][0]!r}: {exc}",
                "duration_ms": (time.monotonic() - start) * 1000,
                "swept": swept,
            }
        code = wait(process.pid, spec["timeout_s"])
        if code is None:
            timed_out = True
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            code = wait(process.pid, 30.0)
            code = -signal.SIGKILL if code is None else code
        process.returncode = code  # reaped here, not by Popen
        duration = (time.monotonic() - start) * 1000
        swept += sweep()  # daemons that left the group, children of a killed parent
        out.seek(0)
        err.seek(0)
        stdout = cap(out.read(), spec["cap"])
        stderr = cap(err.read(), spec["cap"])
    wipe_scratch()
    return {
        "exit_code": code,
        "timed_out": timed_out,
        "stdout": stdout,
        "stderr": stderr,
        "duration_ms": duration,
        "swept": swept,
    }


def remove_sysv_ipc() -> int:
    """Remove every System V shared memory segment, message queue and semaphore set of
    this IPC namespace (the container's own); returns how many there were."""
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    removers = {
        "shm": lambda ident: libc.shmctl(ident, IPC_RMID, None),
        "msg": lambda ident: libc.msgctl(ident, IPC_RMID, None),
        "sem": lambda ident: libc.semctl(ident, 0, IPC_RMID),
    }
    removed = 0
    for kind, remove in removers.items():
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            ident = int(row.split()[1])
            if remove(ident) != 0:
                raise OSError(ctypes.get_errno(), f"cannot remove sysv {kind} {ident}")
            removed += 1
    return removed


def reset() -> dict:
    """Make the container as fresh for the next workspace as a new one would be."""
    swept = sweep()
    wipe_scratch(SCRATCH)
    wipe_scratch(SHM)
    return {"reset": True, "swept": swept, "ipc_removed": remove_sysv_ipc()}


def serve(path: str) -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    reader = sock.makefile("rb")
    for line in reader:
        try:
            request = json.loads(line)
            reply = reset() if request.get("reset") else run(request)
        except Exception as exc:  # the host gets the reason; the container stays usable
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        sock.sendall(json.dumps(reply).encode() + b"\n")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        raise SystemExit("usage: jail_exec.py serve SOCKET")
