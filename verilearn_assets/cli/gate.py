"""`verilearn gate`: run the gate's checks headless; exit 1 naming every failing check."""

from __future__ import annotations

import argparse

from verilearn_assets.contracts import SOURCES, SPLITS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gate", help="run the blocking checks on every materialized "
                       "questions/episodes partition; exit 1 naming each failure")
    p.add_argument("--sources", nargs="+", default=list(SOURCES), choices=list(SOURCES))
    p.add_argument("--splits", nargs="+", default=list(SPLITS), choices=list(SPLITS))
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from verilearn_assets import lake
    from verilearn_assets.cli import CliError
    from verilearn_assets.cli.orchestrate import instance_for_home, run_job
    from verilearn_assets.partitions import partition_key

    home = lake.home()
    instance = instance_for_home(home)
    ran = 0
    failures: list[str] = []
    for source in args.sources:
        for split in args.splits:
            if not lake.partition_dir("questions", source=source, split=split).exists():
                continue
            key = str(partition_key(source, split))
            out = run_job(instance, "gate_job", key)
            ran += 1
            blocking = [c for c in out.failed_checks if c.startswith("[ERROR]")]
            failures.extend(blocking)
            if not out.success and not blocking:
                failures.extend(f"{key}: {s}" for s in out.failed_steps + out.errors)
            status = "ok" if not blocking and out.success else "FAILED"
            print(f"gate {key}: {status}")
            for line in out.failed_checks:
                print(f"  {line}")
    if ran == 0:
        raise CliError(f"no questions partition under {lake.lake_root()}: run "
                       "`verilearn demo` (or materialize questions) first")
    if failures:
        print(f"\n{len(failures)} failing check(s):")
        for f in failures:
            print(f"  - {f}")
        return 1
    print(f"\nall blocking checks passed on {ran} partition(s)")
    return 0
