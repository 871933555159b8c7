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

The `corpus` section (issue 23 §4) measures real-sized corpus work on a DafnyBench-sized
corpus written by `benchmarks/dafny_corpus.py` (no network: DafnyBench cannot be fetched
here; `--corpus-dir DIR` measures a checkout you have instead, e.g. DafnyBench's
`DafnyBench/dataset`): the load (layout, Dafny 4 → 2.3 rewrites, skips per reason,
duplicates), every loaded program's reference verified through the pool and the lake cache
with a cold cache (programs/s, wall time, % of ground-truth programs that verify after
rewriting; target ≥ 85%) and again warm (cache hits), and the anti-cheat screen's cost per
candidate (today's public `anticheat` entry point, `screen` or else `check_candidate`) against
the verifier's cost per program (target: the screen ≥ 100× cheaper).

    .venv/bin/python benchmarks/dafny.py --sections corpus [--corpus-programs 780]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from verilearn_assets.dafny.config import cache_dir
from verilearn_assets.dafny.corpus.catalog import Corpus, load_corpora
from verilearn_assets.dafny.corpus.loader import BUNDLED, DUPLICATE
from verilearn_assets.dafny.verify import anticheat
from verilearn_assets.dafny.verify.verifier import DafnyVerifier, VerifierConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dafny_corpus import generate  # noqa: E402  (the generator beside this script)


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
    parser.add_argument("--sections", default="pool,corpus", help="pool, corpus or both")
    parser.add_argument("--corpus-programs", type=int, default=780)
    parser.add_argument("--corpus-dir", type=Path, default=None, help="measure this corpus")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    if sections - {"pool", "corpus"}:
        parser.error(f"--sections: pool and/or corpus, got {args.sections!r}")
    out: dict = {}
    if "pool" in sections:
        out["pool"] = pool_vs_cli(args)
    if "corpus" in sections:
        out["corpus"] = corpus_section(args)
    print(json.dumps(out, indent=2))


def pool_vs_cli(args: argparse.Namespace) -> dict:
    """The pooled server against one CLI process per program, and cache hits (bundled)."""
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

    return {
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
            f"cache hit median < {CACHE_HIT_TARGET_MS:g} ms": verdict(median < CACHE_HIT_TARGET_MS),
            f"cache hit p99 < {CACHE_HIT_TARGET_MS:g} ms": verdict(p99 < CACHE_HIT_TARGET_MS),
        },
    }


SCREEN_RATIO_TARGET = 100.0  # the screen must cost well under the verifier per candidate
CORPUS_VERIFIED_TARGET = 0.85


def _screen_fn() -> tuple[str, Callable[[str, str, str], object]]:
    """Today's public screening entry point: `screen(candidate, role)` when the module
    has it, else `check_candidate(reference, candidate)` (the benchmark keeps working as
    the anti-cheat API moves)."""
    screen = getattr(anticheat, "screen", None)
    if screen is not None:
        return "anticheat.screen", lambda ref, cand, role: screen(cand, role)
    return "anticheat.check_candidate", lambda ref, cand, role: anticheat.check_candidate(ref, cand)


def corpus_section(args: argparse.Namespace) -> dict:
    """Load, verify (cold, then warm) and screen a DafnyBench-sized corpus."""
    with tempfile.TemporaryDirectory() as tmp:
        root = args.corpus_dir
        generated = None
        if root is None:
            root = Path(tmp) / "corpus"
            generated = generate(root, args.corpus_programs)["kinds"]
        started = time.perf_counter()
        loaded = load_corpora([Corpus(name="bench", root=root, origin=str(root))])
        load_s = time.perf_counter() - started
        report = loaded.reports[0]
        refs: dict[str, str] = {}
        for ex in loaded.examples:
            refs.setdefault(ex.program, ex.gold_program)
        cfg = VerifierConfig(processes=args.processes)
        lake_cache = cache_dir(Path(tmp))
        with DafnyVerifier(cfg, cache_dir=lake_cache) as verifier:
            verifier.verify_many(["method Warm() { }"] * args.processes, use_cache=False)
            started = time.perf_counter()
            cold = verifier.verify_many(list(refs.values()))
            cold_s = time.perf_counter() - started
        with DafnyVerifier(cfg, cache_dir=lake_cache) as verifier:
            started = time.perf_counter()
            warm = verifier.verify_many(list(refs.values()))
            warm_s = time.perf_counter() - started
        screen_name, screen = _screen_fn()
        candidates = [
            (ex.gold_program, cand, role)
            for ex in loaded.examples
            for cand, role in ((ex.body, "writer"), (ex.annotated_body, "annotator"))
        ] + [(ref, ref, "program") for ref in refs.values()]
        started = time.perf_counter()
        for ref, cand, role in candidates:
            screen(ref, cand, role)
        screen_s = time.perf_counter() - started
    verified = sum(r.status == "verified" for r in cold)
    duplicates = report.skipped.get(DUPLICATE, 0)
    ground_truth = report.files - duplicates  # distinct ground-truth programs
    per_program_ms = statistics.median(r.duration_ms for r in cold)
    screen_ms = screen_s * 1000 / len(candidates)
    ratio = per_program_ms / screen_ms if screen_ms else float("inf")
    share = verified / ground_truth if ground_truth else 0.0

    def verdict(ok: bool) -> str:
        return "met" if ok else "missed"

    return {
        "corpus": str(args.corpus_dir or f"generated ({args.corpus_programs} programs)"),
        "generated_kinds": generated,
        "layout": report.layout,
        "files": report.files,
        "programs_loaded": report.loaded,
        "examples": len(loaded.examples),
        "rewritten": report.rewritten,
        "skipped": dict(sorted(report.skipped.items())),
        "load_s": round(load_s, 2),
        "reference_verified": verified,
        "reference_statuses": dict(Counter(r.status for r in cold)),
        "verified_of_ground_truth": round(share, 4),
        "verified_of_loaded": round(verified / len(refs), 4) if refs else 0.0,
        "processes": args.processes,
        "cold_wall_s": round(cold_s, 1),
        "cold_programs_per_s": round(len(refs) / cold_s, 3),
        "verifier_ms_per_program_median": round(per_program_ms, 1),
        "warm_wall_s": round(warm_s, 3),
        "warm_all_cached": all(r.cached for r in warm),
        "warm_programs_per_s": round(len(refs) / warm_s, 1),
        "screen": screen_name,
        "screen_candidates": len(candidates),
        "screen_ms_per_candidate": round(screen_ms, 3),
        "verifier_vs_screen_cost_ratio": round(ratio, 1),
        "targets": {
            f"verified >= {CORPUS_VERIFIED_TARGET:.0%} of ground truth": verdict(
                share >= CORPUS_VERIFIED_TARGET
            ),
            f"screen >= {SCREEN_RATIO_TARGET:g}x cheaper than the verifier": verdict(
                ratio >= SCREEN_RATIO_TARGET
            ),
        },
    }


if __name__ == "__main__":
    main()
