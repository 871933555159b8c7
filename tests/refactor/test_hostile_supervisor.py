"""Hostile actions against the jail's supervisor (issue 25 item 3), on both real backends.

The attack that once forged verdicts: a jailed command attaches to the Docker container's
PID 1 with `ptrace` (or reads/writes its memory with `process_vm_*`) and writes an extra
reply into its socket, shifting every later reply by one. Each test runs the cheapest
version of that attack through a real entry point (the runner API the actor uses, the
CLI) and checks it fails with EPERM, and that the supervisor still answers in order.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.verify.runner import apply_action, cleanup, prepare_workspace

# Prints one JSON object: each attack's return value and errno; exits 0 only when every
# attack failed (so a test command running it "passes" only when the jail held).
ATTACK = r"""
import ctypes, errno, json, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long
libc.process_vm_readv.restype = ctypes.c_ssize_t
libc.process_vm_writev.restype = ctypes.c_ssize_t


class Iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def result(value):
    return [value, errno.errorcode.get(ctypes.get_errno(), "")]


out = {}
buf = ctypes.create_string_buffer(64)
secret = ctypes.create_string_buffer(b"a reply the supervisor never sent", 64)
local, remote = Iov(ctypes.addressof(buf), 64), Iov(ctypes.addressof(secret), 64)
if sys.argv[1:] == ["--own-memory-only"]:  # the unfiltered control: nothing that can hang
    out["readv_self"] = result(
        libc.process_vm_readv(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
    print(json.dumps(out))
    sys.exit(0)
out["attach_pid1"] = result(libc.ptrace(16, 1, None, None))  # PTRACE_ATTACH
for pid in (os.getpid(), 1):  # its own memory (only a filter stops that) and PID 1's
    out[f"readv_{pid == 1 and 'pid1' or 'self'}"] = result(
        libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
    out[f"writev_{pid == 1 and 'pid1' or 'self'}"] = result(
        libc.process_vm_writev(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
child = os.fork()
if child == 0:
    signal.pause()
    os._exit(0)
out["attach_own_child"] = result(libc.ptrace(16, child, None, None))
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
try:
    os.kill(1, signal.SIGINT)
    out["sigint_pid1"] = [0, ""]
except OSError as exc:
    out["sigint_pid1"] = [-1, errno.errorcode.get(exc.errno, "")]
out["uid"] = os.getuid()
with open("/proc/1/status") as fh:
    out["pid1_uid"] = int(next(l for l in fh if l.startswith("Uid:")).split()[1])
print(json.dumps(out))
denied = ("attach_pid1", "readv_self", "writev_self", "readv_pid1", "writev_pid1",
          "attach_own_child")
sys.exit(0 if all(out[k][0] == -1 and out[k][1] == "EPERM" for k in denied) else 1)
"""
DENIED = ("attach_pid1", "readv_self", "writev_self", "readv_pid1", "writev_pid1",
          "attach_own_child")  # fmt: skip


def _run(ws, *argv: str):  # noqa: ANN001, ANN202
    return apply_action(ws, {"kind": "command", "argv": list(argv)})


def test_ptrace_and_process_vm_are_denied_and_replies_stay_in_order(
    config: RefactorConfig, backend: str
) -> None:
    ws = prepare_workspace("t-supervisor", {"attack.py": ATTACK}, config)
    try:
        first = _run(ws, "python", "attack.py")
        assert first.exit_code == 0, first
        out = json.loads(first.stdout)
        for key in DENIED:  # the seccomp filter: even its own memory and child are refused
            assert out[key] == [-1, "EPERM"], (backend, key, out)
        assert out["uid"] == 65534, out
        if backend == "docker":  # PID 1 is the supervisor: another uid, deaf to SIGINT
            assert out["pid1_uid"] == 0 and out["sigint_pid1"] == [-1, "EPERM"], out
        # the supervisor answers the next commands with their own replies, in order
        for word in ("second", "third"):
            again = _run(ws, "python", "-c", f"print({word!r})")
            assert again.stdout.strip() == word and again.exit_code == 0, again
    finally:
        cleanup(ws)


def test_the_filter_is_what_denies_it(config: RefactorConfig, tmp_path: Path) -> None:
    """The attack's own-memory read works in a bwrap jail without the filter: the test
    above fails if the filter is dropped (attack your own verifier)."""
    from verilearn_assets.refactor.verify.jail import _run_local, bwrap_command
    from verilearn_assets.refactor.verify.jail_policy import resolve_argv

    if config.backend != "bwrap":
        pytest.skip("the unfiltered control is a bwrap command line")
    ws = prepare_workspace("t-nofilter", {"attack.py": ATTACK}, config)
    try:
        argv = resolve_argv(["python", "attack.py", "--own-memory-only"], "bwrap")
        command = bwrap_command(config, ws.tree, ws.control, argv, seccomp_fd=None)
        done = _run_local(config, command, None, {"PATH": "/usr/bin:/bin"}, 20)
        assert json.loads(done.stdout)["readv_self"][0] == 64, done
        filtered = _run(ws, "python", "attack.py", "--own-memory-only")
        assert json.loads(filtered.stdout)["readv_self"] == [-1, "EPERM"], filtered
    finally:
        cleanup(ws)


def test_cli_attack_as_test_command_is_denied(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """`verilearn refactor apply --test "python attack.py"`: the attack runs as the test
    command in the same jail and fails (the tests 'pass' only when every attack failed)."""
    from verilearn_assets.cli import main

    monkeypatch.setenv("VERILEARN_HOME", str(tmp_path / "home"))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "attack.py").write_text(ATTACK)
    (repo / "mod.py").write_text("x = dict(a=1)\n")
    code = main(["refactor", "apply", "--pattern", "dict(a=$A)", "--rewrite", "{'a': $A}",
                 "--workspace", str(repo), "--backend", backend,
                 "--test", "python attack.py"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["status"] == "ok", out
    assert out["tests"]["status"] == "passed", out


def test_supervisor_is_not_dumpable_in_its_own_words() -> None:
    """`harden_self` really sets PR_SET_DUMPABLE 0 and ignores SIGINT (checked in a child
    process, as PID 1 runs it)."""
    code = (
        "import ctypes, signal\n"
        "from verilearn_assets.core.isolation.pid1 import harden_self\n"
        "harden_self()\n"
        "libc = ctypes.CDLL(None)\n"
        "assert libc.prctl(3, 0, 0, 0, 0) == 0, 'dumpable'\n"  # PR_GET_DUMPABLE
        "assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN\n"
        "print('hardened')\n"
    )
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "hardened", done


def test_what_a_command_leaves_in_tmp_is_wiped_whatever_its_shape(config: RefactorConfig) -> None:
    """A 1,100-deep chain and a directory without permissions left in /tmp: the
    supervisor's wipe (as the commands' uid, iteratively) leaves the next command an empty
    /tmp, and the container still answers."""
    leave = (
        "import os\n"
        "os.makedirs('/tmp/locked/inner')\n"
        "os.chmod('/tmp/locked', 0)\n"
        "os.chdir('/tmp')\n"
        "for _ in range(1100):\n"
        "    os.mkdir('d')\n"
        "    os.chdir('d')\n"
        "print('left')\n"
    )
    ws = prepare_workspace("t-wipe", {"mod.py": "x = 1\n"}, config)
    try:
        first = _run(ws, "python", "-c", leave)
        assert first.stdout.strip() == "left", first
        look = (  # what /tmp holds besides mount points and the folders leading to them
            # (the read-only runtime bytecode; a repository cloned under /tmp mounts its venv)
            "import os\n"
            "mounts = [line.split()[1] for line in open('/proc/self/mounts')]\n"
            "def mounted(p):\n"
            "    return any(m == p or m.startswith(p + '/') for m in mounts)\n"
            "print(sorted(n for n in os.listdir('/tmp') if not mounted('/tmp/' + n)))\n"
        )
        second = _run(ws, "python", "-c", look)
        assert second.exit_code == 0 and second.stdout.strip() == "[]", second
    finally:
        cleanup(ws)


def test_verdict_bytecode_comes_from_the_host_read_only(config: RefactorConfig) -> None:
    """A verdict's pytest reads bytecode only under `-X pycache_prefix` (never beside the
    workspace's sources): there the jail finds the runtime's bytecode compiled by the host,
    read-only, so a command can neither plant bytecode for a later run nor pay for
    compiling pytest, or a stdlib module a repository's tests import (asyncio), on every run."""
    from verilearn_assets.refactor.verify.clean_copy import PYCACHE_IN_JAIL as VERDICT_PREFIX
    from verilearn_assets.refactor.verify.jail_policy import PYCACHE_IN_JAIL

    assert PYCACHE_IN_JAIL == VERDICT_PREFIX
    probe = (
        "import asyncio, errno, os, pytest\n"
        "print(os.path.exists(pytest.__cached__), pytest.__cached__.startswith('/tmp/'))\n"
        "print(os.path.exists(asyncio.__cached__), asyncio.__cached__.startswith('/tmp/'))\n"
        "try:\n"
        f"    open('{PYCACHE_IN_JAIL}/planted.pyc', 'w')\n"
        "    print('written')\n"
        "except OSError as exc:\n"
        "    print(errno.errorcode[exc.errno])\n"
    )
    ws = prepare_workspace("t-pycache", {"probe.py": probe}, config)
    try:
        step = _run(ws, "python", "-X", f"pycache_prefix={PYCACHE_IN_JAIL}", "probe.py")
        assert step.stdout.split() == ["True", "True", "True", "True", "EROFS"], step
    finally:
        cleanup(ws)
