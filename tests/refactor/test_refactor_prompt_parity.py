"""Refactor: the SFT prompt of a task is its evaluation / GRPO prompt, and a step ends at
`</state_update>` (`GrpoTask.stop`) in evaluation and in GRPO, single- and multi-turn.

Trajectories are the program teacher's through the real actor loop (bwrap jail); the
only doubles are scripted stand-ins for what a model says: one that memorized the SFT
rows, and GRPO turns that talk on past the end of the step.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from refactor_support import drive_actor, write_tasks

from verilearn_assets.core import lake
from verilearn_assets.core.family import SftRow
from verilearn_assets.refactor.config import load_refactor_config
from verilearn_assets.refactor.family import FAMILY
from verilearn_assets.refactor.records import TrajectoryStep
from verilearn_assets.refactor.rollout.prompts import STEP_END
from verilearn_assets.refactor.rollout.teachers import ProgramTeacher
from verilearn_assets.training.config import DEFAULT_BASE_MODEL, REPO_ROOT, TrainingConfig
from verilearn_assets.training.eval.request import EvalRequest
from verilearn_assets.training.eval.single_turn import Completion, evaluate_family, family_stop
from verilearn_assets.training.grpo.config import GrpoSettings
from verilearn_assets.training.grpo.stop import stopping_trainer, text_before_stop

TINY = REPO_ROOT / DEFAULT_BASE_MODEL
PAST_STOP = "\n<think>and one more step nobody asked for</think>\n<action>"


def _key(messages: Sequence[dict[str, Any]]) -> str:
    return json.dumps([[m["role"], m["content"]] for m in messages])


@pytest.fixture(scope="module")
def taught(small_tasks, tmp_path_factory: pytest.TempPathFactory):
    """A home with one single-step and one two-step task, the program teacher's verified
    trajectories over them, and their SFT rows (the family contract's)."""
    home = tmp_path_factory.mktemp("refactor-parity")
    single = next(
        t for t in small_tasks["procedural"] if t.status == "accepted" and len(t.rules) == 1
    )
    pair = next(t for t in small_tasks["procedural"] if len(t.rules) == 2)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERILEARN_HOME", str(home))
        write_tasks(home, [single, pair])
        extra = load_refactor_config().actors.extra_steps  # what the trajectories asset uses
        drive_actor(home, ProgramTeacher(), [single, pair], extra)
        steps = lake.read_records(
            FAMILY.rollout_lake,
            TrajectoryStep,
            lake.lake_root(home),
            source=single.source,
            split=single.split,
        )
        rows = FAMILY.sft_rows(steps)
        yield {"home": home, "single": single, "pair": pair, "steps": steps, "rows": rows}


class Memorized:
    """Stands in for a model that learned the SFT rows: asked a row's prompt it says the
    row's answer as a vLLM server returns it (cut before the stop); else nothing."""

    name = "memorized"

    def __init__(self, rows: Sequence[SftRow], stop: Sequence[str]) -> None:
        self.said = {_key(r.messages[:-1]): r.messages[-1]["content"] for r in rows}
        self.stop = list(stop)
        self.asked: list[str] = []

    def complete(self, rows: Sequence[dict[str, Any]], progress: Any = None) -> list[Completion]:
        keys = [_key(r["prompt"]) for r in rows]
        self.asked += keys
        return [Completion(text_before_stop(self.said.get(k, ""), self.stop)) for k in keys]


def test_sft_step_one_prompt_is_the_evaluation_and_grpo_prompt(taught, monkeypatch) -> None:
    home, single, pair = taught["home"], taught["single"], taught["pair"]
    monkeypatch.setenv("VERILEARN_HOME", str(home))
    step_one = {s.id for s in taught["steps"] if s.step == 1}
    first = {r.task_id: r for r in taught["rows"] if r.rollout_id in step_one}
    assert set(first) == {single.id, pair.id}
    grpo = {r["task_id"]: r["prompt"] for r in FAMILY.grpo.prompts(home, [single, pair], "default")}
    for task_id, row in first.items():
        assert row.messages[:-1] == grpo[task_id], task_id
        assert row.messages[-1]["content"].endswith(STEP_END)  # taught to end the step there

    stop = family_stop(FAMILY)
    assert stop == [STEP_END]
    source = Memorized(taught["rows"], stop)
    result = evaluate_family(
        EvalRequest(
            model="memorized",
            split=single.split,
            home=home,
            family="refactor",
            task_ids=[single.id],
            source=source,
        )
    )
    assert source.asked and all(k in source.said for k in source.asked)
    (rec,) = result.records
    assert rec.passed, rec.failure_class  # the answer cut at the stop still solves the task


def test_a_completion_past_the_step_is_cut_at_the_stop(taught) -> None:
    """Single-turn GRPO: the trainer's sampled ids end with `</state_update>`'s tokens; what
    the model said past it is dropped (ids and logprobs), so it takes no loss."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(TINY))
    answer = taught["rows"][0].messages[-1]["content"]
    said = tok.encode(answer + PAST_STOP, add_special_tokens=False)

    class Sampler:  # TRL's sampling step, scripted: what the model says
        _tokenizer = tok

        def _generate_single_turn(self, *args: Any, **kwargs: Any) -> Any:
            return [list(said)], [[-0.5] * len(said)]

    trainer = stopping_trainer(Sampler, family_stop(FAMILY))()
    (ids,), (logprobs,) = trainer._generate_single_turn()
    assert tok.decode(ids) == answer and len(ids) < len(said)
    assert len(logprobs) == len(ids)


def test_multi_turn_turns_end_at_the_stop_and_the_episode_goes_on(taught) -> None:
    """Multi-turn GRPO through the refactor environment: each turn's reply is cut after
    `</state_update>` (the tokens past it never enter the completion), the turn is closed
    by an unsampled EOS that takes no loss, and the environment judges the step (solved),
    where a reply without EOS would have ended the episode as a spent budget."""
    from transformers import AutoTokenizer

    from verilearn_assets.training.grpo.trainer import train_grpo

    home, single = taught["home"], taught["single"]
    (row,) = [r for r in taught["rows"] if r.task_id == single.id]
    answer = row.messages[-1]["content"]
    tok = AutoTokenizer.from_pretrained(str(TINY))
    past = tok.encode(answer + PAST_STOP, add_special_tokens=False)

    def talks_on(trainer: Any, prompt_ids: list[list[int]], max_new_tokens: int):
        return [past[:max_new_tokens] for _ in prompt_ids], None

    config = TrainingConfig(
        base_model=str(TINY),
        split=single.split,
        grpo=GrpoSettings(
            allow_base_fallback=True,
            multi_turn=True,
            max_steps=1,
            num_generations=2,
            per_device_train_batch_size=2,
            max_completion_length=len(past) + 8,
            cpu_threads=1,
            save_model=False,
        ),
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERILEARN_HOME", str(home))
        run = train_grpo(config, home, family="refactor", turn_generator=talks_on)
    rollouts = [json.loads(x) for x in (run.run_dir / "rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 2
    for r in rollouts:
        ids, mask = r["completion_ids"], r["loss_mask"]
        assert r["end"] == "solved" and r["stopped"] is None and r["scores"]["outcome"] == 1.0
        assert tok.decode(ids[:-1]) == answer  # cut right after the stop, nothing past it
        assert ids[-1] == tok.eos_token_id and mask[-1] == 0  # the turn's end: no loss
        assert sum(mask) == len(ids) - 1 == r["segments"][0]["tokens"]
