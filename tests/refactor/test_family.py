"""The refactor family through Dagster: assets, blocking checks, gate rules that can fail,
SFT rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from dagster import DagsterInstance, materialize

from resources.home import HomeResource
from verilearn_assets.core import lake
from verilearn_assets.core.contract import RuleContext
from verilearn_assets.core.family import SftRow
from verilearn_assets.core.partitions import partition_key
from verilearn_assets.refactor.assets import tasks, trajectories
from verilearn_assets.refactor.checks import CHECKS
from verilearn_assets.refactor.family import FAMILY
from verilearn_assets.refactor.records import TrajectoryStep

REPO = Path(__file__).resolve().parents[2]
SPLIT = "test"  # the pathconf repository


@pytest.fixture(scope="module")
def materialized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One template partition materialized through Dagster with its checks (two rules)."""
    root = tmp_path_factory.mktemp("family")
    home, configs = root / "home", root / "configs"
    home.mkdir()
    configs.mkdir()
    # the prompts, the jail, the corpora (datasets.yaml's `corpora:`)
    for name in ("teacher_prompts.yaml", "sandbox.yaml", "datasets.yaml"):
        shutil.copy(REPO / "configs" / name, configs)
    data = yaml.safe_load((REPO / "configs" / "refactor.yaml").read_text())
    data["generation"] = {
        "max_pairs_per_repo": 1,
        "max_function_scoped_per_repo": 1,
        "max_renames_per_repo": 1,
        "rules": ["eq-none-to-is", "list-call-to-literal"],
    }
    (configs / "refactor.yaml").write_text(yaml.safe_dump(data))
    mp = pytest.MonkeyPatch()
    mp.setenv("VERILEARN_CONFIG_DIR", str(configs))
    mp.setenv("VERILEARN_HOME", str(home))
    (home / "dagster").mkdir()
    mp.setenv("DAGSTER_HOME", str(home / "dagster"))
    try:
        for source in ("template", "procedural"):
            result = materialize(
                [tasks, trajectories, *CHECKS],
                partition_key=str(partition_key(source, SPLIT)),
                resources={"home": HomeResource(path=str(home))},
                instance=DagsterInstance.ephemeral(),
            )
            assert result.success
            evaluations = result.get_asset_check_evaluations()
            assert len(evaluations) == len(FAMILY.rules)
            failed = [e.check_name for e in evaluations if not e.passed]
            assert failed == [], [e.description for e in evaluations if not e.passed]
        yield home
    finally:
        mp.undo()


def ctx(home: Path, source: str = "template") -> RuleContext:
    return RuleContext(FAMILY, source, SPLIT, home)


def test_partitions_hold_verified_trajectories(materialized: Path) -> None:
    t = FAMILY.read_tasks(materialized, "template", SPLIT)
    steps = FAMILY.read_rollouts(materialized, "template", SPLIT)
    assert {x.rules[0] for x in t} == {"eq-none-to-is", "list-call-to-literal"}
    assert len(steps) == len(t) and all(s.verified for s in steps)
    # the generator tested each target tree already; the actor's identical tree reused it
    assert all(s.tests["cached"] for s in steps)
    proc = FAMILY.read_tasks(materialized, "procedural", SPLIT)
    assert any(len(x.rules) == 2 for x in proc)
    # a function-scoped rule and a rename went through the gate like the others
    assert any("@" in x.rules[0] for x in proc) and any(
        x.rules[0].startswith("rename-") for x in proc
    )
    assert all(x.status == "accepted" for x in proc)
    # nothing was written to another partition
    assert FAMILY.read_tasks(materialized, "template", "train") == []


def test_sft_rows_carry_the_three_block_answer(materialized: Path) -> None:
    steps = FAMILY.read_rollouts(materialized, "procedural", SPLIT)
    rows = FAMILY.sft_rows(steps)
    assert len(rows) == sum(s.verified for s in steps) > 0
    row = rows[0]
    assert isinstance(row, SftRow) and row.family == "refactor"
    assert [m["role"] for m in row.messages] == ["system", "user", "assistant"]
    answer = row.messages[-1]["content"]
    assert answer.startswith("<think>") and "<action>" in answer and "<state_update>" in answer
    assert "<state>" in row.messages[1]["content"]


def _tamper(home: Path, source: str, change) -> None:  # noqa: ANN001
    steps = FAMILY.read_rollouts(home, source, SPLIT)
    change(steps)
    lake.write_records(
        FAMILY.rollout_lake, steps, TrajectoryStep, lake.lake_root(home), source=source, split=SPLIT
    )


def test_gate_rules_catch_tampered_trajectories(materialized: Path, tmp_path: Path) -> None:
    home = tmp_path / "copy"
    shutil.copytree(materialized / "lake", home / "lake")
    rules = {r.name: r for r in FAMILY.rules}
    for rule in FAMILY.rules:  # all pass on the real data
        assert rule.evaluate(ctx(home)).passed, rule.name

    def bad_reward(steps):  # noqa: ANN001, ANN202
        steps[0].reward = 0.25

    def bad_diff(steps):  # noqa: ANN001, ANN202
        steps[0].diff_from_start = steps[0].diff_from_start.replace("is None", "== None", 1)

    def over_cap(steps):  # noqa: ANN001, ANN202
        steps[0].state_before = {**steps[0].state_before, "history": ["a", "b", "c", "d"]}

    for change, rule_name in (
        (bad_reward, "refactor_rewards_recompute"),
        (bad_diff, "refactor_steps_reproduce"),
        (over_cap, "refactor_state_caps"),
    ):
        shutil.rmtree(home / "lake")
        shutil.copytree(materialized / "lake", home / "lake")
        _tamper(home, "template", change)
        outcome = rules[rule_name].evaluate(ctx(home))
        assert not outcome.passed and outcome.failures, rule_name

    # the gate runs a sample of verified steps' tests again on a clean copy (a recorded
    # "passed" is not taken on trust): tasks whose tests cannot pass fail, naming each step
    shutil.rmtree(home / "lake")
    shutil.copytree(materialized / "lake", home / "lake")
    broken = [
        t.model_copy(update={"test_command": ["pytest", "-q", "tests/no_such_test.py"]})
        for t in FAMILY.read_tasks(home, "template", SPLIT)
    ]
    lake.write_records(
        FAMILY.task_lake,
        broken,
        FAMILY.task_model,
        lake.lake_root(home),
        source="template",
        split=SPLIT,
    )
    outcome = rules["refactor_steps_reproduce"].evaluate(ctx(home))
    assert not outcome.passed
    for step in FAMILY.read_rollouts(home, "template", SPLIT):
        assert any(step.id in f and "clean copy" in f for f in outcome.failures), step.id

    # a task copied into a second split
    shutil.rmtree(home / "lake")
    shutil.copytree(materialized / "lake", home / "lake")
    moved = FAMILY.read_tasks(home, "template", SPLIT)[:1]
    lake.write_records(
        FAMILY.task_lake,
        moved,
        FAMILY.task_model,
        lake.lake_root(home),
        source="template",
        split="dev",
    )
    outcome = rules["refactor_one_split"].evaluate(ctx(home))
    assert not outcome.passed and any("in splits ['dev', 'test']" in f for f in outcome.failures)
    schema = rules["refactor_task_schema"].evaluate(RuleContext(FAMILY, "template", "dev", home))
    assert not schema.passed  # the copy says split=test inside partition dev


def test_marts_report_precision_failures_and_latency(materialized: Path, tmp_path: Path) -> None:
    import duckdb

    from verilearn_assets.core.warehouse import build_all

    home = tmp_path / "wh"
    shutil.copytree(materialized / "lake", home / "lake")
    # one extra step by another teacher with a failure, to see the marts separate them
    steps = FAMILY.read_rollouts(home, "template", SPLIT)
    odd = steps[0].model_copy(
        update={"id": "x1", "teacher": "vllm", "model": "m", "reward": 0.0, "verified": False,
                "failure": "parse", "done": False, "sandbox_result": {}}
    )  # fmt: skip
    lake.write_records(
        FAMILY.rollout_lake, [*steps, odd], TrajectoryStep, lake.lake_root(home),
        source="template", split=SPLIT,
    )  # fmt: skip
    con = duckdb.connect(str(home / "w.duckdb"))
    build_all(con, lake.lake_root(home))
    n_program = sum(
        len(FAMILY.read_rollouts(materialized, s, SPLIT)) for s in ("template", "procedural")
    )
    precision = con.execute(
        "SELECT teacher, n_steps, n_verified, precision, parse_failures "
        "FROM mart_refactor_teacher_precision ORDER BY teacher"
    ).fetchall()
    assert precision == [("program", n_program, n_program, 1.0, 0), ("vllm", 1, 0, 0.0, 1)]
    failures = con.execute("SELECT teacher, failure, n_steps FROM mart_refactor_failure_classes")
    assert failures.fetchall() == [("vllm", "parse", 1)]
    verified = con.execute(
        "SELECT source, n_verified FROM mart_refactor_verified_steps WHERE teacher = 'program' "
        "ORDER BY source"
    ).fetchall()
    assert [s for s, _ in verified] == ["procedural", "template"]
    assert sum(n for _, n in verified) == n_program
    p50, p90, sandbox = con.execute(
        "SELECT actor_p50_ms, actor_p90_ms, sandbox_p50_ms FROM mart_refactor_actor_latency "
        "WHERE teacher = 'program'"
    ).fetchone()
    assert 0 < p50 <= p90 and sandbox > 0
    tasks = con.execute("SELECT count(*), min(matches) FROM stg_refactor_tasks").fetchone()
    assert tasks[0] > 0 and tasks[1] >= 1


def test_grpo_pass_rates_count_verified_steps_per_rule(materialized: Path) -> None:
    from verilearn_assets.refactor.grpo import group

    rates = FAMILY.grpo.pass_rates(materialized, SPLIT)
    tasks = [*FAMILY.read_tasks(materialized, "template", SPLIT)]
    tasks += FAMILY.read_tasks(materialized, "procedural", SPLIT)
    assert set(rates) == {group(t) for t in tasks if t.status == "accepted"}
    assert "eq-none-to-is" in rates and any("+" in g for g in rates)
    assert all(r == 1.0 for r in rates.values())  # the program teacher verifies every step
    assert FAMILY.grpo.pass_rates(materialized, "train") == {}
