"""A run-level failure (the executor losing its broker, a crashed orchestrator) names the
steps it cut off, so the one line a user reads says what to re-run."""

from __future__ import annotations

from dagster import DagsterEvent, DagsterEventType
from dagster._core.events import JobFailureData, StepSuccessData
from dagster._utils.error import SerializableErrorInfo

from verilearn_assets.scale.run_outcome import outcome_from_events

BROKER_DOWN = SerializableErrorInfo(
    "redis.exceptions.ConnectionError: Error 111 connecting to 127.0.0.1:6390. "
    "Connection refused.\n",
    [],
    "ConnectionError",
)


def event(kind: DagsterEventType, step: str | None = None, data: object = None) -> DagsterEvent:
    return DagsterEvent(
        event_type_value=kind.value,
        job_name="analysis_job",
        step_key=step,
        event_specific_data=data,
        message="",
    )


def test_run_failure_names_the_steps_still_in_flight() -> None:
    events = [
        event(DagsterEventType.STEP_START, "analysis__questions"),
        event(DagsterEventType.STEP_SUCCESS, "analysis__questions", StepSuccessData(1.0)),
        event(DagsterEventType.STEP_START, "analysis__episodes"),
        event(DagsterEventType.RUN_FAILURE, None, JobFailureData(error=BROKER_DOWN)),
    ]
    out = outcome_from_events("analysis_job", "template|dev", False, "r1", events)
    assert out.reasons() == [
        "run failed: Error 111 connecting to 127.0.0.1:6390. Connection refused. "
        "(steps in flight: analysis__episodes)"
    ]


def test_run_failure_after_every_step_ended_names_none() -> None:
    events = [
        event(DagsterEventType.STEP_START, "analysis__questions"),
        event(DagsterEventType.STEP_SUCCESS, "analysis__questions", StepSuccessData(1.0)),
        event(DagsterEventType.RUN_FAILURE, None, JobFailureData(error=BROKER_DOWN)),
    ]
    (line,) = outcome_from_events("analysis_job", None, False, "r1", events).reasons()
    assert "in flight" not in line and "Connection refused" in line
