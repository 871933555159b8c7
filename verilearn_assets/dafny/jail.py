"""Running Dafny inside a bubblewrap jail: no network, read-only system, private /tmp.

A candidate program is untrusted text. Verification (`/compile:0`) runs no program code,
but Dafny, Boogie and z3 parse attacker-chosen input, so we give them nothing to reach:
every namespace is unshared, only `/usr`, `/etc` (mono's config) and the z3 binary are
mounted, read-only, and `/tmp` is a size-capped tmpfs. `jail: none` runs them directly
(for hosts without user namespaces); `auto` uses bwrap when it is installed.
"""

from __future__ import annotations

import shutil
from typing import Literal

from verilearn_assets.dafny.verify.toolchain import Toolchain

JailMode = Literal["auto", "bwrap", "none"]
Z3_IN_JAIL = "/opt/verilearn/z3"
INPUT_IN_JAIL = "/in"


def resolve_jail(mode: JailMode) -> Literal["bwrap", "none"]:
    if mode == "none":
        return "none"
    if shutil.which("bwrap"):
        return "bwrap"
    if mode == "bwrap":
        raise RuntimeError("dafny verifier: jail=bwrap but bubblewrap is not installed")
    return "none"


def z3_path(toolchain: Toolchain, jail: str) -> str:
    """Where the verifier sees z3 (the same binary, mounted at a fixed path in the jail)."""
    return Z3_IN_JAIL if jail == "bwrap" else toolchain.z3


def wrap(
    argv: list[str],
    toolchain: Toolchain,
    jail: str,
    input_dir: str | None = None,
    tmp_mb: int = 256,
) -> list[str]:
    """`argv` as run in the jail (unchanged when `jail == "none"`).

    `--die-with-parent` kills every process of the jail when bwrap dies; it is tied to the
    *thread* that started bwrap (PR_SET_PDEATHSIG), so long-lived servers are started from
    one thread that lives as long as the interpreter (`server.spawn`).
    """
    if jail == "none":
        return argv
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise RuntimeError("bubblewrap (`bwrap`) is not installed")
    args = [
        bwrap,
        "--unshare-all",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--clearenv",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--symlink",
        "usr/bin",
        "/bin",
        "--ro-bind",
        "/etc",
        "/etc",
        "--ro-bind",
        toolchain.z3,
        Z3_IN_JAIL,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(tmp_mb * 1024 * 1024),
        "--tmpfs",
        "/tmp",
        "--chdir",
        "/tmp",
    ]
    args.append("--die-with-parent")
    if input_dir is not None:
        args += ["--ro-bind", input_dir, INPUT_IN_JAIL]
    return [*args, "--", *argv]
