"""Run the code location's jobs in process against the instance under VERILEARN_HOME.

Shared by `verilearn demo` and `verilearn gate`, so what they materialize is exactly what
`dagster dev` shows afterwards. With a log file, everything a run writes (Dagster's DEBUG
event stream, warnings, stack traces) goes there and the caller keeps the console for one
line per run. What a run came to (`RunOutcome`) is read from its events in
`scale/run_outcome.py`, shared with the Celery runner.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from dagster import DagsterInstance

from verilearn_assets.scale.run_outcome import RunOutcome, outcome_from_events, output_to

if TYPE_CHECKING:
    from dagster import Definitions


def instance_for_home(home: Path) -> DagsterInstance:
    """The persistent Dagster instance at `$DAGSTER_HOME` (default `<home>/dagster`)."""
    dagster_home = Path(os.environ.setdefault("DAGSTER_HOME", str(home / "dagster")))
    dagster_home.mkdir(parents=True, exist_ok=True)
    (dagster_home / "dagster.yaml").touch(exist_ok=True)
    return DagsterInstance.get()


@functools.cache
def code_location() -> Definitions:
    """The merged Definitions, loaded once per process (every run reuses them)."""
    from verilearn_assets.definitions import defs

    return defs


def job_names() -> set[str]:
    return {job.name for job in code_location().resolve_all_job_defs()}


def run_job(
    instance: DagsterInstance,
    job_name: str,
    partition: str | None = None,
    log: TextIO | None = None,
) -> RunOutcome:
    """Execute one job (one partition) in process; collect check and step failures."""
    with output_to(log):
        job = code_location().resolve_job_def(job_name)
        result = job.execute_in_process(
            instance=instance, partition_key=partition, raise_on_error=False
        )
    return outcome_from_events(
        job_name, partition, result.success, result.run_id, list(result.all_events), log
    )
