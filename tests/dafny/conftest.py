"""One verifier pool per test session (mono start-up and JIT are paid once)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from verilearn_assets.dafny.verify.verifier import DafnyVerifier, VerifierConfig


def _require_dafny() -> None:
    if shutil.which("dafny") is None:
        pytest.fail("dafny is not installed: run `make dafny-deps`")


@pytest.fixture(scope="session")
def verifier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DafnyVerifier]:
    """The shared pooled verifier (2 server processes, cache in a session directory)."""
    _require_dafny()
    cache = tmp_path_factory.mktemp("dafny-cache")
    with DafnyVerifier(VerifierConfig(processes=2, vc_time_limit_s=10), cache_dir=cache) as v:
        yield v


@pytest.fixture(scope="session")
def quick_verifier() -> Iterator[DafnyVerifier]:
    """1 s per VC, no cache: for timeouts and the CLI mode."""
    _require_dafny()
    with DafnyVerifier(
        VerifierConfig(processes=2, vc_time_limit_s=1, timeout_s=30, cache=False)
    ) as v:
        yield v


CORPUS = Path(__file__).resolve().parents[2] / "verilearn_assets" / "dafny" / "corpus"
