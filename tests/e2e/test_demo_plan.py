"""What `verilearn demo` runs, in which order, read from the code location (no runs)."""

from __future__ import annotations

from verilearn_assets.cli.demo import STAGES, Step, plan
from verilearn_assets.cli.orchestrate import job_names
from verilearn_assets.core.family import families
from verilearn_assets.core.partitions import DATASET


def test_every_dataset_partition_then_families_training_reports() -> None:
    jobs = job_names()
    steps, skipped = plan(["template"], ["dev", "test"], jobs)
    datasets = DATASET.get_partition_keys()
    assert steps[: len(datasets)] == [Step("platform_job", k) for k in datasets]
    rest = steps[len(datasets) :]
    assert rest[0] == Step("smoke_job")
    family_jobs = [s for s in rest if s.job.endswith("_job") and s.job[:-4] in families()]
    assert family_jobs[:2] == [
        Step("analysis_job", "template|dev"),
        Step("analysis_job", "template|test"),
    ]
    assert {s.job for s in family_jobs} | set(skipped) == {f"{n}_job" for n in families()}
    assert not {s.job for s in family_jobs} & set(skipped)
    assert set(skipped).isdisjoint(jobs)
    assert rest[-3:] == [
        Step("training_job", "dev"),
        Step("training_job", "test"),
        Step("reports_job"),
    ]
    assert all(s.job in jobs for s in steps)


def test_stop_after_cuts_the_plan_at_a_stage() -> None:
    jobs = job_names()
    full, _ = plan(["template"], ["dev"], jobs)
    sizes = [len(plan(["template"], ["dev"], jobs, stage)[0]) for stage in STAGES]
    assert sizes == sorted(sizes) and sizes[-1] == len(full)
    ingest, skipped = plan(["template"], ["dev"], jobs, "ingest")
    assert {s.job for s in ingest} == {"platform_job", "smoke_job"} and skipped == []
    training, _ = plan(["template"], ["dev"], jobs, "training")
    assert training[-1] == Step("training_job", "dev")


def test_families_selects_family_jobs_and_refuses_unknown_names() -> None:
    import pytest

    jobs = job_names()
    steps, _ = plan(["template"], ["dev"], jobs, only=["analysis"])
    family_jobs = {s.job for s in steps if s.job[:-4] in families()}
    assert family_jobs == {"analysis_job"}
    with pytest.raises(ValueError, match="unknown family 'nope'"):
        plan(["template"], ["dev"], jobs, only=["nope"])
