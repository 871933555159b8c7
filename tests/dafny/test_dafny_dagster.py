"""The Dafny assets through Dagster on a slice of the bundled corpus, with the gate.

One module-scoped run materializes template and procedural `train` partitions and their
blocking checks; the other tests read what it wrote, or tamper with a copy of it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
import yaml
from dagster import MultiPartitionKey, materialize

from resources.home import HomeResource
from resources.vllm import VllmResource
from verilearn_assets.core import lake
from verilearn_assets.core.contract import RuleContext
from verilearn_assets.core.family import family
from verilearn_assets.core.warehouse import build_model, discover_sql_models, order_models
from verilearn_assets.dafny.assets import tasks, trajectories
from verilearn_assets.dafny.checks import CHECKS
from verilearn_assets.dafny.family import FAMILY
from verilearn_assets.dafny.records import DafnyTask, DafnyTrajectory
from verilearn_assets.dafny.resources import DafnyVerifierResource
from verilearn_assets.dafny.rollout.build import run_partition
from verilearn_assets.dafny.rollout.cascade import ProgramTeacher
from verilearn_assets.dafny.rules import no_cheat_in_targets, one_split
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

REPO = Path(__file__).resolve().parents[2]
LIMIT = 6


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    home = tmp_path_factory.mktemp("dafny-home")
    (home / "dagster").mkdir()
    configs = tmp_path_factory.mktemp("configs")
    for f in (REPO / "configs").glob("*.yaml"):
        shutil.copy(f, configs / f.name)
    cfg = yaml.safe_load((REPO / "configs" / "dafny.yaml").read_text())
    cfg["corpus"]["limit"] = LIMIT
    cfg["gate"].update(reverify=2, cache_agreement=2)
    cfg["sources"]["mutants_per_example"] = 1
    (configs / "dafny.yaml").write_text(yaml.safe_dump(cfg))
    mp = pytest.MonkeyPatch()
    mp.setenv("VERILEARN_CONFIG_DIR", str(configs))
    mp.setenv("VERILEARN_HOME", str(home))
    mp.setenv("DAGSTER_HOME", str(home / "dagster"))
    results = {}
    for source in ("template", "procedural"):
        results[source] = materialize(
            [tasks, trajectories, *CHECKS],
            partition_key=MultiPartitionKey({"source": source, "split": "train"}),
            resources={
                "home": HomeResource(path=str(home)),
                "dafny": DafnyVerifierResource(),
                "vllm": VllmResource(),
            },
            raise_on_error=False,
        )
    yield {"home": home, "results": results}
    mp.undo()


def test_partitions_materialize_and_the_gate_passes(built: dict) -> None:
    for source, result in built["results"].items():
        assert result.success, source
        evals = result.get_asset_check_evaluations()
        assert {e.check_name for e in evals} == {r.name for r in FAMILY.rules}
        failed = {e.check_name: e.description for e in evals if not e.passed}
        assert failed == {}, (source, failed)


def test_template_tasks_and_trajectories(built: dict) -> None:
    home = built["home"]
    task_records = FAMILY.read_tasks(home, "template", "train")
    assert task_records and all(isinstance(t, DafnyTask) for t in task_records)
    assert {t.role for t in task_records} == {"writer", "annotator"}
    assert all(t.gold_status == "verified" for t in task_records)
    assert all(t.verifier["dafny"].startswith("2.3") for t in task_records)
    trajs = FAMILY.read_rollouts(home, "template", "train")
    accepted = [t for t in task_records if t.status == "accepted"]
    assert len(trajs) == len(accepted)
    assert all(isinstance(t, DafnyTrajectory) and t.verified and t.reward == 1.0 for t in trajs)
    stages = [s["stage"] for s in trajs[0].stages]
    assert stages[-2:] == ["annotator", "verifier"]


def test_procedural_mutants_have_recorded_verdicts(built: dict) -> None:
    records = FAMILY.read_tasks(built["home"], "procedural", "train")
    assert records and all(t.mutation for t in records)
    assert {t.input_status for t in records} <= {"verified", "verification_error", "timeout"}
    assert any(t.input_status == "verification_error" for t in records)
    accepted = [t for t in records if t.status == "accepted"]
    assert accepted and all(t.target != t.body for t in accepted)  # no copy-the-input task
    trivial = [t for t in records if t.target == t.body]
    assert all(
        t.status == "rejected" and t.rejection_reason.startswith("trivial_repair") for t in trivial
    )


def test_sft_rows_per_role(built: dict) -> None:
    trajs = FAMILY.read_rollouts(built["home"], "template", "train")
    rows = family("dafny").sft_rows(trajs)
    roles = {r.role for r in rows}
    assert roles == {"writer", "annotator"}
    writer = next(r for r in rows if r.role == "writer")
    assert writer.messages[-1]["role"] == "assistant"
    assert "```dafny" in writer.messages[-1]["content"]
    assert "Method body to annotate" not in writer.messages[-2]["content"]


def test_llm_source_without_a_server_fails_clearly(built: dict) -> None:
    result = materialize(
        [tasks],
        partition_key=MultiPartitionKey({"source": "llm", "split": "train"}),
        resources={
            "home": HomeResource(path=str(built["home"])),
            "dafny": DafnyVerifierResource(processes=1),
            "vllm": VllmResource(),
        },
        raise_on_error=False,
    )
    assert not result.success
    failure = (
        result.failure_data_for_node("dafny__tasks")
        if hasattr(result, "failure_data_for_node")
        else None
    )
    text = str(failure.error.message if failure and failure.error else result.all_events)
    assert "needs a vLLM server" in text


def test_rules_catch_a_cheat_and_a_split_leak(built: dict, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(built["home"] / "lake", home / "lake")
    records = FAMILY.read_tasks(home, "template", "train")
    first = records[0]
    assert isinstance(first, DafnyTask)
    bad = first.model_copy(update={"target": first.target.replace("{", "{ assume false;", 1)})
    lake.write_records(
        FAMILY.task_lake,
        [bad, *records[1:]],
        DafnyTask,
        lake.lake_root(home),
        source="template",
        split="train",
    )
    ctx = RuleContext(family=FAMILY, source="template", split="train", home=home)
    outcome = no_cheat_in_targets(ctx)
    assert not outcome.passed and "assume" in outcome.failures[0]
    assert first.status == "accepted"
    # the same program rejected in another split never trains: no leak
    echo = first.model_copy(
        update={"split": "dev", "id": "echo", "status": "rejected", "rejection_reason": "x"}
    )
    lake.write_records(
        FAMILY.task_lake, [echo], DafnyTask, lake.lake_root(home), source="template", split="dev"
    )
    assert one_split(ctx).passed
    leak = first.model_copy(update={"split": "dev", "id": "leak"})
    lake.write_records(
        FAMILY.task_lake, [leak], DafnyTask, lake.lake_root(home), source="template", split="dev"
    )
    outcome = one_split(ctx)
    assert not outcome.passed and first.program in outcome.failures[0]


def _build_dafny_marts(lake_root: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    models = [m for m in discover_sql_models() if "dafny" in m.name]
    assert {m.name for m in models} >= {
        "stg_dafny_tasks",
        "stg_dafny_trajectories",
        "mart_dafny_verify_rate",
        "mart_dafny_failure_buckets",
        "mart_dafny_latency",
        "mart_dafny_task_counts",
    }
    for model in order_models(models):
        build_model(con, model, lake_root)
    return con


def test_marts_over_the_lake(built: dict) -> None:
    con = _build_dafny_marts(lake.lake_root(built["home"]))
    trajs = FAMILY.read_rollouts(built["home"], "template", "train")
    rows = con.execute(
        "SELECT sum(n_trajectories), sum(n_verified) FROM mart_dafny_verify_rate "
        "WHERE source = 'template' AND construct = 'loops'"
    ).fetchone()
    looped = [t for t in trajs if "loops" in t.constructs]
    assert rows == (len(looped), sum(t.verified for t in looped))
    latency = con.execute(
        "SELECT role, n_trajectories, cascade_p50_ms FROM mart_dafny_latency "
        "WHERE source = 'template' ORDER BY role"
    ).fetchall()
    assert sum(r[1] for r in latency) == len(trajs) and all(r[2] > 0 for r in latency)
    buckets = dict(
        con.execute(
            "SELECT bucket, sum(n) FROM mart_dafny_failure_buckets "
            "WHERE what = 'task input' AND source = 'procedural' GROUP BY bucket"
        ).fetchall()
    )
    procedural = FAMILY.read_tasks(built["home"], "procedural", "train")
    assert sum(buckets.values()) == len(procedural)


def test_marts_on_an_empty_lake(tmp_path: Path) -> None:
    con = _build_dafny_marts(tmp_path / "lake")
    assert con.execute("SELECT count(*) FROM mart_dafny_task_counts").fetchone() == (0,)


class CrashingTeacher(ProgramTeacher):
    """The program teacher's answers, but the run dies after `limit` tasks."""

    def __init__(self, limit: int) -> None:
        self.limit, self.calls = limit, 0

    def annotate(self, task: DafnyTask, body: str) -> str:
        self.calls += 1
        if self.calls > self.limit:
            raise RuntimeError("teacher process died")
        return super().annotate(task, body)


def test_trajectories_resume_after_a_crash(
    built: dict, tmp_path: Path, verifier: DafnyVerifier
) -> None:
    home = tmp_path / "home"
    shutil.copytree(built["home"] / "lake" / "dafny" / "tasks", home / "lake" / "dafny" / "tasks")
    task_records = [
        t for t in FAMILY.read_tasks(home, "template", "train") if isinstance(t, DafnyTask)
    ]
    accepted = [t for t in task_records if t.status == "accepted"]
    assert len(accepted) >= 4
    with pytest.raises(RuntimeError, match="died"):
        run_partition(task_records, CrashingTeacher(3), verifier, home, "template", "train", 2)
    kept = FAMILY.read_rollouts(home, "template", "train")
    assert len(kept) == 2  # the first chunk of two was written before the crash
    records, resumed = run_partition(
        task_records, ProgramTeacher(), verifier, home, "template", "train", 2
    )
    assert resumed == 2 and len(records) == len(accepted)
    parts = list(
        lake.partition_dir(
            FAMILY.rollout_lake, lake.lake_root(home), source="template", split="train"
        ).glob("*.parquet")
    )
    assert len(parts) == 1 and len(FAMILY.read_rollouts(home, "template", "train")) == len(accepted)
