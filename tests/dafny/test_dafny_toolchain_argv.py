"""The command line per Dafny dialect, and the server pool refusing a 4.x toolchain.

Dafny 4 cannot be installed on these machines (not on the package indexes reachable here),
so the 4.x argv is checked as the pure function that builds it, against the flag names of
the Dafny 4 CLI (`dafny verify --verification-time-limit N --solver-path Z3 file.dfy`); the
2.x argv is also run by the real Debian Dafny 2.3 in test_dafny_verifier.py.
"""

from __future__ import annotations

import dataclasses

import dafny_programs as P
import pytest

from verilearn_assets.dafny.verify.server import ServerPool
from verilearn_assets.dafny.verify.toolchain import ToolchainError, cli_argv, detect
from verilearn_assets.dafny.verify.verifier import DafnyVerifier, VerifierConfig


def test_cli_argv_dafny2_slash_flags() -> None:
    argv = cli_argv("2", "/usr/bin/dafny", "/opt/z3", 7, "/in/a.dfy", ["/noResolve"])
    assert argv == [
        "/usr/bin/dafny",
        "/compile:0",
        "/timeLimit:7",
        "/noCheating:1",
        "/z3exe:/opt/z3",
        "/noResolve",
        "/in/a.dfy",
    ]


def test_cli_argv_dafny4_verify_subcommand() -> None:
    argv = cli_argv("4", "/usr/local/bin/dafny", "/opt/z3", 7, "/in/a.dfy")
    assert argv == [
        "/usr/local/bin/dafny",
        "verify",
        "--verification-time-limit",
        "7",
        "--solver-path",
        "/opt/z3",
        "/in/a.dfy",
    ]


def test_verifier_flags_and_cache_key_follow_the_dialect() -> None:
    two = detect()
    four = dataclasses.replace(two, dafny_version="4.6.0", dialect="4")
    config = VerifierConfig(mode="cli", vc_time_limit_s=5, jail="none", cache=False)
    v2, v4 = DafnyVerifier(config, toolchain=two), DafnyVerifier(config, toolchain=four)
    assert v2.flags == ["/compile:0", "/timeLimit:5", "/noCheating:1"]
    assert v4.flags == ["--verification-time-limit", "5"]
    assert v2.key(P.VERIFIED) != v4.key(P.VERIFIED)


def test_server_pool_refuses_dafny4() -> None:
    four = dataclasses.replace(detect(), dafny_version="4.6.0", dialect="4")
    with pytest.raises(ToolchainError, match=r"Dafny 4\.6\.0.*--mode cli"):
        ServerPool(four, "none", 1)
    with (
        DafnyVerifier(VerifierConfig(processes=1, cache=False), toolchain=four) as v,
        pytest.raises(ToolchainError, match=r"Dafny 4\.6\.0.*--mode cli"),
    ):
        v.verify(P.VERIFIED)  # the default mode is `server`: refused, not silently switched
