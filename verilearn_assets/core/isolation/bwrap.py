"""The bubblewrap backend: a `JailSpec` rendered as one `bwrap` command line.

Every namespace is unshared (the network too unless the spec asks for it), all
capabilities dropped, the environment cleared, `/proc` and `/dev` private, and the jail
dies with the process that started it (`--die-with-parent` is tied to the starting
*thread*: long-lived jails are started from a thread that lives as long as they do).
With a uid the jail gets a user namespace of its own in which it cannot create another
(`--disable-userns`). Limits are not bwrap's: `run.py` applies them from the host.
"""

from __future__ import annotations

import shutil

from verilearn_assets.core.isolation.spec import JailSpec


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def require_bwrap(hint: str = "") -> str:
    binary = bwrap_path()
    if binary is None:
        raise RuntimeError(f"bubblewrap (`bwrap`) is not installed{hint}")
    return binary


def bwrap_argv(
    spec: JailSpec,
    binary: str | None = None,
    seccomp_fd: int | None = None,
    extra: list[str] | None = None,
) -> list[str]:
    """`spec` as a bwrap command line. `seccomp_fd`: a BPF program bwrap loads just before
    the command runs (`seccomp.bpf_fd`); `extra`: more bwrap options (`run.BwrapGate`)."""
    args = [binary or require_bwrap()]
    if spec.root_tmpfs_mb is not None:
        args += ["--size", _bytes(spec.root_tmpfs_mb), "--tmpfs", "/"]
    args += ["--unshare-all"]
    if spec.network:
        args += ["--share-net"]
    if spec.uid is not None:
        args += ["--unshare-user", "--disable-userns"]
    args += ["--die-with-parent", "--new-session"]
    if spec.as_pid_1:
        args += ["--as-pid-1"]
    if spec.uid is not None:
        args += ["--uid", str(spec.uid), "--gid", str(spec.uid)]
    args += ["--cap-drop", "ALL", "--clearenv", "--proc", "/proc", "--dev", "/dev"]
    for tmpfs in spec.tmpfs:
        if tmpfs.size_mb is not None:
            args += ["--size", _bytes(tmpfs.size_mb)]
        if tmpfs.mode is not None:
            args += ["--perms", tmpfs.mode]
        args += ["--tmpfs", tmpfs.path]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args += extra or []
    for key, value in spec.env.items():
        args += ["--setenv", key, value]
    for bind in spec.binds:
        args += ["--bind" if bind.writable else "--ro-bind", bind.host, bind.inside]
    for target, link in spec.symlinks:
        args += ["--symlink", target, link]
    if spec.read_only_root:
        args += ["--remount-ro", "/"]
    return [*args, "--chdir", spec.chdir, "--", *spec.argv]


def _bytes(mb: int) -> str:
    return str(mb * 1024 * 1024)
