"""The llm task source: proposals accepted only when they apply, keep the tests green and
triangulate; scripted proposals force each case, the real server shows the plumbing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml
from refactor_support import refactor_config

from verilearn_assets.refactor.rollout.prompts import load_prompts
from verilearn_assets.refactor.sources.catalog import load_corpus
from verilearn_assets.refactor.sources.llm import generate_llm_tasks, vllm_proposer

PATHCONF = [r for r in load_corpus() if r.name == "pathconf"]
EQ_NONE = {"id": "a", "language": "python", "rule": {"pattern": "$A == None"}, "fix": "$A is None"}
# the same refactoring written another way (kind + has instead of a pattern)
EQ_NONE_OTHER = {
    "id": "b",
    "language": "python",
    "rule": {"kind": "comparison_operator", "pattern": "$L == None"},
    "fix": "$L is None",
}
LIST_CALL = {"id": "c", "language": "python", "rule": {"pattern": "list()"}, "fix": "[]"}


def proposal(instruction: str | None, rule: dict | None) -> str:
    parts = []
    if instruction is not None:
        parts.append(f"<instruction>{instruction}</instruction>")
    if rule is not None:
        parts.append(f"<rule>\n{yaml.safe_dump(rule)}</rule>")
    return "\n".join(parts)


class ScriptedProposer:
    """What a model says, in order (first proposal, then the triangulation answer, …)."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = list(answers)
        self.prompts: list[list[dict]] = []

    async def __call__(self, messages: list[dict], seed: int) -> str:
        self.prompts.append(messages)
        return self.answers.pop(0)


def test_scripted_proposals_cover_accept_and_every_rejection(tmp_path: Path) -> None:
    config = refactor_config("bwrap", tmp_path)
    words = "Compare values to None with `is` instead of `==`."
    script = ScriptedProposer(
        [
            proposal(words, EQ_NONE), proposal(None, EQ_NONE_OTHER),  # accepted
            proposal("Use is None checks.", EQ_NONE), proposal(None, LIST_CALL),  # differs
            proposal(None, EQ_NONE),  # no instruction
            proposal("Make lists literal.", {"id": "d", "language": "python"}),  # bad rule
            proposal("Rename nothing.", {**LIST_CALL, "rule": {"pattern": "nope_nope()"}}),
        ]
    )  # fmt: skip
    tasks = asyncio.run(generate_llm_tasks(PATHCONF, script, load_prompts(), config, per_repo=5))
    assert script.answers == []
    accepted = [t for t in tasks if t.status == "accepted"]
    assert len(accepted) == 1
    task = accepted[0]
    assert task.source == "llm" and task.split == "test" and task.instruction == words
    assert task.files == ["pathconf/loader.py", "pathconf/validate.py"]
    reasons = sorted(t.reason.split(":")[0] for t in tasks if t.status == "rejected")
    assert reasons == ["proposal", "proposal", "step 1", "triangulation"], [t.reason for t in tasks]
    # the triangulating request saw the words but not the first rule
    second_prompt = script.prompts[1][-1]["content"]
    assert words in second_prompt and "$A == None" not in second_prompt
    assert len(tasks) == 5 and len({t.id for t in tasks}) == 5


def test_real_server_proposals_become_records(tmp_path: Path, vllm_server) -> None:  # noqa: ANN001
    from verilearn_assets.refactor.rollout.teachers import load_actors

    actor = (
        load_actors().actor("tiny-local").model_copy(update={"base_urls": [vllm_server.base_url]})
    )
    propose, close = vllm_proposer(actor)

    async def run() -> list:
        try:
            return await generate_llm_tasks(
                PATHCONF, propose, load_prompts(), refactor_config("bwrap", tmp_path), per_repo=2
            )
        finally:
            await close()

    tasks = asyncio.run(run())
    assert 1 <= len(tasks) <= 2
    for task in tasks:
        assert task.source == "llm" and task.repo == "pathconf"
        assert task.status == "accepted" or task.reason


def test_a_second_proposal_with_the_same_target_and_a_tests_only_one_are_rejected(
    tmp_path: Path,
) -> None:
    config = refactor_config("bwrap", tmp_path)
    asserts = {
        "id": "t",
        "language": "python",
        "rule": {"pattern": "self.assertEqual($A, $B)"},
        "fix": "assert $A == $B",
    }
    script = ScriptedProposer(
        [
            proposal("Compare to None with is.", EQ_NONE), proposal(None, EQ_NONE),
            proposal("Use `is None`, never `== None`.", EQ_NONE_OTHER),
            proposal(None, EQ_NONE_OTHER),  # the same target in other words
            proposal("Write assertEqual calls as asserts.", asserts), proposal(None, asserts),
        ]
    )  # fmt: skip
    tasks = asyncio.run(generate_llm_tasks(PATHCONF, script, load_prompts(), config, per_repo=3))
    first, second, tests_only = tasks
    assert first.status == "accepted" and second.target_tree == first.target_tree
    assert (second.status, second.reason) == ("rejected", f"duplicate target of task {first.id}")
    assert tests_only.status == "rejected" and tests_only.reason.startswith(
        "target only touches tests (tests/"
    )
