"""The real verifier (Debian dafny 2.3 + the pinned z3 4.8.5) on each result class."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from pathlib import Path

import dafny_programs as P
import pytest

from verilearn_assets.dafny.verify.results import filter_noise
from verilearn_assets.dafny.verify.toolchain import detect
from verilearn_assets.dafny.verify.verifier import DafnyVerifier, VerifierConfig


def test_toolchain_versions_recorded(verifier: DafnyVerifier) -> None:
    result = verifier.verify(P.VERIFIED, use_cache=False)
    assert result.status == "verified"
    assert result.verifier["dafny"].startswith("2.3")
    assert result.verifier["z3"] == "4.8.5"  # the pinned wheel's binary, not Debian's


@pytest.mark.parametrize(
    ("program", "status", "lines"),
    [
        (P.VERIFIED, "verified", []),
        (P.VERIFICATION_ERROR, "verification_error", [3]),  # the body opens on line 3
        (P.PARSE_ERROR, "parse_error", [1]),
        (P.RESOLUTION_ERROR, "resolution_error", [2]),
    ],
)
def test_result_classes_server(verifier: DafnyVerifier, program, status, lines) -> None:
    result = verifier.verify(program, use_cache=False)
    assert (result.status, result.error_lines()) == (status, lines), result.output
    assert result.mode == "server"


def test_verification_error_has_message_and_related_location(verifier: DafnyVerifier) -> None:
    result = verifier.verify(P.VERIFICATION_ERROR, use_cache=False)
    (err,) = result.errors
    assert err.code == "BP5003" and "postcondition" in err.message
    assert err.related and err.related[0].startswith("2:")


def test_timeout_and_cli_mode(quick_verifier: DafnyVerifier) -> None:
    assert quick_verifier.verify(P.TIMEOUT).status == "timeout"
    cases = [
        (P.VERIFIED, "verified"),
        (P.RESOLUTION_ERROR, "resolution_error"),
        (P.PARSE_ERROR, "parse_error"),
        (P.TIMEOUT, "timeout"),
    ]
    results = quick_verifier.verify_many([p for p, _ in cases], mode="cli")
    for (_, status), result in zip(cases, results, strict=True):
        assert (result.mode, result.status) == ("cli", status), result.output


def test_wall_clock_hang_restarts_the_process() -> None:
    """A request past the wall-clock limit is `timeout` and the process is replaced."""
    cfg = VerifierConfig(processes=1, vc_time_limit_s=60, timeout_s=5, cache=False)
    with DafnyVerifier(cfg) as v:
        v.verify(P.VERIFIED)
        before = v.server_pool().pids()
        assert v.verify(P.TIMEOUT).status == "timeout"
        assert v.server_pool().pids() != before
        assert v.verify(P.VERIFIED).status == "verified"  # the new process answers


def test_crash_when_the_server_cannot_run() -> None:
    broken = dataclasses.replace(detect(), server_exe="/nonexistent/DafnyServer.exe")
    with DafnyVerifier(VerifierConfig(processes=1, cache=False), toolchain=broken) as v:
        result = v.verify(P.VERIFIED)
        assert result.status == "crash" and "after one retry" in result.output
        assert v.server_pool().restarts >= 2


def test_killed_mid_request_is_restarted_and_retried(verifier: DafnyVerifier) -> None:
    """The servers are stopped (SIGSTOP) before the request, so the one it is written to
    cannot answer before it is killed, however fast the machine or warm its cache."""
    pool = verifier.server_pool()
    retries = pool.retries
    sent = {p.pid: p.requests for p in pool.all}
    for proc in pool.all:
        os.killpg(proc.pid, signal.SIGSTOP)
    box: dict = {}
    worker = threading.Thread(
        target=lambda: box.update(r=verifier.verify(P.many_loops(3), use_cache=False))
    )
    try:
        worker.start()
        victim = None
        for _ in range(3000):  # the request is in the victim's stdin once its count moves
            victim = next((p for p in pool.all if p.requests > sent[p.pid]), None)
            if victim is not None:
                break
            time.sleep(0.01)
        assert victim is not None, "the request never reached a server"
        os.killpg(victim.pid, signal.SIGKILL)
    finally:
        for pid in sent:
            try:
                os.killpg(pid, signal.SIGCONT)
            except ProcessLookupError:  # the victim
                pass
    worker.join(60)
    assert box["r"].status == "verified", box["r"].output
    assert pool.retries == retries + 1


def test_debian_z3_noise_is_filtered(tmp_path: Path) -> None:
    """Debian's z3 4.8.12 prints `model_compress` errors; the verdict ignores them."""
    debian = dataclasses.replace(detect(), z3="/usr/bin/z3", z3_version="4.8.12")
    with DafnyVerifier(VerifierConfig(processes=1, cache=False), toolchain=debian) as v:
        result = v.verify(P.VERIFIED, mode="cli")
    assert result.status == "verified"
    assert "model_compress" not in result.output
    raw = (
        "Prover error: line 3 column 28: unknown parameter 'model_compress'\n"
        "Legal parameters are:\n  auto_config (bool) (default: true)\nx.dfy(1,1): Error: boom"
    )
    assert filter_noise(raw) == "x.dfy(1,1): Error: boom"


def test_cache_hit_same_verdict_and_key_covers_flags(
    verifier: DafnyVerifier, tmp_path: Path
) -> None:
    """Verdicts live in the lake as Parquet parts (one per batch, unique names), read into
    an in-memory index; another process's cache finds them; the key covers the program,
    the versions, the jail and the flags; a hit costs well under 5 ms."""
    from verilearn_assets.dafny.config import cache_dir
    from verilearn_assets.dafny.verify.cache import VerdictCache

    home = tmp_path / "home"
    assert cache_dir(home) == home / "lake" / "dafny" / "verdicts"
    source = P.VERIFICATION_ERROR + "\n// cache\n"
    with DafnyVerifier(verifier.config, cache_dir=cache_dir(home)) as v:
        first = v.verify(source)
        again = v.verify(source)
        assert not first.cached and again.cached
        assert (again.status, again.error_lines(), again.key) == (
            first.status,
            first.error_lines(),
            first.key,
        )
        assert v.cache is not None and v.cache.parts() == []  # buffered until the batch ends
        batch = v.verify_many([P.VERIFIED, P.PARSE_ERROR])
        (part,) = v.cache.parts()  # one part for the batch and what was buffered before it
        hits = []
        for _ in range(50):
            started = time.perf_counter()
            assert v.verify(source).cached
            hits.append((time.perf_counter() - started) * 1000)
        assert sorted(hits)[len(hits) // 2] < 5.0
    assert part.parent == cache_dir(home) and part.name.startswith("part-")

    # another process: a fresh index over the same lake directory sees every verdict
    other = VerdictCache(cache_dir(home))
    assert len(other) == 3
    hit = other.get(first.key)
    assert hit is not None and (hit.status, hit.error_lines()) == (
        first.status,
        first.error_lines(),
    )
    assert other.get(batch[1].key).status == "parse_error"  # type: ignore[union-attr]
    # two writers at once: unique part names, nothing lost; a miss finds the newcomer
    third = VerdictCache(cache_dir(home))
    for cache, result in ((other, batch[0]), (third, first)):
        cache.put(result.model_copy(update={"key": result.key + "x"}))
    assert other.flush() != third.flush()
    assert len(other.parts()) == 3 and VerdictCache(cache_dir(home)).get(first.key + "x")
    assert other.get(first.key + "x") is not None  # written by `third` after `other` loaded
    merged = other.compact()
    assert (
        merged is not None and other.parts() == [merged] and len(VerdictCache(merged.parent)) == 5
    )
    import polars as pl

    from verilearn_assets.dafny.verify.results import VerifyResult

    rows = list(pl.read_parquet(merged).iter_rows(named=True))  # status column = verdict's
    pairs = [(r["status"], VerifyResult.model_validate_json(r["result"]).status) for r in rows]
    assert len(pairs) == 5 and all(a == b for a, b in pairs) and ("parse_error",) * 2 in pairs

    toolchain = verifier.toolchain
    base = DafnyVerifier(VerifierConfig(jail="none"), toolchain=toolchain)
    assert DafnyVerifier(VerifierConfig(vc_time_limit_s=3, jail="none"), toolchain=toolchain).key(
        P.VERIFIED
    ) != base.key(P.VERIFIED)  # flags
    if verifier.jail == "bwrap":
        assert verifier.key(P.VERIFIED) != DafnyVerifier(
            verifier.config.model_copy(update={"jail": "none"}), toolchain=toolchain
        ).key(P.VERIFIED)  # jail
    assert base.key(P.VERIFIED) != base.key(P.VERIFIED + " ")  # program


def test_batch_keeps_order(verifier: DafnyVerifier) -> None:
    programs = [P.VERIFIED, P.PARSE_ERROR, P.VERIFICATION_ERROR, P.VERIFIED + "\n"]
    statuses = [r.status for r in verifier.verify_many(programs, use_cache=False)]
    assert statuses == ["verified", "parse_error", "verification_error", "verified"]


def test_server_runs_in_the_jail(verifier: DafnyVerifier) -> None:
    if verifier.jail != "bwrap":
        pytest.fail("bubblewrap is installed here: the verifier must use it")
    pid = verifier.server_pool().pids()[0]
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert cmdline[0].endswith(b"bwrap") and b"--unshare-all" in cmdline


def test_more_processes_than_cores_refused() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        VerifierConfig(processes=(os.cpu_count() or 1) + 1).pool_size()


def test_process_recycled_after_max_requests() -> None:
    cfg = VerifierConfig(processes=1, cache=False, max_requests_per_process=2)
    with DafnyVerifier(cfg) as v:
        statuses = [v.verify(P.PARSE_ERROR).status for _ in range(3)]  # ~10 ms each
        assert statuses == ["parse_error"] * 3
        assert v.server_pool().recycled == 1 and v.server_pool().restarts == 0


def _const_program(k: int) -> str:
    return f"""const K: int := {k}
function Twice(x: int): int {{ x + x }}
method M(x: int) returns (y: int)
  ensures y == Twice(x) + K
{{ y := 2 * x; }}
"""


def test_server_verdict_does_not_depend_on_earlier_requests(verifier: DafnyVerifier) -> None:
    """DafnyServer's snapshot cache once reused the honest twin's verdict for a program that
    differs from it only in a `const` (checksum blind to it): the wrong one was 'verified'.
    Both go to every server process of the shared pool, the wrong one after the honest one."""
    honest, wrong = _const_program(0), _const_program(1)
    for _ in range(verifier.config.pool_size()):
        assert verifier.verify(honest, use_cache=False).status == "verified"
    for _ in range(verifier.config.pool_size()):
        assert verifier.verify(wrong, use_cache=False).status == "verification_error"
