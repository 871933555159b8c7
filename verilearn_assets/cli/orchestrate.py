"""Run the code location's jobs in process against the instance under VERILEARN_HOME.

Shared by `verilearn demo` and `verilearn gate`, so what they materialize is exactly what
`dagster dev` shows afterwards.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from dagster import DagsterEventType, DagsterInstance


def instance_for_home(home: Path) -> DagsterInstance:
    """The persistent Dagster instance at `$DAGSTER_HOME` (default `<home>/dagster`)."""
    dagster_home = Path(os.environ.setdefault("DAGSTER_HOME", str(home / "dagster")))
    dagster_home.mkdir(parents=True, exist_ok=True)
    (dagster_home / "dagster.yaml").touch(exist_ok=True)
    return DagsterInstance.get()


@dataclass
class RunOutcome:
    job: str
    partition: str | None
    success: bool
    failed_checks: list[str] = field(default_factory=list)
    failed_steps: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def run_job(instance: DagsterInstance, job_name: str, partition: str | None = None) -> RunOutcome:
    """Execute one job (one partition) in process; collect check and step failures."""
    from verilearn_assets.definitions import defs

    job = defs.resolve_job_def(job_name)
    result = job.execute_in_process(
        instance=instance, partition_key=partition, raise_on_error=False
    )
    out = RunOutcome(job_name, partition, result.success)
    for event in result.all_events:
        if event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            ev = event.event_specific_data
            if not ev.passed:
                sev = ev.severity.value if ev.severity else "ERROR"
                out.failed_checks.append(
                    f"[{sev}] {ev.check_name} on {ev.asset_key.to_user_string()}"
                    f"{f' [{partition}]' if partition else ''}: {ev.description}"
                )
        elif event.event_type == DagsterEventType.STEP_FAILURE:
            err = event.event_specific_data.error
            msg = err.message.strip().splitlines()[0] if err else "failed"
            out.failed_steps.append(f"{event.step_key}: {msg}")
        elif event.event_type in (
            DagsterEventType.RESOURCE_INIT_FAILURE,
            DagsterEventType.RUN_FAILURE,
        ):
            err = getattr(event.event_specific_data, "error", None)
            cause = err
            while cause is not None and cause.cause is not None:
                cause = cause.cause  # the user's exception, not Dagster's wrapper
            text = (cause.message.strip() if cause else event.message) or "failed"
            out.errors.append(f"{event.event_type_value}: {text}")
    return out
