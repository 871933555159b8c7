"""Which Dafny and z3 we run, found once per process, and the command line each speaks.

Debian's Dafny 2.3 paired with its z3 4.8.12 prints `model_compress` prover errors on every
run; the pinned `z3-solver==4.8.5.0` wheel ships a `bin/z3` that Dafny 2.3 accepts through
`/z3exe:`. We find that binary on disk (importing `z3` is not needed and may fail).

Dafny 2.x takes slash flags (`dafny /compile:0 /timeLimit:N /z3exe:Z3 f.dfy`); Dafny 4.x
has subcommands and GNU-style options (`dafny verify --verification-time-limit N
--solver-path Z3 f.dfy`). Only 2.x ships `DafnyServer.exe` with the protocol `server.py`
speaks, so a 4.x toolchain verifies in CLI mode only.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

DAFNY_LIB = Path("/usr/lib/dafny")


Dialect = Literal["2", "4"]


class ToolchainError(RuntimeError):
    """Dafny or z3 is missing or unusable: the verifier cannot give verdicts."""


@dataclass(frozen=True)
class Toolchain:
    dafny: str  # the `dafny` launcher (2.x `/flag` CLI or 4.x `dafny verify`)
    dafny_version: str
    dialect: Dialect  # "2" (slash flags, DafnyServer.exe) or "4" (`dafny verify`)
    server_exe: str | None  # DafnyServer.exe for the long-lived pool, if shipped
    runtime: str | None  # mono/cli that runs the .exe
    z3: str
    z3_version: str

    @property
    def versions(self) -> dict[str, str]:
        return {"dafny": self.dafny_version, "z3": self.z3_version, "z3_path": self.z3}


def verify_flags(dialect: Dialect, vc_time_limit_s: int) -> list[str]:
    """The flags that decide a verdict (verify only, per-VC time limit), in the dialect's
    syntax; the z3 path is left out (it differs inside and outside the jail).

    Dafny 2.x also gets `/noCheating:1` (defence in depth behind the anti-cheat screen):
    every `assume` becomes an assert and a bodiless `forall … ensures` statement a parse
    error. Dafny 4 has no such flag (its `verify` refuses `assume` without `{:axiom}`)."""
    if dialect == "4":
        return ["--verification-time-limit", str(vc_time_limit_s)]
    return ["/compile:0", f"/timeLimit:{vc_time_limit_s}", "/noCheating:1"]


def solver_flags(dialect: Dialect, z3: str) -> list[str]:
    return ["--solver-path", z3] if dialect == "4" else [f"/z3exe:{z3}"]


def cli_argv(
    dialect: Dialect,
    dafny: str,
    z3: str,
    vc_time_limit_s: int,
    file: str,
    extra: Sequence[str] = (),
) -> list[str]:
    """One verification run of `file` on the command line of the given Dafny dialect."""
    options = [*verify_flags(dialect, vc_time_limit_s), *solver_flags(dialect, z3), *extra]
    if dialect == "4":
        return [dafny, "verify", *options, file]
    return [dafny, *options, file]


def find_wheel_z3() -> str | None:
    """`bin/z3` of the z3-solver wheel in this interpreter's environment, if installed."""
    candidates = [Path(sys.prefix) / "bin" / "z3"]
    for site in map(Path, sys.path):
        candidates.append(site / "z3" / "bin" / "z3")
    for path in candidates:
        if path.is_file():
            return str(path.resolve())
    return None


def _version(argv: list[str], pattern: str) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"{argv[0]}: cannot run ({exc})") from exc
    match = re.search(pattern, out.stdout + out.stderr)
    if not match:
        raise ToolchainError(f"{' '.join(argv)}: no version in output {out.stdout[:200]!r}")
    return match.group(1)


@cache
def detect(z3: str | None = None) -> Toolchain:
    """Find Dafny, its server and a z3; raise ToolchainError naming what is missing."""
    dafny = shutil.which("dafny")
    if dafny is None:
        raise ToolchainError("`dafny` is not installed (apt-get install dafny; make dafny-deps)")
    # Dafny 2.x prints its banner before rejecting `/version`; 4.x answers `--version`.
    banner = subprocess.run([dafny, "/version"], capture_output=True, text=True)
    match = re.search(r"Dafny (\d+\.\d+\.\d+(?:\.\d+)?)", banner.stdout + banner.stderr)
    if match:
        version, dialect = match.group(1), match.group(1).split(".")[0]
    else:
        version = _version([dafny, "--version"], r"(\d+\.\d+\.\d+)")
        dialect = version.split(".")[0]
    z3_path = z3 or find_wheel_z3() or shutil.which("z3")
    if z3_path is None:
        raise ToolchainError("no z3: pip-install z3-solver==4.8.5.0 or apt-get install z3")
    z3_version = _version([z3_path, "--version"], r"Z3 version (\S+)")
    server = DAFNY_LIB / "DafnyServer.exe"
    runtime = shutil.which("mono") or shutil.which("cli")
    return Toolchain(
        dafny=dafny,
        dafny_version=version,
        dialect="4" if int(dialect) >= 4 else "2",
        server_exe=str(server) if server.is_file() else None,
        runtime=runtime,
        z3=z3_path,
        z3_version=z3_version,
    )


# What a training run on Dafny rows records of the toolchain (`Family.tool_versions`): the
# Dafny version on PATH, so a run's system.json names the verifier its rewards came from.
def dafny_version() -> str | None:
    try:
        out = subprocess.run(
            ["dafny", "/version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Dafny\s+([0-9][0-9.]*)", out.stdout + out.stderr)
    return m.group(1) if m else None


def tool_versions() -> dict[str, str | None]:
    return {"dafny": dafny_version()}
