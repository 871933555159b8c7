"""What one job run came to: failed checks, failed steps and run errors, one line each.

Read from the run's Dagster events, whoever executed it: the in-process runs of
`cli/orchestrate.py` and the Celery runs of `scale/celery.py` report the same shape, so
`verilearn demo` prints either the same way. It lives here, below the CLI, so the Celery
runner needs nothing from the CLI.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TextIO

from dagster import DagsterEventType

# "package.module.SomeError: message" → "message": the class path says nothing to a reader.
_CLASS_PREFIX = re.compile(r"^(?:[A-Za-z_][\w]*\.)+[A-Za-z_]\w*:\s*")


@dataclass
class RunOutcome:
    job: str
    partition: str | None
    success: bool
    failed_checks: list[str] = field(default_factory=list)
    failed_steps: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    run_id: str = ""

    def reasons(self) -> list[str]:
        return self.failed_checks + self.failed_steps + self.errors


@contextlib.contextmanager
def output_to(log: TextIO | None) -> Iterator[None]:
    """Send Python-level stdout and stderr (Dagster's console logger included) to `log`."""
    if log is None:
        yield
        return
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        yield
    log.flush()


def _innermost(err):  # SerializableErrorInfo: the user's exception, not Dagster's wrapper
    while err is not None and err.cause is not None:
        err = err.cause
    return err


def one_line(text: str | None, default: str = "failed") -> str:
    """The first line of an error message, without the exception's class path."""
    lines = (text or "").strip().splitlines()
    return _CLASS_PREFIX.sub("", lines[0]).strip() if lines else default


_STEP_ENDS = (
    DagsterEventType.STEP_SUCCESS,
    DagsterEventType.STEP_FAILURE,
    DagsterEventType.STEP_SKIPPED,
    DagsterEventType.STEP_UP_FOR_RETRY,
)


def outcome_from_events(
    job_name: str,
    partition: str | None,
    success: bool,
    run_id: str,
    events: list,
    log: TextIO | None = None,
) -> RunOutcome:
    """Failed checks, failed steps and run errors of a run, one line each."""
    out = RunOutcome(job_name, partition, success, run_id=run_id)
    where = f" [{partition}]" if partition else ""
    in_flight: dict[str, None] = {}  # started, not ended: what a run-level failure cut off
    for event in events:
        kind = event.event_type
        if kind == DagsterEventType.STEP_START:
            in_flight[event.step_key] = None
        elif kind in _STEP_ENDS:
            in_flight.pop(event.step_key, None)
        if kind == DagsterEventType.ASSET_CHECK_EVALUATION:
            ev = event.event_specific_data
            if not ev.passed:
                sev = ev.severity.value if ev.severity else "ERROR"
                out.failed_checks.append(
                    f"[{sev}] {ev.check_name} on {ev.asset_key.to_user_string()}{where}: "
                    f"{ev.description}"
                )
        elif kind == DagsterEventType.STEP_FAILURE:
            data = event.event_specific_data
            user = getattr(data, "user_failure_data", None)
            text = user.description if user is not None and user.description else None
            err = _innermost(data.error)
            out.failed_steps.append(f"{event.step_key}: {text or one_line(err and err.message)}")
        elif kind in (DagsterEventType.RESOURCE_INIT_FAILURE, DagsterEventType.RUN_FAILURE):
            if kind == DagsterEventType.RUN_FAILURE and out.failed_steps:
                continue
            err = _innermost(getattr(event.event_specific_data, "error", None))
            cut = f" (steps in flight: {', '.join(in_flight)})" if in_flight else ""
            what = "run failed" if kind == DagsterEventType.RUN_FAILURE else "resources failed"
            out.errors.append(f"{what}: {one_line(err.message if err else event.message)}{cut}")
    if log is not None:
        print(f"=== {job_name}{where}: {'ok' if success else 'FAILED'} (run {run_id})", file=log)
        for line in out.reasons():
            print(f"===   {line}", file=log)
        log.flush()
    return out
