"""Benchmark: the pooled long-lived Dafny verifier against one `dafny` CLI process per
program, on the same bundled programs in the same run, and the cache-hit path.

Both sides run jailed the same way (`jail` from configs/dafny.yaml), with no cache, on
every program of the bundled corpus. The pool is started and warmed (one request per
process) before timing: start-up is paid once per pool in real use. The CLI baseline runs
programs with the same parallelism (`--processes`), one fresh `dafny` per program.

    .venv/bin/python benchmarks/dafny.py [--processes 2] [--rounds 1] [--cache-hits 200]

Prints one JSON object: programs/s of each, the speed-up (target ≥ 3×, cache excluded),
and the cache-hit latency (target under 5 ms).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from verilearn_assets.dafny.loader import BUNDLED
from verilearn_assets.dafny.verifier import DafnyVerifier, VerifierConfig


def timed_batch(verifier: DafnyVerifier, programs: list[str], mode: str) -> tuple[float, list]:
    started = time.perf_counter()
    results = verifier.verify_many(programs, mode=mode, use_cache=False)  # type: ignore[arg-type]
    return time.perf_counter() - started, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--cache-hits", type=int, default=200)
    args = parser.parse_args()
    programs = [p.read_text() for p in sorted(BUNDLED.glob("*.dfy"))]
    with tempfile.TemporaryDirectory() as tmp:
        cfg = VerifierConfig(processes=args.processes)
        with DafnyVerifier(cfg, cache_dir=Path(tmp)) as verifier:
            warm = verifier.verify_many(programs[: args.processes], use_cache=False)
            assert all(r.ok for r in warm)
            server_s, cli_s = 0.0, 0.0
            for _ in range(args.rounds):  # alternate, so machine load hits both alike
                s, server_results = timed_batch(verifier, programs, "server")
                c, cli_results = timed_batch(verifier, programs, "cli")
                server_s, cli_s = server_s + s, cli_s + c
            same = [a.status for a in server_results] == [b.status for b in cli_results]
            # the cache-hit path: verdicts written by a cached verify, then read back
            verifier.verify(programs[0])
            hits = []
            for i in range(args.cache_hits):
                started = time.perf_counter()
                r = verifier.verify(programs[i % 1])
                hits.append((time.perf_counter() - started) * 1000)
                assert r.cached
    n = len(programs) * args.rounds
    server_rate, cli_rate = n / server_s, n / cli_s
    print(
        json.dumps(
            {
                "programs": len(programs),
                "rounds": args.rounds,
                "processes": args.processes,
                "jail": verifier.jail,
                "server_programs_per_s": round(server_rate, 3),
                "cli_programs_per_s": round(cli_rate, 3),
                "speedup_server_vs_cli": round(server_rate / cli_rate, 2),
                "same_verdicts": same,
                "all_verified": all(r.ok for r in server_results),
                "cache_hit_ms_median": round(statistics.median(hits), 3),
                "cache_hit_ms_p99": round(sorted(hits)[int(0.99 * (len(hits) - 1))], 3),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
