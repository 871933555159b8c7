"""Runs *inside* a pooled jail container as its PID 1 (stdlib only; the host's
Python, mounted read-only).

`pid1.py serve SOCKET` connects to the host's one-shot unix socket and then answers one
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

PID 1 cannot be touched by what it runs (issue 25: a command once attached to it with
`ptrace` and wrote forged replies into its socket): it runs as root of the container with
only CAP_SETUID, CAP_SETGID and CAP_KILL, is not dumpable (`PR_SET_DUMPABLE 0`) and
ignores SIGINT; every command, and the wipes of what commands wrote, run as uid 65534
(`drop`), and the container's seccomp profile denies `ptrace` and `process_vm_*`.
`remove_tree` (also the host's, through `workspace.py`) removes any tree one level at a
time by descriptors: no recursion limit, no PATH_MAX.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time

SCRATCH = "/tmp"  # the container's only writable place besides /workspace (a tmpfs)
SHM = "/dev/shm"  # Docker's per-container tmpfs (private IPC namespace)
IPC_RMID = 0
SANDBOX_UID = 65534  # the commands' uid (core.isolation.spec.SANDBOX_UID; stdlib only here)
PR_SET_DUMPABLE = 4


def drop() -> None:
    """Become the sandbox user for good (in a child of PID 1, before exec): no groups, no
    capabilities left (a setuid from 0 clears them), SIGINT back to its default."""
    if os.getuid() == 0:
        os.setgroups([])
        os.setgid(SANDBOX_UID)
        os.setuid(SANDBOX_UID)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def harden_self() -> None:
    """PID 1: not dumpable (no ptrace, no /proc/1/mem for anyone else of its uid), and
    deaf to SIGINT (the kernel already drops unhandled signals to an init; Python handles
    SIGINT, so it is ignored explicitly)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0)")
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def remove_tree(path: str | os.PathLike, keep_root: bool = False) -> None:
    """Remove `path` (or only what it holds, with `keep_root`) without recursion and
    without ever building a long path: one open directory at a time, descending by name
    and climbing back by `..`. A directory without search permission is given it first
    (the owner may always do that). Links are removed, never followed."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    top = os.fspath(path)
    try:
        fd = os.open(top, flags)
    except FileNotFoundError:
        return
    except PermissionError:
        os.chmod(top, 0o700)
        fd = os.open(top, flags)
    names: list[str] = []  # the way down from `top`
    try:
        while True:
            child = None
            with os.scandir(fd) as it:
                for item in it:
                    if item.is_dir(follow_symlinks=False):
                        child = item.name
                        break
                    try:
                        os.unlink(item.name, dir_fd=fd)
                    except FileNotFoundError:
                        pass
            if child is not None:
                try:
                    sub = os.open(child, flags, dir_fd=fd)
                except PermissionError:
                    os.chmod(child, 0o700, dir_fd=fd)  # a directory, not a link
                    sub = os.open(child, flags, dir_fd=fd)
                os.close(fd)
                fd, names = sub, [*names, child]
                continue
            if not names:
                break
            parent = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)
    if not keep_root:
        os.rmdir(top)


def walk_dirs(top: str | os.PathLike, visit) -> None:  # noqa: ANN001
    """Call `visit(dir_fd, names)` for `top` and every directory under it (links never
    followed), without recursion and with one directory open at a time (as
    `remove_tree`): any depth, any path length."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(os.fspath(top), flags)
    todo: list[list[str]] = []  # per level of the way down: subdirectories not yet visited
    try:
        while True:
            with os.scandir(fd) as it:
                items = [(item.name, item.is_dir(follow_symlinks=False)) for item in it]
            visit(fd, [name for name, _ in items])
            todo.append(sorted(name for name, is_dir in items if is_dir))
            while todo and not todo[-1]:
                todo.pop()
                if not todo:
                    return
                parent = os.open("..", flags, dir_fd=fd)
                os.close(fd)
                fd = parent
            sub = os.open(todo[-1].pop(), flags, dir_fd=fd)
            os.close(fd)
            fd = sub
    finally:
        os.close(fd)


def as_sandbox_user(work, *args) -> None:  # noqa: ANN001
    """Run `work(*args)` in a child that dropped to the sandbox uid (PID 1 keeps root and
    so cannot enter what a command made private); waits for it."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            drop()
            work(*args)
            code = 0
        except BaseException as exc:  # noqa: BLE001 - reported through the exit code
            print(f"jail_exec: {work.__name__}: {type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            os._exit(code)
    code = wait(pid, 60.0)
    if code is None:
        os.kill(pid, signal.SIGKILL)
        wait(pid, 5.0)
        raise OSError(f"{work.__name__} as uid {SANDBOX_UID} did not end in 60 s")
    if code != 0:
        raise OSError(f"{work.__name__} as uid {SANDBOX_UID} failed (exit {code})")


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
            remove_tree(path)
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


def wipe(directory: str = SCRATCH) -> None:
    """Empty `directory` (/tmp, /dev/shm) as the sandbox user (who wrote what is there); one
    holding nothing but mount points (most commands leave nothing) costs a listing, not a
    fork. The listing is complete whatever the modes below it: an entry a command hid
    (a directory of mode 000) is still an entry here, and makes the fork happen."""
    if not os.path.isdir(directory):
        return
    mounts = set(mount_points())
    if any(os.path.join(directory, name) not in mounts for name in os.listdir(directory)):
        as_sandbox_user(wipe_scratch, directory)


def run(spec: dict) -> dict:
    swept = sweep()
    wipe()
    memory = spec["memory_bytes"]

    def limit() -> None:  # the command's own address-space cap, as in the bwrap jail
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})  # init blocks it
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        drop()

    start = time.monotonic()
    timed_out = False
    # anonymous files (O_TMPFILE): no name in /tmp a command could pre-create or link
    with tempfile.TemporaryFile(dir=SCRATCH) as out, tempfile.TemporaryFile(dir=SCRATCH) as err:
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
    wipe()
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

    # the C library already loaded (as `harden_self`): `ctypes.util.find_library` runs
    # ldconfig or gcc to find it, 30-80 ms of every reset
    libc = ctypes.CDLL(None, use_errno=True)
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


def sysv_ipc_count() -> int:
    """How many System V IPC objects this IPC namespace holds (`/proc/sysvipc` lists every
    one, whoever owns it)."""
    count = 0
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                count += max(0, len(fh.read().splitlines()) - 1)  # below the header
        except OSError:
            continue
    return count


def reset() -> dict:
    """Make the container as fresh for the next workspace as a new one would be. Each
    wipe forks a child as the sandbox user only when there is something to wipe (the
    usual reset, after commands that cleaned up, is listings only: no fork)."""
    swept = sweep()
    wipe(SCRATCH)
    wipe(SHM)
    if sysv_ipc_count():
        # the commands' objects: removable by their owner, not by a root without
        # CAP_SYS_ADMIN
        as_sandbox_user(remove_sysv_ipc)
    return {"reset": True, "swept": swept}


def serve(path: str) -> None:
    harden_self()
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
        raise SystemExit("usage: pid1.py serve SOCKET")
