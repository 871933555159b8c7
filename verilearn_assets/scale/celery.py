"""Run a job through Dagster's Celery executor on the Postgres-backed instance.

`execute_in_process` ignores executors, so a distributed run goes through
`dagster.execute_job` with a reconstructable job: this process orchestrates (submits each
step to its Celery queue and follows the events), the workers import the same code location
and run the steps, and every event lands in the Postgres instance. The outcome has the
shape in-process runs return (`scale/run_outcome.py`).

`python -m verilearn_assets.scale.celery JOB [PARTITION]` runs one job partition
and exits non-zero with one line when the cluster is not there (Postgres or Redis down).
Concurrent runs are concurrent processes: two runs orchestrated from threads of one process
deadlock in Dagster's per-process log handlers.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, TextIO

from dagster import (
    DagsterInstance,
    Definitions,
    execute_job,
)
from dagster._core.definitions.reconstruct import ReconstructableJob, ReconstructableRepository

from verilearn_assets.core import lake
from verilearn_assets.core.deploy import (
    DeployConfig,
    DeployError,
    celery_executor_config,
    check_postgres,
    check_redis,
    load_deploy_config,
    write_instance_yaml,
)
from verilearn_assets.scale.run_outcome import RunOutcome, outcome_from_events, output_to

REPO_ROOT = Path(__file__).resolve().parents[2]


def celery_defs() -> Definitions:
    """The code location with the Celery executor from deploy.yaml, whatever
    `VERILEARN_EXECUTOR` said when `verilearn_assets.definitions` was first imported: the
    orchestrating process and every worker reconstruct jobs from this function."""
    from dagster_celery import celery_executor

    from verilearn_assets.definitions import defs

    executor = celery_executor.configured(celery_executor_config(load_deploy_config()))
    return Definitions(
        assets=defs.assets,
        asset_checks=defs.asset_checks,
        jobs=defs.jobs,
        schedules=defs.schedules,
        sensors=defs.sensors,
        resources=defs.resources,
        loggers=defs.loggers,
        metadata=defs.metadata,
        executor=executor,
    )


def distributed_instance(
    home: Path | None = None, dagster_home: Path | None = None, cfg: DeployConfig | None = None
) -> DagsterInstance:
    """The Postgres-backed instance at `$DAGSTER_HOME`, its dagster.yaml (re)generated.

    Checks Postgres and the broker first, so a cluster that is not up fails in one line
    naming the URL instead of a stack trace from deep inside a storage engine.
    """
    cfg = cfg or load_deploy_config()
    home = Path(home or lake.home())
    dagster_home = Path(dagster_home or os.environ.get("DAGSTER_HOME") or home / "dagster")
    check_postgres(cfg.postgres.url, cfg.postgres.connect_timeout_s)
    check_redis(cfg.celery.broker)
    write_instance_yaml(cfg, home, dagster_home)
    return DagsterInstance.from_config(str(dagster_home))


def reconstructable_job(job_name: str) -> ReconstructableJob:
    repo = ReconstructableRepository.for_module(
        "verilearn_assets.scale.celery", "celery_defs", working_directory=str(REPO_ROOT)
    )
    return repo.get_reconstructable_job(job_name)


def run_job_distributed(
    instance: DagsterInstance,
    job_name: str,
    partition: str | None = None,
    log: TextIO | None = None,
    run_config: dict[str, Any] | None = None,
) -> RunOutcome:
    """Execute one job (one partition) through the Celery workers; wait for its end."""
    recon = reconstructable_job(job_name)
    job_def = recon.get_definition()
    tags: dict[str, str] = {}
    if partition is not None:
        if job_def.partitions_def is None:
            raise DeployError(f"{job_name}: not partitioned, got partition {partition!r}")
        tags = dict(job_def.partitions_def.get_tags_for_partition_key(partition))
    with output_to(log):
        with execute_job(recon, instance, run_config=run_config, tags=tags) as result:
            events = list(result.all_events)
            success, run_id = result.success, result.run_id
    return outcome_from_events(job_name, partition, success, run_id, events, log)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not 1 <= len(args) <= 2:
        print(
            "usage: python -m verilearn_assets.scale.celery JOB [PARTITION]",
            file=sys.stderr,
        )
        return 2
    try:
        instance = distributed_instance()
    except DeployError as exc:
        print(f"distributed: {exc}", file=sys.stderr)
        return 2
    with instance:
        out = run_job_distributed(instance, args[0], args[1] if len(args) > 1 else None)
    where = f" [{out.partition}]" if out.partition else ""
    print(f"{out.job}{where}: {'ok' if out.success else 'FAILED'} (run {out.run_id})")
    for line in out.reasons():
        print(f"  {line}")
    return 0 if out.success else 1


if __name__ == "__main__":
    sys.exit(main())
