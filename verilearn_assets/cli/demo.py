"""`verilearn demo`: materialize the default graph on the embedded defaults, print the report.

The console gets one line per job and partition, under a progress bar; Dagster's DEBUG
event stream and every stack trace go to `$VERILEARN_HOME/logs/demo-<time>.log`, whose
path is printed first. A failed run is one line: what failed, why, and where the log is.
"""

from __future__ import annotations

import argparse
import time
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from verilearn_assets.cli.progress import progress_bar
from verilearn_assets.core.records import SPLITS

DEFAULT_SOURCES = ("template", "procedural")  # `llm` needs a vLLM server
STAGES = ("ingest", "tasks", "training", "reports")
EXAMPLES = {"demo": "verilearn demo --families analysis --sources template --splits dev"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="materialize the default graph and print the report",
        description="Materialize the default graph on the embedded defaults (no model needed): "
        "every dataset partition, the sandbox smoke suite, each family's job per source x "
        "split, the training data, the reports; then print the report. One line per run on "
        "the console; Dagster's event stream goes to $VERILEARN_HOME/logs/demo-<time>.log.",
    )
    p.add_argument(
        "--sources",
        nargs="+",
        default=list(DEFAULT_SOURCES),
        choices=["template", "procedural", "llm"],
    )
    p.add_argument("--splits", nargs="+", default=list(SPLITS), choices=list(SPLITS))
    p.add_argument(
        "--executor",
        choices=("in_process", "celery"),
        default="in_process",
        help="celery: run every step on the Celery workers of `make cluster-up` "
        "(configs/deploy.yaml: broker, Postgres instance)",
    )
    p.add_argument(
        "--families",
        nargs="+",
        default=None,
        metavar="FAMILY",
        help="only these families' jobs (default: every registered family)",
    )
    p.add_argument(
        "--stop-after",
        choices=STAGES,
        default=STAGES[-1],
        help="run the graph up to this stage only (ingest: the dataset partitions and the "
        "smoke suite; tasks: every family's job; training; reports: everything)",
    )
    p.set_defaults(handler=run)


@dataclass(frozen=True)
class Step:
    job: str
    partition: str | None = None

    def label(self) -> str:
        return f"{self.job} [{self.partition}]" if self.partition else self.job


def plan(
    sources: list[str],
    splits: list[str],
    jobs: set[str],
    stop_after: str = STAGES[-1],
    only: list[str] | None = None,
) -> tuple[list[Step], list[str]]:
    """The runs of a demo, in order, and the family jobs skipped because they do not exist.

    Every dataset partition of `platform_job` (one run each, so one bad dataset fails
    alone), the smoke suite, each family's job per source × split (the registry's first
    family, analysis, first), the training job per split, then the reports.
    """
    from verilearn_assets.core.family import families
    from verilearn_assets.core.partitions import DATASET, partition_key
    from verilearn_assets.training.families import default_family

    last = STAGES.index(stop_after)
    steps = [Step("platform_job", key) for key in DATASET.get_partition_keys()]
    if "smoke_job" in jobs:
        steps.append(Step("smoke_job"))
    if last < STAGES.index("tasks"):
        return steps, []
    known = families()
    unknown = [n for n in only or [] if n not in known]
    if unknown:
        raise ValueError(f"unknown family {unknown[0]!r} (known: {', '.join(known)})")
    first = default_family()  # the registry's first (analysis) runs first
    names = [first] + sorted(n for n in known if n != first)
    names = [n for n in names if only is None or n in only]
    skipped = []
    for name in names:
        job = f"{name}_job"
        if job not in jobs:
            skipped.append(job)
            continue
        for source in sources:
            for split in splits:
                steps.append(Step(job, str(partition_key(source, split))))
    if last >= STAGES.index("training"):
        steps += [Step("training_job", split) for split in splits]
    if last >= STAGES.index("reports"):
        steps.append(Step("reports_job"))
    return steps, skipped


def executor_instance(executor: str, home: Path):
    """The Dagster instance runs go to: the local one, or the cluster's Postgres-backed one
    (checked first: an unreachable Postgres or broker is one line naming its URL)."""
    from verilearn_assets.cli.orchestrate import instance_for_home

    if executor != "celery":
        return instance_for_home(home)
    from verilearn_assets.cli import CliError
    from verilearn_assets.core.deploy import DeployError
    from verilearn_assets.scale.celery import distributed_instance

    try:
        return distributed_instance(home)
    except DeployError as exc:
        raise CliError(f"{exc} (start the cluster with `make cluster-up`)") from exc


def log_path(home: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    path = home / "logs" / f"demo-{stamp}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 1
    while path.exists():  # two demos in the same second
        n += 1
        path = path.with_name(f"demo-{stamp}-{n}.log")
    return path


def run(args: argparse.Namespace) -> int:
    from verilearn_assets.cli import CliError
    from verilearn_assets.cli.orchestrate import job_names, run_job
    from verilearn_assets.core import lake
    from verilearn_assets.core.report import render_report
    from verilearn_assets.core.warehouse import reader, warehouse_path
    from verilearn_assets.scale.run_outcome import RunOutcome, one_line, output_to

    if args.families:
        from verilearn_assets.core.family import families

        unknown = [f for f in args.families if f not in families()]
        if unknown:
            raise CliError(f"unknown family {unknown[0]!r} (known: {', '.join(families())})")
    runner = run_job
    if args.executor == "celery":
        from verilearn_assets.scale.celery import run_job_distributed

        runner = run_job_distributed
    console = Console(soft_wrap=True)  # a reason stays on one line at any width
    home = lake.home()
    log_file = log_path(home)
    with log_file.open("w") as log:
        console.print(f"[bold]verilearn demo[/] — home {escape(str(home))}")
        console.print(f"Dagster event log: {escape(str(log_file))}")
        try:
            with output_to(log):  # loading the code location warns; keep that off the console
                instance = executor_instance(args.executor, home)
                steps, skipped = plan(
                    args.sources, args.splits, job_names(), args.stop_after, args.families
                )
        except CliError:
            raise  # a cluster that is not up: one line from main()
        except Exception as exc:  # noqa: BLE001 - reported on one line, traceback in the log
            traceback.print_exc(file=log)
            console.print(
                f"verilearn demo: the code location failed to load: {one_line(str(exc))} "
                f"(full log: {log_file})",
                markup=False,
            )
            return 1
        for job in skipped:
            console.print(f"  {job}: skipped (no such job in the code location yet)")
        failed: list[str] = []
        progress = progress_bar(console)
        with progress:
            task = progress.add_task("starting", total=len(steps))
            for step in steps:
                progress.update(task, description=escape(step.label()))
                t0 = time.perf_counter()
                try:
                    out = runner(instance, step.job, step.partition, log=log)
                except Exception as exc:  # noqa: BLE001 - one line here, traceback in the log
                    traceback.print_exc(file=log)
                    out = RunOutcome(step.job, step.partition, False, errors=[one_line(str(exc))])
                seconds = time.perf_counter() - t0
                if out.success:
                    line = f"  {escape(step.label())}: [green]ok[/] ({seconds:.1f}s)"
                    progress.console.print(line, highlight=False)
                    for reason in out.failed_checks:  # warnings of a run that succeeded
                        progress.console.print(f"    {reason}", markup=False, highlight=False)
                else:
                    failed.append(step.label())
                    first, *more = out.reasons() or ["no reason recorded"]
                    progress.console.print(
                        f"  {escape(step.label())}: [red]FAILED[/] ({seconds:.1f}s) — "
                        f"{escape(first)} (full log: {escape(str(log_file))})",
                        highlight=False,
                    )
                    for reason in more:
                        progress.console.print(f"    also: {reason}", markup=False, highlight=False)
                progress.advance(task)
        if "reports_job" in failed:
            console.print("No report: reports_job failed (see above).")
        elif any(step.job == "reports_job" for step in steps):
            try:
                with reader(warehouse_path(home)) as con:
                    render_report(Console(), con)  # tables fit the width, unlike lines above
            except Exception as exc:  # noqa: BLE001 - one line here, traceback in the log
                traceback.print_exc(file=log)
                failed.append("report")
                console.print(f"report: FAILED: {one_line(str(exc))}", markup=False)
    console.print(
        f"\n{sum(s.label() not in failed for s in steps)}/{len(steps)} runs succeeded. "
        "Open the UI on this instance with `make ui`."
    )
    if failed:
        console.print(f"Failed: {', '.join(failed)}. Full log: {log_file}", markup=False)
    return 1 if failed else 0
