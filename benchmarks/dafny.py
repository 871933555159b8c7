"""Benchmark: the pooled long-lived Dafny verifier against one `dafny` CLI process per
program, on the same bundled programs in the same run, and the cache-hit path.

Both sides run jailed the same way (`jail` from configs/dafny.yaml), with no cache, on
every program of the bundled corpus. The pool is started and warmed (one request per
process) before timing: start-up is paid once per pool in real use. The CLI baseline runs
programs with the same parallelism (`--processes`), one fresh `dafny` per program.

    .venv/bin/python benchmarks/dafny.py [--processes 2] [--rounds 1] [--cache-hits 200]

The cache-hit path reads verdicts from the lake cache (Parquet parts under
`<home>/lake/dafny/verdicts/`, a temporary home here): every program is verified once with
the cache on (one part written for the batch), then a fresh verifier over the same lake
(another process's view: its index is read from the parts) is timed on cache hits.

Prints one JSON object: programs/s of each, the speed-up (target ≥ 3×, cache excluded),
the cache-hit latency median and p99 (target under 5 ms), and each target as met/missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from verilearn_assets.dafny.loader import BUNDLED
from verilearn_assets.dafny.settings import cache_dir
from verilearn_assets.dafny.verifier import DafnyVerifier, VerifierConfig


def timed_batch(verifier: DafnyVerifier, programs: list[str], mode: str) -> tuple[float, list]:
    started = time.perf_counter()
    results = verifier.verify_many(programs, mode=mode, use_cache=False)  # type: ignore[arg-type]
    return time.perf_counter() - started, results


SPEEDUP_TARGET = 3.0  # pooled server vs one CLI process per program, cache excluded
CACHE_HIT_TARGET_MS = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--cache-hits", type=int, default=200)
    args = parser.parse_args()
    programs = [p.read_text() for p in sorted(BUNDLED.glob("*.dfy"))]
    with tempfile.TemporaryDirectory() as tmp:
        cfg = VerifierConfig(processes=args.processes)
        lake_cache = cache_dir(Path(tmp))
        with DafnyVerifier(cfg, cache_dir=lake_cache) as verifier:
            warm = verifier.verify_many(programs[: args.processes], use_cache=False)
            assert all(r.ok for r in warm)
            server_s, cli_s = 0.0, 0.0
            for _ in range(args.rounds):  # alternate, so machine load hits both alike
                s, server_results = timed_batch(verifier, programs, "server")
                c, cli_results = timed_batch(verifier, programs, "cli")
                server_s, cli_s = server_s + s, cli_s + c
            same = [a.status for a in server_results] == [b.status for b in cli_results]
            verifier.verify_many(programs)  # cached verify: one lake part for the batch
            jail = verifier.jail
        parts = len(list(lake_cache.glob("part-*.parquet")))
        # the cache-hit path, from a fresh verifier whose index is read from the lake
        with DafnyVerifier(cfg, cache_dir=lake_cache) as reader:
            hits = []
            for i in range(args.cache_hits):
                started = time.perf_counter()
                r = reader.verify(programs[i % len(programs)])
                hits.append((time.perf_counter() - started) * 1000)
                assert r.cached, "a cache miss in the cache-hit benchmark"
    n = len(programs) * args.rounds
    server_rate, cli_rate = n / server_s, n / cli_s
    speedup = server_rate / cli_rate
    median = statistics.median(hits)
    p99 = sorted(hits)[int(0.99 * (len(hits) - 1))]

    def verdict(ok: bool) -> str:
        return "met" if ok else "missed"

    print(
        json.dumps(
            {
                "programs": len(programs),
                "rounds": args.rounds,
                "processes": args.processes,
                "jail": jail,
                "server_programs_per_s": round(server_rate, 3),
                "cli_programs_per_s": round(cli_rate, 3),
                "speedup_server_vs_cli": round(speedup, 2),
                "same_verdicts": same,
                "all_verified": all(r.ok for r in server_results),
                "cache_parts": parts,
                "cache_hits": len(hits),
                "cache_hit_ms_median": round(median, 3),
                "cache_hit_ms_p99": round(p99, 3),
                "targets": {
                    f"speedup >= {SPEEDUP_TARGET:g}x": verdict(speedup >= SPEEDUP_TARGET),
                    f"cache hit median < {CACHE_HIT_TARGET_MS:g} ms": verdict(
                        median < CACHE_HIT_TARGET_MS
                    ),
                    f"cache hit p99 < {CACHE_HIT_TARGET_MS:g} ms": verdict(
                        p99 < CACHE_HIT_TARGET_MS
                    ),
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
