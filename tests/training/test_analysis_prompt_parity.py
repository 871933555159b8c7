"""Analysis: an SFT row asks what evaluation and GRPO ask (role `default`), under changed
prompts (teacher_prompts.yaml `analysis:` with `hints: off` and `few_shot: 1`).

The SFT row comes from the teacher's partition run (program teacher, real bubblewrap
sandbox) through the family contract. Evaluation is the student loop as
`analysis.evaluation` configures it (`student_config`, the examples of `question_shots`);
a scripted policy that memorized the row stands in for the served model (what a model
says): asked exactly the row's conversation it gives the row's next reply, so the episode
verifies only if every prompt and tool output matches (run times in ms aside). GRPO's
multi-turn opening is the environment's; its single-turn prompt differs only in the turn
bound (one cell).
"""

from __future__ import annotations

import asyncio

import pytest
import yaml
from grpo_support import bwrap_config_dir, verified_question, write_question, write_table

from verilearn_assets.analysis.evaluation import student_config
from verilearn_assets.analysis.family import FAMILY
from verilearn_assets.analysis.grpo import AnalysisEnvironment, question_shots
from verilearn_assets.analysis.records import Episode, Message, QuestionRecord
from verilearn_assets.analysis.rollout.config import load_teacher_config
from verilearn_assets.analysis.rollout.loop import run_episode
from verilearn_assets.analysis.rollout.policy import PolicyReply, chat_messages
from verilearn_assets.analysis.rollout.prompts import system_prompt
from verilearn_assets.analysis.rollout.runner import policy_factory, run_partition
from verilearn_assets.core import lake
from verilearn_assets.core.family import GrpoEnvOptions, SftRow
from verilearn_assets.core.sandbox.config import load_sandbox_config
from verilearn_assets.core.sandbox.pool import SandboxPool
from verilearn_assets.training.eval.config import EvalSettings
from verilearn_assets.training.eval.single_turn import family_stop


@pytest.fixture(scope="module")
def parity(tmp_path_factory: pytest.TempPathFactory):
    """A home with a verified train question, a solved example on another table (the
    few-shot pool), changed analysis prompts, and the SFT row of the teacher's episode."""
    home = tmp_path_factory.mktemp("analysis-parity")
    table = write_table(home)
    configs = bwrap_config_dir(home / "configs")
    prompts_file = configs / "teacher_prompts.yaml"
    data = yaml.safe_load(prompts_file.read_text())
    data["analysis"] = {**(data.get("analysis") or {}), "hints": False, "few_shot": 1}
    prompts_file.write_text(yaml.safe_dump(data))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERILEARN_CONFIG_DIR", str(configs))
        mp.setenv("VERILEARN_HOME", str(home))
        teacher = load_teacher_config()
        assert teacher.prompts.few_shot == 1 and not teacher.prompts.hints

        async def build() -> tuple[QuestionRecord, list[Episode]]:
            async with SandboxPool(load_sandbox_config()) as pool:
                q = await verified_question(pool, table)
                # a solved example on another table: what few_shot shows (train split only)
                example = q.model_copy(update={"id": "example-" + q.id, "table": "other"})
                write_question(home, q)
                lake.append_part(
                    "analysis/questions",
                    QuestionRecord.to_frame([example]),
                    lake.lake_root(home),
                    source=q.source,
                    split=q.split,
                )
                run = await run_partition(
                    [q],
                    {table.id: table},
                    policy_factory(teacher),
                    pool,
                    teacher,
                    source=q.source,
                    split=q.split,
                    root=lake.lake_root(home),
                )
                assert run.verified == 1 and not run.errors, run.errors
            episodes = FAMILY.read_rollouts(home, q.source, q.split)
            return q, episodes  # type: ignore[return-value]

        question, episodes = asyncio.run(build())
        (row,) = FAMILY.sft_rows(episodes)
        yield {"home": home, "table": table, "question": question, "row": row}


def _same(a: list[dict[str, str]], b: list[dict[str, str]]) -> bool:
    """Equal conversations, byte for byte: a tool output shows no run time and no object
    address, so the same cells render the same messages in the SFT row and in evaluation."""

    def plain(ms: list[dict[str, str]]) -> list[tuple[str, str]]:
        return [(m["role"], m["content"]) for m in ms]

    return plain(a) == plain(b)


class Memorized:
    """Stands in for a model that learned one SFT row: asked the row's conversation up to
    one of its replies, it says that reply; asked anything else, it says nothing useful."""

    name = "memorized"

    def __init__(self, row: SftRow) -> None:
        self.messages = row.messages
        self.asked: list[list[dict[str, str]]] = []

    async def next_message(self, conversation: list[Message]) -> PolicyReply:
        asked = chat_messages(conversation)
        self.asked.append(asked)
        nxt = self.messages[len(asked)] if len(asked) < len(self.messages) else None
        if _same(self.messages[: len(asked)], asked) and nxt and nxt["role"] == "assistant":
            return PolicyReply(nxt["content"])
        return PolicyReply("(not a prompt I was trained on)")


def test_sft_row_is_what_evaluation_asks_turn_by_turn(parity, monkeypatch) -> None:
    monkeypatch.setenv("VERILEARN_CONFIG_DIR", str(parity["home"] / "configs"))
    home, table, q, row = parity["home"], parity["table"], parity["question"], parity["row"]
    assert row.role == "default" and family_stop(FAMILY) == []  # no stop: one reply, EOS
    assert "Solved examples" in row.messages[1]["content"]  # few_shot reached the row
    cfg = student_config(EvalSettings(), load_teacher_config(), "memorized")
    shots = question_shots(home, cfg)  # what `evaluate_model` shows each question
    policy = Memorized(row)

    async def evaluate() -> Episode:
        async with SandboxPool(load_sandbox_config()) as pool:
            return await run_episode(q, table, policy, pool, cfg, examples=shots(q))

    episode = asyncio.run(evaluate())
    assert policy.asked[0] == row.messages[:2]  # the first turn: system and task
    assert episode.verified, episode.failure_class  # and every later turn matched too


def test_sft_row_opens_what_grpo_asks(parity, monkeypatch) -> None:
    monkeypatch.setenv("VERILEARN_CONFIG_DIR", str(parity["home"] / "configs"))
    home, table, q, row = parity["home"], parity["table"], parity["question"], parity["row"]
    env = AnalysisEnvironment(home, [q], GrpoEnvOptions(None, 1))
    try:
        episode = env.reset(q.id)
        assert episode.opening == row.messages[:2]  # multi-turn GRPO: the same opening
        episode.stop("test over")
    finally:
        env.close()
    (single,) = FAMILY.grpo.prompts(home, [q], "default")
    prompts = load_teacher_config().prompts
    assert single["prompt"] == [  # single-turn GRPO: one cell, the same task message
        {"role": "system", "content": system_prompt(table, 1, prompts)},
        row.messages[1],
    ]
