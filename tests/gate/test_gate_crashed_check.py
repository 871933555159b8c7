"""A blocking check that crashed (planned, never evaluated) keeps the gate shut and says
so, and the same check passing opens it (a real Dagster instance and run)."""

from __future__ import annotations

from dagster import (
    AssetCheckResult,
    DagsterInstance,
    StaticPartitionsDefinition,
    asset,
    asset_check,
    materialize,
)

from verilearn_assets.gate.training_gate import check_evidence

PARTS = StaticPartitionsDefinition(["p"])


@asset(partitions_def=PARTS)
def thing() -> int:
    return 1


@asset_check(asset=thing, blocking=True, name="sound", partitions_def=PARTS)
def crashes() -> AssetCheckResult:
    raise RuntimeError("the check crashed")


@asset_check(asset=thing, blocking=True, name="sound", partitions_def=PARTS)
def passes() -> AssetCheckResult:
    return AssetCheckResult(passed=True)


def test_a_crashed_check_blocks_and_a_passing_rerun_opens() -> None:
    with DagsterInstance.ephemeral() as instance:
        run = materialize([thing, crashes], partition_key="p", instance=instance,
                          raise_on_error=False)  # fmt: skip
        assert not run.success
        found, considered = check_evidence(instance, [crashes.check_key], ["p"])
        assert considered == ["p"]
        assert [e.reason() for e in found] == [
            "check sound on thing [p]: never evaluated (or its latest run did not finish it)"
        ]
        assert materialize([thing, passes], partition_key="p", instance=instance).success
        found, considered = check_evidence(instance, [passes.check_key], ["p"])
        assert considered == ["p"] and [e.status for e in found] == ["passed"]
        assert found[0].reason() is None and found[0].evaluation_run_id is not None
