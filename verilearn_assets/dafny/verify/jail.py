"""Running Dafny inside a bubblewrap jail: no network, read-only system, private /tmp.

A candidate program is untrusted text. Verification (`/compile:0`) runs no program code,
but Dafny, Boogie and z3 parse attacker-chosen input, so we give them nothing to reach:
every namespace is unshared, only `/usr`, `/etc` (mono's config) and the z3 binary are
mounted, read-only, and `/tmp` is a size-capped tmpfs. `jail: none` runs them directly
(for hosts without user namespaces); `auto` uses bwrap when it is installed. The jail is
a `JailSpec` of the isolation layer (`core/isolation`), rendered by its bwrap backend.
"""

from __future__ import annotations

import shutil
from typing import Literal

from verilearn_assets.core.isolation.bwrap import bwrap_argv, require_bwrap
from verilearn_assets.core.isolation.spec import Bind, JailSpec, Tmpfs
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
    return bwrap_argv(jail_spec(argv, toolchain, input_dir, tmp_mb), require_bwrap())


def jail_spec(
    argv: list[str], toolchain: Toolchain, input_dir: str | None = None, tmp_mb: int = 256
) -> JailSpec:
    """Dafny's jail: `/usr` and `/etc` (mono's config) and z3, read-only; a private `/tmp`.
    The caller's uid is kept (no user namespace of the jail's own): the verifier runs no
    program code, and mono needs nothing more."""
    binds = [
        Bind("/usr", "/usr", runtime=True),
        Bind("/etc", "/etc", runtime=True),
        Bind(toolchain.z3, Z3_IN_JAIL, runtime=True),
    ]
    if input_dir is not None:
        binds.append(Bind(input_dir, INPUT_IN_JAIL))
    return JailSpec(
        argv=argv,
        binds=binds,
        env={"HOME": "/tmp", "PATH": "/usr/bin:/bin"},
        tmpfs=[Tmpfs("/tmp", tmp_mb)],
        symlinks=[("usr/lib", "/lib"), ("usr/lib64", "/lib64"), ("usr/bin", "/bin")],
        chdir="/tmp",
        uid=None,
    )
