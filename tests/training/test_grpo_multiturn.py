"""Multi-turn GRPO: the analysis student loop as the environment of TRL's GRPOTrainer.

One real home (a table, a question verified in the real bubblewrap sandbox), the tiny
model, real sandbox episodes. The only double is a scripted policy standing in for what a
model says: a random-weight model never writes a python block, so a scripted reply is the
only way to see tool output fed back. One GRPO step mixes both writers in one group: the
script (turn 1 computes the mean, turn 2 submits) and the tiny model itself (TRL's own
sampling step, cut by the completion budget).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
from pathlib import Path

import pytest
from grpo_support import (
    bwrap_config_dir,
    reply,
    verified_question,
    write_question,
    write_table,
)

from verilearn_assets.analysis.family import FAMILY
from verilearn_assets.analysis.grpo import AnalysisEnvironment
from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.analysis.rollout.prompts import system_prompt
from verilearn_assets.core.family import GrpoEnvOptions, GrpoTask
from verilearn_assets.core.sandbox.config import load_sandbox_config
from verilearn_assets.core.sandbox.pool import SandboxPool
from verilearn_assets.training.config import DEFAULT_BASE_MODEL, REPO_ROOT, TrainingConfig
from verilearn_assets.training.grpo.assets import grpo_metadata
from verilearn_assets.training.grpo.config import GrpoSettings
from verilearn_assets.training.grpo.rollout import trainer_generate
from verilearn_assets.training.grpo.trainer import train_grpo

TINY = REPO_ROOT / DEFAULT_BASE_MODEL
LOOK = 'm = df["a"].mean()\nprint(m)'  # turn 1: compute and look at an intermediate
SUBMIT = 'submit(int(len(df[df["a"] > m])))'  # turn 2: uses turn 1's variable


@pytest.fixture(scope="module")
def mt_home(tmp_path_factory: pytest.TempPathFactory):
    if not (TINY / "config.json").is_file():
        pytest.fail(f"{TINY} missing: run `make tiny-model`")
    home = tmp_path_factory.mktemp("grpo-mt-home")
    table = write_table(home)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERILEARN_CONFIG_DIR", str(bwrap_config_dir(home / "configs")))

        async def verify() -> QuestionRecord:
            async with SandboxPool(load_sandbox_config()) as pool:
                return await verified_question(pool, table)

        question = asyncio.run(verify())
        write_question(home, question)
        yield home, question


def test_environment_scores_a_scripted_two_turn_episode(mt_home) -> None:
    home, q = mt_home
    env = AnalysisEnvironment(home, [q], GrpoEnvOptions(max_turns=3, max_open_episodes=3))
    try:
        right, literal, cut = env.reset(q.id), env.reset(q.id), env.reset(q.id)  # all open
        assert [m["role"] for m in right.opening] == ["system", "user"]
        # the student's own system prompt, stating this run's turn bound
        assert right.opening[0]["content"] == system_prompt(env.table_records[q.table], 3)

        feedback, done = right.step(reply(LOOK))
        assert not done and [m["role"] for m in feedback] == ["tool"]
        assert "20.0" in feedback[0]["content"]  # the sandbox's stdout, fed back
        feedback, done = right.step(reply(SUBMIT))
        assert done and "submitted: 19" in feedback[0]["content"]
        assert right.score()["outcome"] == 1.0 and right.score()["partial"] == 1.0

        # a reply without code is re-prompted as the student loop does, then the literal
        # answer (no computation from the table) earns nothing
        feedback, done = literal.step("The answer is 19.")
        assert not done and feedback[0]["role"] == "user" and "python" in feedback[0]["content"]
        _, done = literal.step(reply("submit(19)"))
        assert done and literal.score()["outcome"] == 0.0
        assert literal.record()["reason"].startswith("not_computed")

        _, done = cut.step(reply(LOOK))
        assert not done
        cut.stop("completion budget spent")
        assert cut.score()["outcome"] == 0.0 and cut.record()["end"] == "context_overflow"
        assert right.record()["assistant_turns"] == 2 and right.record()["cells"] == 2

        left = env.reset(q.id)  # still holding its slot when the environment closes
        assert not left.step(reply(LOOK))[1]
    finally:
        env.close()
    assert left.task.cancelled()


def _mixed_writer(trainer, prompt_ids: list[list[int]], max_new_tokens: int):
    """Even rollouts of a fresh batch and every rollout that already holds the script:
    the script; the others: the tiny model through TRL's sampling step."""
    tok = trainer.processing_class
    texts = [tok.decode(p) for p in prompt_ids]
    fresh = [t.count("<|im_start|>assistant") == 1 for t in texts]
    scripted = [
        (f and i % 2 == 0) or (not f and LOOK.splitlines()[0] in t)
        for i, (f, t) in enumerate(zip(fresh, texts, strict=True))
    ]
    model = [p for p, s in zip(prompt_ids, scripted, strict=True) if not s]
    generated = iter(trainer_generate(trainer, model, max_new_tokens)[0] if model else [])
    out = []
    for text, s in zip(texts, scripted, strict=True):
        if s:
            turn = text.count("<|im_start|>assistant") - 1
            ids = tok(reply(LOOK if turn == 0 else SUBMIT), add_special_tokens=False)["input_ids"]
            out.append((ids + [tok.eos_token_id])[:max_new_tokens])
        else:
            out.append(next(generated))
    return out, None


def one_step_config(**grpo) -> TrainingConfig:
    """One multi-turn step over one group of two episodes, 160 completion tokens."""
    settings = dict(
        allow_base_fallback=True,
        multi_turn=True,
        max_turns=3,
        max_steps=1,
        num_generations=2,
        per_device_train_batch_size=2,
        max_completion_length=160,
        cpu_threads=1,
        save_model=False,
    )
    return TrainingConfig(base_model=str(TINY), grpo=GrpoSettings(**{**settings, **grpo}))


def test_multi_turn_grpo_step(mt_home) -> None:
    home, q = mt_home
    config = one_step_config(learning_rate=1e-3)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERILEARN_CONFIG_DIR", str(home / "configs"))
        run = train_grpo(config, home, turn_generator=_mixed_writer)

    rollouts = [json.loads(x) for x in (run.run_dir / "rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 2 and {r["task_id"] for r in rollouts} == {q.id}
    by_turns = sorted(rollouts, key=lambda r: r["generated_turns"])
    model, script = by_turns

    # (a) the scripted rollout took two turns, the sandbox output fed back between them
    assert script["generated_turns"] == 2 and script["end"] == "submitted"
    assert [s["role"] for s in script["segments"]] == ["assistant", "feedback", "assistant"]
    tool_msgs = [m for m in script["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 2 and "20.0" in tool_msgs[0]["content"]
    assert tool_msgs[0]["content"] in script["segments"][1]["text"]
    # the model's own rollout ran through TRL's sampling and was cut by the budget
    assert model["end"] == "context_overflow" and model["stopped"]
    assert sum(model["loss_mask"]) == len(model["completion_ids"])

    # (b) tool tokens carry no loss: the masked tokens are exactly the feedback turns
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(TINY))
    for r in rollouts:
        ids, mask = r["completion_ids"], r["loss_mask"]
        assert len(ids) == len(mask)
        masked = tok.decode([t for t, m in zip(ids, mask, strict=True) if not m])
        trained = tok.decode([t for t, m in zip(ids, mask, strict=True) if m])
        fed = "".join(s["text"] for s in r["segments"] if s["role"] == "feedback")
        assert masked == fed
        for msg in (m for m in r["messages"] if m["role"] == "tool"):
            if msg["content"] in fed:
                assert msg["content"] not in trained
    ids, mask = script["completion_ids"], script["loss_mask"]
    assert "stdout:" in tok.decode([t for t, m in zip(ids, mask, strict=True) if not m])

    # (c) the environment's reward reached the trainer, and the loss saw only model tokens
    steps = [
        json.loads(x)
        for x in (run.run_dir / "metrics.jsonl").read_text().splitlines()
        if "reward" in json.loads(x)
    ]
    assert len(steps) == 1
    m = steps[0]
    assert m["rewards/outcome/mean"] == pytest.approx(
        sum(r["scores"]["outcome"] for r in rollouts) / 2
    )
    assert script["scores"]["outcome"] == 1.0 and model["scores"]["outcome"] == 0.0
    assert m["reward_std"] > 0 and m["grad_norm"] > 0 and math.isfinite(m["loss"])
    assert m["turns/multi_share"] == pytest.approx(0.5)
    # TRL counts a completion's length over its loss mask: our env_mask was applied
    assert m["completions/mean_length"] == pytest.approx(
        sum(sum(r["loss_mask"]) for r in rollouts) / 2
    )
    extra = json.loads((run.run_dir / "result.json").read_text())["extra"]
    assert extra["multi_turn"] is True and extra["rollouts"] == 2
    meta = grpo_metadata(run)  # what the Dagster asset shows
    assert meta["multi_turn"] is True and meta["last/turns/mean"] == pytest.approx(1.5)


def test_an_opening_over_the_window_ends_its_episodes_unsampled(mt_home) -> None:
    """`grpo.window` leaves the opening (system prompt with the table, the question) no
    room: nothing is generated from it, both episodes of the group end as
    context_overflow with one EOS token, score alike, and so teach nothing."""
    home, q = mt_home

    def never(trainer, prompt_ids, max_new_tokens):
        raise AssertionError("generated from an opening that does not fit the window")

    config = one_step_config(window=160 + 32)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERILEARN_CONFIG_DIR", str(home / "configs"))
        run = train_grpo(config, home, turn_generator=never)

    rollouts = [json.loads(x) for x in (run.run_dir / "rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 2 and {r["task_id"] for r in rollouts} == {q.id}
    for r in rollouts:
        assert r["end"] == "context_overflow" and "the opening is" in r["stopped"]
        assert r["generated_turns"] == 0 and len(r["completion_ids"]) == 1
        assert r["scores"]["outcome"] == 0.0
    (step,) = [
        json.loads(x)
        for x in (run.run_dir / "metrics.jsonl").read_text().splitlines()
        if "reward" in json.loads(x)
    ]
    assert step["reward_std"] == 0.0  # one group, equal scores: zero advantage
    extra = json.loads((run.run_dir / "result.json").read_text())["extra"]
    assert extra["opening_overflows"] == 2
    assert grpo_metadata(run)["opening_overflows"] == 2


def test_multi_turn_needs_an_environment(mt_home) -> None:
    home, _ = mt_home
    assert FAMILY.grpo is not None
    probe = dataclasses.replace(FAMILY, grpo=dataclasses.replace(FAMILY.grpo, environment=None))
    assert isinstance(probe.grpo, GrpoTask)
    config = TrainingConfig(
        base_model=str(TINY),
        grpo=GrpoSettings(
            allow_base_fallback=True,
            multi_turn=True,
            num_generations=2,
            per_device_train_batch_size=2,
        ),
    )
    with pytest.raises(ValueError, match="no multi-turn environment"):
        train_grpo(config, home, family=probe)


def test_feedback_tokens_and_prompt_identity() -> None:
    """The masked span is the chat template's own rendering of the tool turn, from the
    previous reply's EOS to the next generation prompt; one prompt maps to one task."""
    from transformers import AutoTokenizer

    from verilearn_assets.training.grpo.rollout import (
        MultiTurnRollout,
        feedback_ids,
        unique_prompts,
    )

    tok = AutoTokenizer.from_pretrained(str(TINY))
    fb = feedback_ids(tok, [{"role": "tool", "content": "[cell ok, 3 ms]"}])
    assert (
        tok.decode(fb) == "\n<|im_start|>tool\n[cell ok, 3 ms]<|im_end|>\n<|im_start|>assistant\n"
    )

    prompt = [{"role": "user", "content": "q"}]
    rows = [{"prompt": prompt, "task_id": "a"}, {"prompt": prompt, "task_id": "b"}]
    kept, dropped = unique_prompts(rows)
    assert [r["task_id"] for r in kept] == ["a"] and dropped == 1
    with pytest.raises(ValueError, match="same prompt"):
        MultiTurnRollout(env=None, rows=rows, max_completion_length=8, record_path=Path("x"))  # type: ignore[arg-type]
