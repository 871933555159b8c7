"""`DafnyVerifier`: one program or a batch in, structured verdicts out.

Two modes give the same verdicts: `server` (a pool of long-lived jailed DafnyServer.exe
processes, the fast default; Dafny 2.x only) and `cli` (one jailed `dafny /compile:0`, or
`dafny verify` on 4.x, per program: the baseline and the fallback when no server is
shipped). Verdicts are cached by content hash of (program, versions, jail, flags) in the
lake (`cache.py`). Parallelism is bounded by the pool size, which by default never
exceeds the number of cores.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

from pydantic import Field

from verilearn_assets.core.config import StrictConfig
from verilearn_assets.dafny.verify import jail as jails
from verilearn_assets.dafny.verify.cache import VerdictCache, cache_key
from verilearn_assets.dafny.verify.results import (
    VerifyResult,
    classify,
    filter_noise,
    looks_like_syntax_error,
)
from verilearn_assets.dafny.verify.server import ServerDied, ServerHung, ServerPool
from verilearn_assets.dafny.verify.toolchain import (
    Toolchain,
    cli_argv,
    detect,
    solver_flags,
    verify_flags,
)

Mode = Literal["server", "cli"]
OUTPUT_CAP = 4000


class VerifierConfig(StrictConfig):
    mode: Mode = "server"
    processes: int = Field(default=0, ge=0)  # 0: min(2, cores)
    timeout_s: float = Field(default=60.0, gt=0)  # wall clock per program
    vc_time_limit_s: int = Field(default=20, ge=1)  # z3 time per verification condition
    jail: jails.JailMode = "auto"  # bwrap when installed, else docker when a daemon answers
    limits: jails.JailLimits = Field(default_factory=jails.JailLimits)  # per jail
    cache: bool = True
    allow_more_processes_than_cores: bool = False
    max_requests_per_process: int = Field(default=500, ge=1)  # then recycled (mono heap)

    def pool_size(self) -> int:
        cores = os.cpu_count() or 1
        size = self.processes or min(2, cores)
        if size > cores and not self.allow_more_processes_than_cores:
            raise ValueError(
                f"dafny verifier: processes={size} exceeds the {cores} cores here "
                "(set allow_more_processes_than_cores: true to insist)"
            )
        return size


class DafnyVerifier:
    """Thread-safe; use as a context manager (or call `close`) to stop the pool."""

    def __init__(
        self,
        config: VerifierConfig | None = None,
        cache_dir: Path | None = None,
        toolchain: Toolchain | None = None,
    ) -> None:
        self.config = config or VerifierConfig()
        self.toolchain = toolchain or detect()
        self.jail = jails.resolve_jail(self.config.jail)
        self.size = self.config.pool_size()
        self.cache = VerdictCache(cache_dir) if (cache_dir and self.config.cache) else None
        self._pool: ServerPool | None = None
        self._pool_lock = threading.Lock()  # verify() runs on many threads

    # --- public API ---------------------------------------------------------------------
    @property
    def flags(self) -> list[str]:
        """The flags that decide a verdict (part of the cache key). The z3 path differs
        inside and outside the jail, but the z3 *version* is in the key already."""
        return verify_flags(self.toolchain.dialect, self.config.vc_time_limit_s)

    @property
    def versions(self) -> dict[str, str]:
        return {
            "dafny": self.toolchain.dafny_version,
            "z3": self.toolchain.z3_version,
            "jail": self.jail,
        }

    def key(self, source: str) -> str:
        return cache_key(source, self.versions, self.flags)

    def verify(
        self,
        source: str,
        name: str = "program.dfy",
        mode: Mode | None = None,
        use_cache: bool = True,
    ) -> VerifyResult:
        key = self.key(source)
        if use_cache and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit.model_copy(update={"cached": True, "duration_ms": 0.0})
        mode = mode or self.config.mode
        if mode == "server" and not self.toolchain.server_exe and self.toolchain.dialect == "2":
            mode = "cli"  # a 4.x toolchain is refused by the pool instead, with the reason
        started = time.perf_counter()
        result = (
            self._verify_server(source, name)
            if mode == "server"
            else self._verify_cli(source, name)
        )
        result = result.model_copy(
            update={
                "key": key,
                "mode": mode,
                "verifier": self.versions,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
            }
        )
        if self.cache is not None:
            self.cache.put(result)
        return result

    def verify_many(
        self, sources: Sequence[str], mode: Mode | None = None, use_cache: bool = True
    ) -> list[VerifyResult]:
        """Verdicts in input order, at most `pool size` programs at a time."""
        if not sources:
            return []
        with ThreadPoolExecutor(max_workers=self.size) as ex:
            futures = [
                ex.submit(self.verify, s, f"program{i}.dfy", mode, use_cache)
                for i, s in enumerate(sources)
            ]
            results = [f.result() for f in futures]
        if self.cache is not None:
            self.cache.flush()  # one lake part per batch
        return results

    def server_pool(self) -> ServerPool:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ServerPool(
                    self.toolchain,
                    self.jail,
                    self.size,
                    self.config.max_requests_per_process,
                    self.config.limits,
                )
            return self._pool

    def close(self) -> None:
        if self.cache is not None:
            self.cache.flush()
        with self._pool_lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def __enter__(self) -> DafnyVerifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the two modes ------------------------------------------------------------------
    def _args(self) -> list[str]:
        """DafnyServer's request arguments (2.x only: the pool refuses 4.x).

        `/verifySnapshots:0`: DafnyServer turns Boogie's snapshot cache on, which reuses a
        method's earlier verdict in the same process when its checksum matches, and that
        checksum misses some of what the proof depends on (a `const`'s value): a program
        verified after an honest twin differing only there was reported verified. A verdict
        must come from the program alone, never from what the server saw before."""
        z3 = jails.z3_path(self.toolchain, self.jail)
        return [*self.flags, *solver_flags("2", z3), "/verifySnapshots:0"]

    def _verify_server(self, source: str, name: str) -> VerifyResult:
        pool = self.server_pool()
        task = {"args": self._args(), "filename": name, "source": source, "sourceIsFile": False}
        try:
            reply = pool.run(task, self.config.timeout_s)
        except ServerHung as exc:
            return VerifyResult(status="timeout", output=str(exc))
        except ServerDied as exc:
            return VerifyResult(status="crash", output=f"{exc} (after one retry)")
        text = filter_noise(reply.text)
        if not reply.handled:
            return VerifyResult(status="crash", output=text[-OUTPUT_CAP:])
        status, errors = classify(text)
        if status == "resolution_error":
            # DafnyServer ignores /noResolve, so its code-less errors do not say whether
            # parsing or resolution failed. The parser's own messages have a fixed form;
            # anything else is decided by a parse-only CLI run (~0.7 s, failures only).
            if all(looks_like_syntax_error(e.message) for e in errors):
                parse_failed = True
            else:
                parse_failed = self._parse_only_fails(source, name)
            status, errors = classify(text, parse_only_failed=parse_failed)
        return VerifyResult(status=status, errors=errors, output=text[-OUTPUT_CAP:])

    def _parse_only_fails(self, source: str, name: str) -> bool:
        result = self._verify_cli(source, name, extra=["/noResolve"])
        return result.status == "parse_error"

    def _verify_cli(self, source: str, name: str, extra: Sequence[str] = ()) -> VerifyResult:
        with tempfile.TemporaryDirectory(prefix="dafny-") as tmp:
            Path(tmp, name).write_text(source)
            where = jails.input_path(self.jail, tmp)
            argv = cli_argv(
                self.toolchain.dialect,
                self.toolchain.dafny,
                jails.z3_path(self.toolchain, self.jail),
                self.config.vc_time_limit_s,
                f"{where}/{name}",
                extra,
            )
            code, output, timed_out = jails.run(
                argv,
                self.toolchain,
                self.jail,  # type: ignore[arg-type]
                self.config.timeout_s,
                self.config.limits,
                input_dir=tmp,
            )
        if timed_out:
            return VerifyResult(status="timeout", output="wall-clock timeout (cli)")
        text = filter_noise(output).replace(f"{where}/", "")
        status, errors = classify(text)
        finished = "Dafny program verifier finished" in text
        if code not in (0, 2, 3, 4) or (status == "verified" and not finished and code != 0):
            return VerifyResult(status="crash", output=text[-OUTPUT_CAP:])
        return VerifyResult(status=status, errors=errors, output=text[-OUTPUT_CAP:])


def run_dafny_verify(source: str, verifier: DafnyVerifier | None = None) -> VerifyResult:
    """Verify one program (a throwaway single-process verifier when none is given)."""
    if verifier is not None:
        return verifier.verify(source)
    with DafnyVerifier(VerifierConfig(processes=1, cache=False)) as once:
        return once.verify(source)
