"""The Dafny family as the platform sees it (pure: no Dagster)."""

from __future__ import annotations

from pathlib import Path

from verilearn_assets.core.contract import GateRule
from verilearn_assets.core.family import Family
from verilearn_assets.dafny import rules
from verilearn_assets.dafny.config import eval_n_best
from verilearn_assets.dafny.corpus.coverage import LAKE as COVERAGE_LAKE
from verilearn_assets.dafny.corpus.coverage import DafnyCoverageRow
from verilearn_assets.dafny.grpo import grpo_pass_rates, grpo_task
from verilearn_assets.dafny.records import DafnyTask, DafnyTrajectory
from verilearn_assets.dafny.sft import sft_rows
from verilearn_assets.dafny.verify.toolchain import tool_versions


def pass_rates(home: Path, split: str) -> dict[str, float]:
    """The GRPO curriculum hook, given this family (its lake reader)."""
    return grpo_pass_rates(FAMILY, home, split)


FAMILY = Family(
    name="dafny",
    task_asset="tasks",
    rollout_asset="trajectories",
    task_model=DafnyTask,
    rollout_model=DafnyTrajectory,
    sft_rows=sft_rows,
    description=(
        "Dafny writer (spec → body) and annotator (body → proof hints) tasks, verified by "
        "Dafny 2.3 through a jailed long-lived verifier pool"
    ),
    rules=(
        GateRule(
            "dafny_gold_reverifies",
            "tasks",
            rules.gold_reverifies,
            "a seeded sample of accepted gold programs verifies again (fresh, no cache)",
            needs_jail=True,
        ),
        GateRule(
            "dafny_one_split",
            "tasks",
            rules.one_split,
            "no program has tasks in two splits (any source)",
        ),
        GateRule(
            "dafny_no_cheat_in_targets",
            "tasks",
            rules.no_cheat_in_targets,
            "no accepted target or gold program holds assume/{:axiom}/{:verify false}/{:extern}",
        ),
        GateRule(
            "dafny_cache_agrees",
            "tasks",
            rules.cache_agrees,
            "cached verdicts of sampled gold programs equal a fresh verification",
            needs_jail=True,
        ),
        GateRule(
            "dafny_trajectories_consistent",
            "rollouts",
            rules.trajectories_consistent,
            "verified flags, rewards and task links of trajectories agree",
        ),
    ),
    task_columns=("role", "name", "status", "input_status", "mutation"),
    rollout_columns=("role", "status", "failure_bucket", "reward", "latency_ms"),
    extra={
        "lake_models": {COVERAGE_LAKE: DafnyCoverageRow},  # corpus coverage (coverage.py)
    },
    # writer, annotator, writer_cascade, annotator_frozen_writer (+ eval role cascade)
    grpo=grpo_task(pass_rates=pass_rates),
    eval_n_best=eval_n_best,  # configs/dafny.yaml eval: n_best, temperature
    tool_versions=tool_versions,  # a run on Dafny rows records the verifier's version
)
