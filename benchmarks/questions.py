"""Benchmark: template + procedural question generation with verification, bundled catalog.

Builds every bundled table into a temporary home, generates candidates per source (the
"search" phase, timed in-process), then verifies all of them concurrently across the
sandbox pool's slots (each question twice in fresh tasks, alternatives once). Prints
questions/s, the share of time spent executing in the sandbox versus searching, and peak
memory of this process.

Before that, the generation phase alone is timed four ways on the same tables: screen off,
the screen without tie probes (`probe_ties: false`: every convention variant re-runs the
program; issue 10's before), the screen without the metamorphic screens (`metamorphic:
false`; issue 24's before) and the screen as configured. It prints the screen's share of
generation time, the tie probes' before/after ratio (checking both reach the same
verdicts), and what the metamorphic screens cost: generation time with them over without,
per source and in total (issue 24 allows at most 1.25x), and the candidates each turns away.

    .venv/bin/python benchmarks/questions.py [--sources template procedural] [--slots N]
    .venv/bin/python benchmarks/questions.py --screen-only   # generation phase only
    .venv/bin/python benchmarks/questions.py --metamorphic-only   # issue 24's cost only
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from verilearn_assets.analysis.config import load_questions_config
from verilearn_assets.analysis.screen.metamorphic import SCREEN_REASONS
from verilearn_assets.analysis.sources.generate import generate
from verilearn_assets.analysis.verify.verifier import Verifier
from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.tables import build_tables
from verilearn_assets.core.sandbox.config import SandboxConfig, load_sandbox_config
from verilearn_assets.core.sandbox.pool import SandboxPool


def sandbox_config(slots: int | None, backend: str | None) -> SandboxConfig:
    try:
        cfg = load_sandbox_config()
    except ValueError:
        cfg = SandboxConfig()
    update = {k: v for k, v in {"slots": slots, "backend": backend}.items() if v}
    return cfg.model_copy(update=update)


async def bench_source(pool: SandboxPool, tables, source: str, cfg) -> dict:
    t0 = time.perf_counter()
    jobs, n_na = [], 0
    for table in tables:
        gen = generate(table, source, cfg)
        jobs += [(table, c) for c in gen.candidates]
        n_na += len(gen.not_applicable)
    search_s = time.perf_counter() - t0
    verifier = Verifier(pool, cfg)
    records = await verifier.verify_all(jobs)
    st = verifier.stats
    total_s = search_s + st.wall_s
    return {
        "source": source,
        "tables": len(tables),
        "candidates": len(jobs),
        "accepted": st.accepted,
        "rejected": st.rejected,
        "reasons": st.reasons,
        "not_applicable": n_na,
        "runs": st.runs,
        "search_s": search_s,
        "verify_wall_s": st.wall_s,
        "sandbox_exec_s": st.sandbox_ms / 1e3,
        "total_s": total_s,
        "questions_per_s": len(records) / total_s if total_s else 0.0,
        "slots": pool.config.slots,
    }


def _generate_all(tables, sources, cfg) -> tuple[float, dict[tuple[str, str], str | None]]:
    """(seconds, verdict per candidate: None for passed, else the reason's class or the
    in-process reference failure)."""
    t0 = time.perf_counter()
    verdicts: dict[tuple[str, str], str | None] = {}
    for table in tables:
        for source in sources:
            gen = generate(table, source, cfg)
            for c in gen.candidates:  # a reference that failed in-process is a verdict too
                failed = [x for x in c.conventions if x.startswith("reference:")]
                verdicts[(table.id, c.code)] = failed[0] if failed else None
            for c in gen.rejected:
                verdicts[(table.id, c.code)] = (c.rejection_reason or "").split(":", 1)[0]
    return time.perf_counter() - t0, verdicts


def _screen(cfg, **update):
    return cfg.model_copy(update={"screen": cfg.screen.model_copy(update=update)})


def _cpu_generate(tables, sources, cfg) -> tuple[float, float, dict]:
    """(process CPU seconds, wall seconds, verdicts): CPU time is what the screens cost;
    wall time on a shared machine mostly measures the other processes."""
    c0 = time.process_time()
    wall, verdicts = _generate_all(tables, sources, cfg)
    return time.process_time() - c0, wall, verdicts


def bench_metamorphic(tables, sources, cfg, repeats: int = 2) -> None:
    """Generation time without and with the metamorphic screens, per source (the least of
    `repeats` interleaved runs each), and the candidates each screen turns away (issue 24:
    at most 1.25x slower)."""
    without = _screen(cfg, enabled=True, metamorphic=False)
    with_ = _screen(cfg, enabled=True, metamorphic=True)
    print(f"\n[metamorphic screens] generation on {len(tables)} tables, without -> with")
    total = [0.0, 0.0]
    for source in sources:
        runs: dict[bool, list[tuple[float, float, dict]]] = {False: [], True: []}
        for _ in range(repeats):
            for on, c in ((False, without), (True, with_)):
                runs[on].append(_cpu_generate(tables, [source], c))
        cpu = {on: min(r[0] for r in rs) for on, rs in runs.items()}
        wall = {on: min(r[1] for r in rs) for on, rs in runs.items()}
        total[0] += cpu[False]
        total[1] += cpu[True]
        verdicts = {on: rs[0][2] for on, rs in runs.items()}
        passed = {on: sum(1 for v in vs.values() if v is None) for on, vs in verdicts.items()}
        turned = Counter(v for v in verdicts[True].values() if v in SCREEN_REASONS)
        print(
            f"  {source}: CPU {cpu[False]:.1f}s -> {cpu[True]:.1f}s "
            f"({cpu[True] / cpu[False]:.2f}x); wall {wall[False]:.1f}s -> {wall[True]:.1f}s; "
            f"candidates passed {passed[False]} -> {passed[True]}; turned away {dict(turned)}"
        )
    print(
        f"  total CPU: {total[0]:.1f}s -> {total[1]:.1f}s ({total[1] / total[0]:.2f}x, limit 1.25x)"
    )


def bench_screen(tables, sources, cfg) -> None:
    """Generation time with the screen off, as it was (every variant runs), and as now."""
    off = _screen(cfg, enabled=False)
    before = _screen(cfg, enabled=True, probe_ties=False)
    after = _screen(cfg, enabled=True, probe_ties=True)
    t_off, _ = _generate_all(tables, sources, off)
    t_before, v_before = _generate_all(tables, sources, before)
    t_after, v_after = _generate_all(tables, sources, after)
    s_before, s_after = t_before - t_off, t_after - t_off
    differ = sum(1 for k in v_before if v_before[k] != v_after.get(k))
    print(f"\n[generation, {'+'.join(sources)}] {len(v_after)} candidates on {len(tables)} tables")
    print(f"  screen off {t_off:.1f}s; screen before {t_before:.1f}s; screen after {t_after:.1f}s")
    print(
        f"  screen share of generation: before {s_before / t_before:.0%}, "
        f"after {s_after / t_after:.0%}"
    )
    print(
        f"  screen time ratio before/after: {s_before / s_after:.2f}x; generation "
        f"{t_before / t_after:.2f}x; verdicts that differ: {differ}"
    )


async def main(args: argparse.Namespace) -> int:
    cfg = load_questions_config()
    home = Path(tempfile.mkdtemp(prefix="verilearn-bench-"))
    t0 = time.perf_counter()
    tables = build_tables(load_datasets_config(), home)
    print(f"built {len(tables)} bundled tables in {time.perf_counter() - t0:.1f}s")
    bench_metamorphic(tables, args.sources, cfg)
    if not args.metamorphic_only:
        bench_screen(tables, args.sources, cfg)
    if args.screen_only or args.metamorphic_only:
        return 0
    results = []
    async with SandboxPool(sandbox_config(args.slots, args.backend)) as pool:
        print(f"sandbox backend {pool.backend}, {pool.config.slots} slots")
        for source in args.sources:
            try:
                results.append(await bench_source(pool, tables, source, cfg))
            except ImportError as exc:
                print(f"{source}: skipped ({exc})")
    for r in results:
        busy = r["sandbox_exec_s"] / (r["verify_wall_s"] * r["slots"]) if r["verify_wall_s"] else 0
        print(
            f"\n[{r['source']}] {r['tables']} tables, {r['candidates']} candidates -> "
            f"{r['accepted']} accepted, {r['rejected']} rejected {r['reasons'] or ''}; "
            f"{r['not_applicable']} template/table pairs not applicable"
        )
        print(
            f"  {r['runs']} sandbox runs; total {r['total_s']:.1f}s = search "
            f"{r['search_s']:.1f}s + verification {r['verify_wall_s']:.1f}s (wall)"
        )
        print(f"  questions/s: {r['questions_per_s']:.2f}")
        print(
            f"  time share: search {r['search_s'] / r['total_s']:.0%}, verification "
            f"{r['verify_wall_s'] / r['total_s']:.0%} (cells executing in the sandbox: "
            f"{r['sandbox_exec_s']:.1f}s summed over slots, {busy:.0%} of slot time)"
        )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak memory (this process, RSS): {peak_mb:.0f} MiB")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sources",
        nargs="+",
        default=["template", "procedural"],
        choices=["template", "procedural"],
    )
    parser.add_argument("--slots", type=int, default=None)
    parser.add_argument("--screen-only", action="store_true", help="time generation only")
    parser.add_argument(
        "--metamorphic-only", action="store_true", help="time the metamorphic screens only"
    )
    parser.add_argument("--backend", choices=["auto", "docker", "bwrap"], default=None)
    sys.exit(asyncio.run(main(parser.parse_args())))
