"""The worker that runs inside each sandbox slot (a zygote that forks one child per task).

The zygote imports the heavy libraries once and keeps recently used tables in memory.
`begin` forks a child: copy-on-write memory gives the task a pristine `df` and namespace
in a few milliseconds, and nothing the task does can reach the zygote's copy. `end` kills
every process of the task and wipes the workspace, so the next task starts clean.

The zygote runs as PID 1 of the slot's PID namespace: the kernel drops SIGKILL sent to it
from inside, so a cell cannot kill its own supervisor. Cells reach the host only as JSON
frames (results, submissions, hooks) on a channel separate from stdout.

The channel is a unix socket (`--socket`, the default transport) or, with `--stdio`
(Docker's attach transport, for hosts on other machines), the process's own stdin and
stdout: the zygote keeps private close-on-exec duplicates of fds 0/1 for the frames,
points 0/1 at /dev/null, and makes itself non-dumpable so that a cell (same uid) cannot
open /proc/1/fd/* to write into the frame stream. Cells get /dev/null and a captured
stdout as with the socket.

Run as a script inside the jail (`python -I -B worker.py ...`); it imports only the
stdlib, `protocol` and `runtime` from its own directory.
"""

from __future__ import annotations

import argparse
import ast
import base64
import builtins
import collections
import fcntl
import hashlib
import importlib
import io
import json
import linecache
import os
import resource
import select
import shutil
import signal
import socket
import sys
import time
import traceback
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def _load_siblings() -> tuple[Any, Any]:
    sys.path.insert(0, HERE)
    return importlib.import_module("protocol"), importlib.import_module("runtime")


protocol, runtime = _load_siblings()

CUT_MARKER = "\n[... {n} bytes cut from the middle of this output ...]\n"


class Capped:
    """Keeps the head and the tail of a stream; the middle is dropped past `cap` bytes."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data[-self.tail_cap :]
            if len(self.tail) > self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    def text(self) -> str:
        kept = len(self.head) + len(self.tail)
        head = self.head.decode(errors="replace")
        tail = self.tail.decode(errors="replace")
        if self.total <= kept:
            return (self.head + self.tail).decode(errors="replace")
        return head + CUT_MARKER.format(n=self.total - kept) + tail


# --------------------------------------------------------------------------- child side
def _trim_traceback(tb: Any) -> Any:
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return tb


def run_cell(code: str, n: int, ns: dict[str, Any], repr_cap: int) -> tuple[str, str | None]:
    """Execute one cell with notebook semantics; returns (status, repr of last value)."""
    filename = f"<cell {n}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        tree = ast.parse(code, filename, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, filename, "exec"), ns)
        if last is None:
            return "ok", None
        value = eval(compile(last, filename, "eval"), ns)
        if value is None:
            return "ok", None
        text = repr(value)
        if len(text) > repr_cap:
            text = text[: repr_cap - 3] + "..."
        print(text)
        return "ok", text
    except BaseException as exc:  # the cell's own failure, SystemExit included
        traceback.print_exception(
            type(exc), exc, _trim_traceback(exc.__traceback__), file=sys.stderr
        )
        return "error", None


def _vm_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def child_main(cmd_r: int, evt_w: int, df: Any, cfg: dict[str, Any]) -> None:
    """Body of the forked task process: set limits, then serve cells until EOF."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if cfg.get("_stdio"):
        _set_dumpable(True)  # the task's own /proc entries are its own again
    try:
        with open("/proc/self/oom_score_adj", "w") as fh:
            fh.write("1000")  # the task, never the zygote, is the OOM killer's victim
    except OSError:
        pass
    extra = cfg["memory_mb"] * 1024 * 1024
    limit = _vm_bytes() + extra
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    fsize = cfg["workspace_mb"] * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    workspace = cfg["workspace"]
    os.chdir(workspace)
    os.environ.update({"HOME": workspace, "TMPDIR": workspace, "MPLCONFIGDIR": workspace})
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)

    def emit(message: dict[str, Any]) -> None:
        protocol.write_frame_fd(evt_w, message)

    recorder = runtime.Recorder(
        emit, summary_chars=cfg["hook_summary_chars"], submission_cap=cfg["submission_cap_bytes"]
    )
    stats = sys.modules.get("scipy.stats")
    ns: dict[str, Any] = {
        "__name__": "__main__",
        "__builtins__": builtins,
        "df": df,
        "pd": sys.modules.get("pandas"),
        "np": sys.modules.get("numpy"),
        "stats": stats,
        "submit": recorder.submit,
        "hook": recorder.hook,
    }
    while True:
        try:
            msg = protocol.read_frame_fd(cmd_r)
        except protocol.ProtocolError:
            return
        status, value_repr = run_cell(msg["code"], msg["n"], ns, cfg["value_repr_chars"])
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        emit({"ev": "done", "status": status, "value_repr": value_repr})


# -------------------------------------------------------------------------- zygote side
class Zygote:
    """Serves the host: begin/cell/end/ping over one channel, one task at a time."""

    def __init__(
        self,
        sock: socket.socket | None,
        cfg: dict[str, Any],
        fds: tuple[int, int] | None = None,
    ) -> None:
        self.sock = sock
        if sock is not None:
            self.rfd = self.wfd = sock.fileno()
        elif fds is not None:
            self.rfd, self.wfd = fds
        else:
            raise ValueError("worker: a socket or a pair of fds is needed")
        self.cfg = cfg
        self.tables: collections.OrderedDict[tuple[str, int, int], Any] = collections.OrderedDict()
        self.table_key: tuple[str, int, int] | None = None
        self.child: int | None = None
        self.fds: dict[str, int] = {}
        self.cell_no = 0
        self.tasks = 0

    # --- tables
    def load_table(self, path: str) -> tuple[str, int, int]:
        st = os.stat(path)
        key = (path, st.st_mtime_ns, st.st_size)
        if key not in self.tables:
            self._cache(key, _read_table(path, path))
        self.tables.move_to_end(key)
        return key

    def _cache(self, key: tuple[str, int, int], frame: Any) -> None:
        self.tables[key] = frame
        while len(self.tables) > self.cfg.get("table_cache", 4):
            self.tables.popitem(last=False)

    def shipped_table(self, msg: dict[str, Any]) -> tuple[str, int, int] | None:
        """A table sent in `begin` (attach transport), cached by its content hash; None
        asks the host to send its bytes (it sends only a reference at first)."""
        ref = msg["table_ref"]
        key = (f"sha256:{ref['sha256']}", 0, int(ref["size"]))
        if key not in self.tables:
            data = msg.get("table_b64")
            if data is None:
                return None
            raw = base64.b64decode(data)
            if hashlib.sha256(raw).hexdigest() != ref["sha256"]:
                raise ValueError(f"table {ref['name']}: content does not match its hash")
            self._cache(key, _read_table(io.BytesIO(raw), str(ref["name"])))
        self.tables.move_to_end(key)
        return key

    # --- task processes
    def spawn(self) -> None:
        df = self.tables[self.table_key] if self.table_key else None
        cmd_r, cmd_w = os.pipe()
        evt_r, evt_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            code = 0
            try:
                os.setsid()
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                os.dup2(cmd_r, 3)
                os.dup2(evt_w, 4)
                if self.sock is not None:
                    self.sock.detach()
                os.closerange(5, 1 << 16)  # the zygote's channel (socket or stdio copies)
                self.tables = collections.OrderedDict()  # other tasks' tables: dropped
                child_main(3, 4, df, self.cfg)
            except BaseException:  # report and die; never return into the zygote loop
                traceback.print_exc()
                code = 70
            finally:
                os._exit(code)
        for fd in (cmd_r, evt_w, out_w, err_w):
            os.close(fd)
        for fd in (evt_r, out_r, err_r):
            os.set_blocking(fd, False)
        self.child = pid
        self.fds = {"cmd": cmd_w, "evt": evt_r, "out": out_r, "err": err_r}

    def _close_fds(self) -> None:
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = {}

    def _reap_all(self) -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def _others(self) -> list[int]:
        me = os.getpid()
        return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me]

    def kill_task(self) -> None:
        """SIGKILL every process of the task (escapees included) and reap them."""
        if self.child is not None:
            try:
                os.killpg(self.child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            if os.getpid() == 1:  # own PID namespace: everything else belongs to the task
                for pid in self._others():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            elif self.child is not None:
                try:
                    os.kill(self.child, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self._reap_all()
            if os.getpid() != 1 or not self._others():
                break
            time.sleep(0.001)
        self.child = None
        self._close_fds()

    def wipe(self) -> None:
        for root in (self.cfg["workspace"], "/dev/shm"):
            if not os.path.isdir(root):
                continue
            for name in os.listdir(root):
                path = os.path.join(root, name)
                try:
                    if os.path.isdir(path) and not os.path.islink(path):
                        _chmod_tree(path)
                        shutil.rmtree(path)
                    else:
                        os.unlink(path)
                except OSError as exc:
                    print(f"worker: could not remove {path}: {exc}", file=sys.stderr)

    # --- requests
    def begin(self, msg: dict[str, Any]) -> dict[str, Any]:
        t0 = time.perf_counter()
        self.end_task()
        table = msg.get("table")
        try:
            if msg.get("table_ref"):
                key = self.shipped_table(msg)
                if key is None:
                    return {"ok": False, "need_table": True}
                self.table_key = key
            else:
                self.table_key = self.load_table(table) if table else None
        except Exception as exc:  # reported to the host, which names the table
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        self.cell_no = 0
        self.tasks += 1
        self.spawn()
        return {"ok": True, "ms": (time.perf_counter() - t0) * 1000}

    def end_task(self) -> None:
        if self.child is not None or self.fds:
            self.kill_task()
        self.wipe()

    def cell(self, msg: dict[str, Any]) -> dict[str, Any]:
        t0 = time.perf_counter()
        timeout = float(msg.get("timeout") or self.cfg["cell_timeout_s"])
        if self.child is None:
            self.spawn()  # a previous cell killed the task's process: fresh namespace
        self.cell_no += 1
        out, err = Capped(self.cfg["output_cap_bytes"]), Capped(self.cfg["output_cap_bytes"])
        submissions: list[str] = []
        hooks: list[dict[str, Any]] = []
        status: str | None = None
        value_repr = None
        note = ""
        evt_buf = bytearray()
        try:
            protocol.write_frame_fd(self.fds["cmd"], {"code": msg["code"], "n": self.cell_no})
        except OSError:
            status = "killed"
        open_fds = {self.fds["evt"]: "evt", self.fds["out"]: "out", self.fds["err"]: "err"}
        deadline = t0 + timeout
        while status is None:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                status = "timeout"
                note = (
                    f"[sandbox] the cell ran past its {timeout:g}s wall-clock limit and "
                    "was killed; the task's variables were reset"
                )
                break
            ready, _, _ = select.select(list(open_fds), [], [], remaining)
            for fd in ready:
                try:
                    data = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                name = open_fds[fd]
                if not data:
                    del open_fds[fd]
                    if name == "evt":
                        status = "killed"
                    continue
                if name == "out":
                    out.feed(data)
                elif name == "err":
                    err.feed(data)
                else:
                    evt_buf += data
                    for event in _frames(evt_buf):
                        kind = event.get("ev")
                        if kind == "submit":
                            submissions.append(str(event.get("value")))
                        elif kind == "hook":
                            hooks.append(event.get("hook"))
                        elif kind == "done":
                            status = str(event.get("status"))
                            value_repr = event.get("value_repr")
            if status is None and not open_fds:
                status = "killed"
        if status == "killed":
            note = f"[sandbox] the task's process died ({self._death()}); its variables were reset"
        if status in ("killed", "timeout"):
            self.kill_task()
        for fd, name in list(open_fds.items()):
            if name in ("out", "err"):
                _drain(fd, out if name == "out" else err)
        stderr = err.text()
        if note:
            stderr = f"{stderr}{'' if not stderr or stderr.endswith(chr(10)) else chr(10)}{note}\n"
        return {
            "status": status,
            "stdout": out.text(),
            "stderr": stderr,
            "value_repr": value_repr,
            "submissions": submissions,
            "hooks": hooks,
            "duration_ms": (time.perf_counter() - t0) * 1000,
        }

    def _death(self) -> str:
        """Why the task process ended (exit code or signal), waiting briefly for it: up to
        2 s, as a process freeing much memory on a throttled slot can take a while to
        exit, and always one look even if this worker was descheduled past the limit."""
        pid = self.child
        if pid is None:
            return "unknown cause"
        deadline = time.monotonic() + 2.0
        while True:
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return "already reaped"
            if done:
                self.child = None
                if os.WIFSIGNALED(status):
                    sig = os.WTERMSIG(status)
                    why = signal.Signals(sig).name
                    if sig == signal.SIGKILL:
                        why += ", e.g. out of memory or killed by the cell"
                    return f"signal {why}"
                return f"exit code {os.WEXITSTATUS(status)}"
            if time.monotonic() >= deadline:
                return "closed its result channel"
            time.sleep(0.002)

    def serve(self) -> None:
        protocol.write_frame_fd(
            self.wfd,
            {
                "op": "hello",
                "pid": os.getpid(),
                "uid": os.getuid(),
                "python": sys.version.split()[0],
            },
        )
        while True:
            try:
                msg = protocol.read_frame_fd(self.rfd)
            except protocol.ProtocolError:
                break  # host went away
            op = msg.get("op")
            try:
                if op == "ping":
                    reply = {"ok": True, "tasks": self.tasks}
                elif op == "begin":
                    reply = self.begin(msg)
                elif op == "cell":
                    reply = self.cell(msg)
                elif op == "end":
                    t0 = time.perf_counter()
                    self.end_task()
                    reply = {"ok": True, "ms": (time.perf_counter() - t0) * 1000}
                elif op == "exit":
                    break
                else:
                    reply = {"ok": False, "error": f"unknown op {op!r}"}
            except Exception as exc:  # keep serving; the host sees the error
                reply = {"ok": False, "error": f"worker: {type(exc).__name__}: {exc}"}
            protocol.write_frame_fd(self.wfd, reply)
        self.end_task()


def _read_table(source: Any, name: str) -> Any:
    """A DataFrame from a path or an in-memory file; the type follows the name."""
    pd = importlib.import_module("pandas")
    if name.endswith((".parquet", ".pq")):
        return pd.read_parquet(source)
    if name.endswith((".csv", ".csv.gz", ".tsv")):
        sep = "\t" if name.endswith(".tsv") else ","
        if isinstance(source, str):
            return pd.read_csv(source, sep=sep)
        return pd.read_csv(source, sep=sep, compression="gzip" if name.endswith(".gz") else None)
    raise ValueError(f"table {name}: unsupported file type (use .parquet or .csv)")


def _set_dumpable(on: bool) -> None:
    """prctl(PR_SET_DUMPABLE): off, /proc/<pid>/fd of this process is closed to its uid."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 1 if on else 0, 0, 0, 0) != 0:  # 4 = PR_SET_DUMPABLE
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def stdio_channel() -> tuple[int, int]:
    """Private copies of stdin/stdout for the frames; fds 0/1 become /dev/null, so that
    nothing else written to stdout (a library's print, a stray write) reaches the host."""
    rfd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 10)
    wfd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 10)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    _set_dumpable(False)
    return rfd, wfd


def _frames(buf: bytearray) -> list[dict[str, Any]]:
    """Pop complete frames off the front of `buf`; malformed frames are skipped."""
    events = []
    size = protocol.HEADER.size
    while len(buf) >= size:
        (length,) = protocol.HEADER.unpack(bytes(buf[:size]))
        if length > protocol.MAX_FRAME:
            buf.clear()
            break
        if len(buf) < size + length:
            break
        body = bytes(buf[size : size + length])
        del buf[: size + length]
        try:
            events.append(protocol.decode_body(body))
        except protocol.ProtocolError:
            continue
    return events


def _drain(fd: int, sink: Capped) -> None:
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except (BlockingIOError, OSError):
            return
        if not data:
            return
        sink.feed(data)


def _chmod_tree(path: str) -> None:
    """Give the owner rwx back everywhere so a cell's chmod 000 can't block the wipe."""
    for root, dirs, _files in os.walk(path):
        for name in dirs:
            try:
                os.chmod(os.path.join(root, name), 0o700)
            except OSError:
                pass
    os.chmod(path, 0o700)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="verilearn sandbox worker")
    channel = parser.add_mutually_exclusive_group(required=True)
    channel.add_argument("--socket", help="unix socket of the pool (socket transport)")
    channel.add_argument("--stdio", action="store_true", help="frames on stdin/stdout (attach)")
    parser.add_argument("--config", required=True, help="JSON limits and settings")
    args = parser.parse_args(argv)
    cfg = json.loads(args.config)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if args.stdio:
        fds = stdio_channel()  # before any import can print
        cfg["_stdio"] = True
    for name in cfg.get("preload", []):
        importlib.import_module(name)
    if args.stdio:
        Zygote(None, cfg, fds=fds).serve()
        return 0
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(args.socket)
    Zygote(sock, cfg).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
