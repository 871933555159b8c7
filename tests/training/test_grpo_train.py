"""`train_grpo` on the tiny random-weight model: 2 steps against the real sandbox rewards,
and 2 steps with a reward that accepts one completion per group (weights must move)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch
from grpo_support import (
    FirstOfGroupScorer,
    bwrap_config_dir,
    tensors,
    verified_question,
    write_question,
    write_table,
)

from verilearn_assets.analysis.family import FAMILY
from verilearn_assets.core.family import GrpoTask
from verilearn_assets.core.llm.tokens import HfChatCounter
from verilearn_assets.core.sandbox.config import load_sandbox_config
from verilearn_assets.core.sandbox.pool import SandboxPool
from verilearn_assets.training.config import DEFAULT_BASE_MODEL, REPO_ROOT, TrainingConfig
from verilearn_assets.training.grpo.assets import grpo_metadata
from verilearn_assets.training.grpo.config import GrpoSettings
from verilearn_assets.training.grpo.trainer import (
    NoGrpoTasks,
    NoStartModel,
    order_rows,
    resolve_start,
    train_grpo,
)

TINY = REPO_ROOT / DEFAULT_BASE_MODEL


def tiny_config(**grpo) -> TrainingConfig:
    settings = dict(
        allow_base_fallback=True,
        max_steps=2,
        num_generations=4,
        per_device_train_batch_size=4,
        max_completion_length=16,
        learning_rate=1e-3,
        cpu_threads=1,
    )
    return TrainingConfig(base_model=str(TINY), grpo=GrpoSettings(**{**settings, **grpo}))


@pytest.fixture(scope="module")
def grpo_home(tmp_path_factory: pytest.TempPathFactory):
    if not (TINY / "config.json").is_file():
        pytest.fail(f"{TINY} missing: run `make tiny-model`")
    home = tmp_path_factory.mktemp("grpo-home")
    table = write_table(home)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERILEARN_CONFIG_DIR", str(bwrap_config_dir(home / "configs")))
        import asyncio

        async def verify():
            async with SandboxPool(load_sandbox_config()) as pool:
                return await verified_question(pool, table)

        write_question(home, asyncio.run(verify()))
        yield home


@pytest.fixture(scope="module")
def orm_prm(grpo_home: Path) -> dict:
    """The ORM-vs-PRM experiment, 2 steps per arm on the real sandbox rewards (one run
    serves both the run-directory tests and the experiment's)."""
    from verilearn_assets.training.grpo.experiment import load_experiment, run_experiment

    return run_experiment(load_experiment(), grpo_home, base=tiny_config(), max_steps=2)


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_two_steps_on_real_rewards(grpo_home: Path, orm_prm: dict) -> None:
    run_dir = Path(orm_prm["arms"]["orm"]["run_dir"])
    assert run_dir.parent == grpo_home / "runs"
    for name in ("config.yaml", "seeds.json", "system.json", "metrics.jsonl", "result.json"):
        assert (run_dir / name).is_file(), name
    steps = [r for r in _metrics(run_dir) if "reward" in r]
    assert len(steps) == 2
    for r in steps:
        for key in (
            "reward",
            "reward_std",
            "kl",
            "loss",
            "rewards/outcome/mean",
            "rewards/outcome/std",
            "rewards/partial/mean",
            "rewards/partial/std",
        ):
            assert key in r and math.isfinite(r[key]), key
        assert 0.0 <= r["rewards/partial/mean"] <= 1.0
    result = json.loads((run_dir / "result.json").read_text())
    assert result["kind"] == "grpo-orm" and result["steps"] == 2
    assert result["extra"]["start"] == "base"
    assert result["final_loss"] is not None and math.isfinite(result["final_loss"])
    assert result["extra"]["scored_batches"] == 2  # one sandbox scoring per batch, not per reward
    assert {p.name for p in (run_dir / "plots").glob("*.png")} >= {"rewards.png", "loss.png"}
    # a random model writes no python block in 16 tokens, so it earns nothing: every group's
    # rewards are equal, the advantages zero, and the policy must not move (the converse,
    # a non-zero advantage moving the weights, is test_one_success_per_group_...)
    assert all(r["rewards/partial/mean"] == 0.0 and r["reward_std"] == 0.0 for r in steps)
    before, after = tensors(TINY), tensors(run_dir / "model")
    assert set(before) == set(after)
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_one_success_per_group_moves_the_weights(grpo_home: Path) -> None:
    assert FAMILY.grpo is not None
    probe = dataclasses.replace(
        FAMILY, grpo=GrpoTask(prompts=FAMILY.grpo.prompts, scorer=FirstOfGroupScorer)
    )
    run = train_grpo(tiny_config(beta=0.0), grpo_home, family=probe)
    steps = [
        r
        for r in (
            json.loads(x) for x in run.run_dir.joinpath("metrics.jsonl").read_text().splitlines()
        )
        if "reward" in r
    ]
    assert [r["rewards/partial/mean"] for r in steps] == [0.25, 0.25]  # 1 of 4 per group
    assert all(r["reward_std"] > 0 for r in steps)
    before, after = tensors(TINY), tensors(run.model_dir)
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed, "a non-zero advantage must change the weights"


def test_lora_policy_is_merged_when_saved(grpo_home: Path) -> None:
    assert FAMILY.grpo is not None
    probe = dataclasses.replace(
        FAMILY, grpo=GrpoTask(prompts=FAMILY.grpo.prompts, scorer=FirstOfGroupScorer)
    )
    run = train_grpo(tiny_config(lora=True, max_steps=1), grpo_home, family=probe)
    assert not list(run.model_dir.glob("adapter_*"))  # a plain model dir vLLM can serve
    before, after = tensors(TINY), tensors(run.model_dir)
    assert set(before) == set(after)
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_a_prompt_over_the_window_is_compressed_or_the_run_refused(grpo_home: Path) -> None:
    """`grpo.window` just under what the prompt and a completion need: the run trains on
    the prompt compressed (table statistics dropped) and says so in result.json; a window
    nothing fits in refuses the run, naming the overflow, before any model loads."""
    assert FAMILY.grpo is not None
    probe = dataclasses.replace(
        FAMILY, grpo=dataclasses.replace(FAMILY.grpo, scorer=FirstOfGroupScorer)
    )
    from verilearn_assets.training.grpo.trainer import load_tasks

    tasks = load_tasks(FAMILY, grpo_home, "train", None)
    (row,) = FAMILY.grpo.prompts(grpo_home, tasks, "default")
    needed = HfChatCounter(TINY).count_chat(row["prompt"]) + 16  # max_completion_length
    run = train_grpo(tiny_config(window=needed - 10, max_steps=1), grpo_home, family=probe)
    budget = run.result.extra["prompt_budget"]
    assert budget["window"] == needed - 10 and budget["prompts"] == 1
    assert budget["compressed"] == 1 and budget["dropped_context_overflow"] == 0
    assert budget["tokens_removed"]["table"] >= 10
    assert budget["longest_prompt_tokens"] <= needed - 10 - 16
    assert run.steps == 1
    meta = grpo_metadata(run)  # what the Dagster asset shows
    assert meta["prompts_compressed"] == 1 and meta["prompts_dropped_context_overflow"] == 0

    with pytest.raises(NoGrpoTasks, match="1 dropped as context_overflow"):
        train_grpo(tiny_config(window=64, max_steps=1), grpo_home, family=probe)


def test_start_model_refuses_without_sft_and_takes_the_latest(tmp_path: Path) -> None:
    strict = tiny_config(allow_base_fallback=False)
    with pytest.raises(NoStartModel, match="no successful SFT run"):
        resolve_start(strict, tmp_path)
    for run_id in ("sft-20260101T000000-aaaaaa", "sft-20260102T000000-bbbbbb"):
        model = tmp_path / "runs" / run_id / "model"
        model.mkdir(parents=True)
        (model.parent / "result.json").write_text(
            json.dumps(
                {
                    "run_id": run_id,
                    "kind": "sft",
                    "model_dir": str(model),
                    "merged": True,
                    "base_model": str(TINY),
                    "steps": 1,
                    "final_loss": 1.0,
                    "train_seconds": 1.0,
                }
            )
        )
    start = resolve_start(strict, tmp_path)
    assert (start.kind, start.sft_run_id) == ("sft", "sft-20260102T000000-bbbbbb")


def test_curriculum_orders() -> None:
    rows = [
        {"task_id": "a", "difficulty": 2.0, "group": "g1"},
        {"task_id": "b", "difficulty": 0.0, "group": "g2"},
        {"task_id": "c", "difficulty": 1.0, "group": "g1"},
    ]
    assert [r["task_id"] for r in order_rows(rows, "none")] == ["a", "b", "c"]
    assert [r["task_id"] for r in order_rows(rows, "easy_to_hard")] == ["b", "c", "a"]
    rates = {"g1": 0.9, "g2": 0.1}
    assert [r["task_id"] for r in order_rows(rows, "pass_rate", rates)] == ["c", "a", "b"]


def test_settings_refuse_partial_groups() -> None:
    with pytest.raises(ValueError, match="multiple of num_generations"):
        GrpoSettings(num_generations=3, per_device_train_batch_size=4)


def test_orm_vs_prm_experiment_writes_both_curves(orm_prm: dict) -> None:
    from verilearn_assets.training.grpo.experiment import load_experiment

    summary = orm_prm
    assert set(summary["arms"]) == {"orm", "prm"}
    saved = json.loads((Path(summary["dir"]) / "summary.json").read_text())
    assert saved["arms"] == summary["arms"] and Path(saved["curves_plot"]).is_file()
    keys, weights = {}, {}
    for arm, info in summary["arms"].items():
        steps = [r for r in _metrics(Path(info["run_dir"])) if "reward" in r]
        keys[arm] = {k for r in steps for k in r}
        assert info["steps"] == 2 and [r["step"] for r in steps] == [1, 2]  # max_steps each
        assert info["outcome_last"] == steps[-1]["rewards/outcome/mean"]
        result = json.loads((Path(info["run_dir"]) / "result.json").read_text())
        weights[arm] = result["extra"]["reward_weights"]
        # the trained reward is the weighted sum of the arm's own reward functions
        for r in steps:
            total = sum(w * r[f"rewards/{n}/mean"] for n, w in weights[arm].items())
            assert r["reward"] == pytest.approx(total, abs=1e-6)
    assert "rewards/process/mean" in keys["prm"] and "rewards/process/mean" not in keys["orm"]
    assert "rewards/outcome/mean" in keys["orm"] & keys["prm"]
    prm = load_experiment().arms["prm"].set["grpo.process_weight"]
    assert weights["orm"] == {"outcome": 0.0, "partial": 1.0}
    assert weights["prm"] == {"outcome": 0.0, "partial": 1.0, "process": prm}


class _Interrupted(RuntimeError):
    """Stands in for a killed process: raised from the progress callback."""


def test_checkpoints_every_save_steps_and_resume_from_the_latest(grpo_home: Path) -> None:
    """Killed at step 2 with save_steps 1, the run resumes from checkpoint-1 in its own
    directory and ends at the weights an uninterrupted run reaches."""
    assert FAMILY.grpo is not None
    probe = dataclasses.replace(
        FAMILY, grpo=GrpoTask(prompts=FAMILY.grpo.prompts, scorer=FirstOfGroupScorer)
    )
    config = tiny_config(beta=0.0, max_steps=3, save_steps=1, save_total_limit=None)
    before = {p.name for p in (grpo_home / "runs").glob("grpo-*")}

    def killed_at_2(step: int, total: int, logs: dict) -> None:
        if step == 2 and "loss" in logs:
            raise _Interrupted("killed")

    with pytest.raises(_Interrupted):
        train_grpo(config, grpo_home, family=probe, progress=killed_at_2)
    (run_dir,) = [p for p in (grpo_home / "runs").glob("grpo-*") if p.name not in before]
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("checkpoint-*")) == [
        "checkpoint-1"
    ]
    assert not (run_dir / "result.json").exists()
    assert {r["step"] for r in _metrics(run_dir)} == {1, 2}  # step 2 logged, never saved

    seen: list[int] = []
    run = train_grpo(
        tiny_config(max_steps=1),  # ignored: a resumed run keeps its own config.yaml
        grpo_home,
        family=probe,
        resume="latest",
        progress=lambda step, total, logs: seen.append(step) if "loss" in logs else None,
    )
    assert run.run_dir == run_dir and run.steps == 3 and seen == [2, 3]
    assert [r["step"] for r in _metrics(run_dir) if "loss" in r] == [1, 2, 3]  # no repeats
    names = {p.name for p in (run_dir / "checkpoints").glob("checkpoint-*")}
    assert names == {"checkpoint-1", "checkpoint-2", "checkpoint-3"}
    with pytest.raises(ValueError, match=f"run {run_dir.name} finished"):
        train_grpo(config, grpo_home, family=probe, resume=run_dir.name)
    with pytest.raises(ValueError, match="no unfinished grpo run with a checkpoint"):
        train_grpo(config, grpo_home, family=probe, resume="latest")

    straight = train_grpo(config.model_copy(deep=True), grpo_home, family=probe)
    resumed, uninterrupted = tensors(run.model_dir), tensors(straight.model_dir)
    assert any(not torch.equal(tensors(TINY)[k], resumed[k]) for k in resumed)
    assert all(torch.allclose(resumed[k], uninterrupted[k], atol=1e-6) for k in resumed)


class _RecordingScorer(FirstOfGroupScorer):
    """FirstOfGroupScorer that keeps every text it was asked to judge."""

    seen: list[str] = []

    def score(self, task_ids, completions) -> list[dict[str, float]]:
        type(self).seen.extend(completions)
        return super().score(task_ids, completions)


def test_stop_cut_keeps_the_stop_tokens_and_nothing_after() -> None:
    from transformers import AutoTokenizer

    from verilearn_assets.training.grpo.stop import cut_ids_at_stop, text_before_stop

    tok = AutoTokenizer.from_pretrained(str(TINY))
    text = "x := 1;\n```\nmethod Extra() {}"
    ids = tok.encode(text, add_special_tokens=False)
    stop = ["\n```\n", "\nmethod "]
    cut = cut_ids_at_stop(ids, tok.decode, stop)
    assert tok.decode(cut).startswith("x := 1;\n```\n") and len(cut) < len(ids)
    assert text_before_stop(tok.decode(cut[:-1]), stop) == tok.decode(cut[:-1])  # shortest
    assert text_before_stop(text, stop) == "x := 1;"
    assert cut_ids_at_stop(ids, tok.decode, ["never"]) == ids


def test_family_stop_sequences_end_rollouts_in_loss_and_reward(grpo_home: Path) -> None:
    """Same seed, with and without stop sequences: with them, every completion the scorer
    sees is the stop-free run's text cut before its first stop, and the completions the
    loss covers are shorter."""
    assert FAMILY.grpo is not None
    stop = [" ", "e", "a"]
    runs = {}
    for name, family_stop in (("free", None), ("stopped", lambda: stop)):
        _RecordingScorer.seen = []
        probe = dataclasses.replace(
            FAMILY,
            grpo=GrpoTask(prompts=FAMILY.grpo.prompts, scorer=_RecordingScorer, stop=family_stop),
        )
        run = train_grpo(tiny_config(max_steps=1, save_model=False), grpo_home, family=probe)
        (step,) = [r for r in _metrics(run.run_dir) if "reward" in r]
        runs[name] = (list(_RecordingScorer.seen), step["completions/mean_length"])
    (free, free_len), (stopped, stopped_len) = runs["free"], runs["stopped"]
    assert len(free) == len(stopped) == 4
    from verilearn_assets.training.grpo.stop import text_before_stop

    assert stopped == [text_before_stop(t, stop) for t in free]
    assert any(s != f for s, f in zip(stopped, free, strict=True))  # a stop was hit
    assert stopped_len < free_len
