"""`verilearn demo`: materialize the default graph on the embedded defaults, print the report."""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.markup import escape

from verilearn_assets.core.records import SPLITS

DEFAULT_SOURCES = ("template", "procedural")  # `llm` needs a vLLM server


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="materialize the default graph and print the report")
    p.add_argument(
        "--sources",
        nargs="+",
        default=list(DEFAULT_SOURCES),
        choices=["template", "procedural", "llm"],
    )
    p.add_argument("--splits", nargs="+", default=list(SPLITS), choices=list(SPLITS))
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from verilearn_assets.cli.orchestrate import instance_for_home, run_job
    from verilearn_assets.core import lake
    from verilearn_assets.core.report import render_report
    from verilearn_assets.core.warehouse import reader, warehouse_path
    from verilearn_assets.platform.defs import partition_key

    console = Console()
    home = lake.home()
    instance = instance_for_home(home)
    console.print(
        f"[bold]verilearn demo[/] — home {home}, Dagster instance {instance.root_directory}"
    )
    outcomes = []

    def step(job: str, partition: str | None = None) -> None:
        t0 = time.perf_counter()
        out = run_job(instance, job, partition)
        outcomes.append(out)
        mark = "[green]ok[/]" if out.success else "[red]FAILED[/]"
        where = escape(f" [{partition}]") if partition else ""
        console.print(f"  {job}{where}: {mark} ({time.perf_counter() - t0:.1f}s)")
        for line in out.failed_checks + out.failed_steps + out.errors:
            console.print(f"    {line}", markup=False)

    step("platform_job")
    for source in args.sources:
        for split in args.splits:
            step("analysis_job", str(partition_key(source, split)))
    for split in args.splits:
        step("training_job", split)
    step("reports_job")
    with reader(warehouse_path(home)) as con:
        render_report(console, con)
    failed = [o for o in outcomes if not o.success]
    console.print(
        f"\n{len(outcomes) - len(failed)}/{len(outcomes)} runs succeeded. "
        "Open the UI on this instance with `make ui`."
    )
    return 1 if failed else 0
