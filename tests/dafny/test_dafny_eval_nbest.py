"""n-best lists, diffs against gold and verifier logs per evaluation
(`training/eval/single_turn.py`), on the real verifier: the greedy completion stays the pass@1
verdict; every candidate lands in `<home>/evals/<model>/<family>-<role>-<split>.jsonl`.

The tiny random-weight model goes through the real vLLM server; a scripted source stands
in for what a model says when the answers must be known.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from verilearn_assets.core import lake
from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.sources.template import NOTHING_TO_ANNOTATE, template_tasks
from verilearn_assets.dafny.verify.verifier import DafnyVerifier
from verilearn_assets.training.eval.config import EvalSettings
from verilearn_assets.training.eval.request import EvalRequest
from verilearn_assets.training.eval.single_turn import Completion, evaluate_family, gold_diff

SPLIT = "dev"


@pytest.fixture(scope="module")
def tasks(verifier: DafnyVerifier) -> list[DafnyTask]:
    ex = [e for e in load_bundled() if e.name in ("abs_max.Abs", "multiply.Multiply")]
    out = template_tasks(ex, split_examples(ex), verifier)
    # Abs verifies without hints: no annotator task (it would ask to copy the input)
    assert [t.rejection_reason for t in out if t.status == "rejected"] == [NOTHING_TO_ANNOTATE]
    return [t.model_copy(update={"split": SPLIT}) for t in out if t.status == "accepted"]


def _store(home: Path, tasks: list[DafnyTask]) -> dict[str, DafnyTask]:
    root = lake.lake_root(home)
    lake.write_records("dafny/tasks", tasks, DafnyTask, root, source="template", split=SPLIT)
    return {t.name: t for t in tasks if t.role == "annotator"}


def _details(home: Path, path: str) -> dict[str, dict[str, Any]]:
    lines = (home / path).read_text().splitlines()
    return {e["task_id"]: e for e in map(json.loads, lines)}


class ScriptedSamples:
    """Stands in for a model: sample k answers `replies[k][task_id]`; k = 0 is greedy."""

    def __init__(self, replies: list[dict[str, str]], k: int = 0) -> None:
        self.replies, self.k = replies, k
        self.name = "scripted"

    def sampled(self, k: int, temperature: float) -> ScriptedSamples:
        assert temperature == 0.7
        return ScriptedSamples(self.replies, k)

    def complete(self, rows: Sequence[dict[str, Any]], progress: Any = None) -> list[Completion]:
        return [Completion(self.replies[self.k][r["task_id"]], completion_tokens=3) for r in rows]


def test_n_best_keeps_greedy_verdict_diffs_and_logs(home: Path, tasks) -> None:
    ann = _store(home, tasks)
    mult = ann["multiply.Multiply"]
    weak = mult.annotated_body.replace("invariant p == a * i", "invariant p == 0")
    source = ScriptedSamples(
        [
            {mult.id: prompts.fenced(weak)},  # greedy: a wrong invariant
            {mult.id: "no idea"},  # sample 1: no block
            {mult.id: "Here:\n" + prompts.fenced(mult.annotated_body)},  # sample 2: gold
        ]
    )
    result = evaluate_family(
        EvalRequest(
            model="scripted-nbest",
            split=SPLIT,
            home=home,
            family="dafny",
            role="annotator",
            task_ids=[mult.id],
            source=source,
            n_best=3,
            n_best_temperature=0.7,
        )
    )
    (rec,) = result.records
    assert not rec.passed and rec.failure_class == "verification_error"  # pass@1: greedy
    assert (rec.extra["n_best"], rec.extra["n_best_passed"], rec.extra["pass_at_n"]) == (3, 1, True)
    assert "verifier_log" not in rec.extra and "gold" not in rec.extra  # logs: the file
    entry = _details(home, rec.extra["details_file"])[mult.id]
    assert rec.extra["details_file"].startswith("evals/scripted-nbest/")
    assert (entry["passed"], entry["pass_at_n"], entry["n_best"]) == (False, True, 3)
    greedy, none, gold = entry["candidates"]
    assert [c["k"] for c in entry["candidates"]] == [0, 1, 2]
    assert greedy["status"] == "verification_error" and not greedy["passed"]
    assert "-    invariant p == a * i" in greedy["diff"]
    assert "+    invariant p == 0" in greedy["diff"]
    assert "Error" in greedy["verifier_log"] and greedy["verifier_errors"]
    assert greedy["verifier_errors"][0]["line"] > 0
    assert none["status"] == "no_body" and "verifier_log" not in none
    assert gold["passed"] and gold["status"] == "verified" and gold["diff"] == ""
    assert gold_diff("a\nb", "a\nc").splitlines()[-2:] == ["-b", "+c"]

    # a re-run rewrites the file, it does not append
    evaluate_family(
        EvalRequest(
            model="scripted-nbest",
            split=SPLIT,
            home=home,
            family="dafny",
            role="annotator",
            task_ids=[mult.id],
            source=source,
        )
    )
    again = _details(home, rec.extra["details_file"])[mult.id]
    assert again["n_best"] == 1 and len(again["candidates"]) == 1  # configs/dafny.yaml eval


@pytest.mark.vllm
def test_tiny_model_n_best_through_vllm(home: Path, tasks, vllm_server: Any) -> None:
    ann = _store(home, tasks)
    ids = sorted(t.id for t in ann.values())
    result = evaluate_family(
        EvalRequest(
            model=vllm_server.model,
            split=SPLIT,
            home=home,
            family="dafny",
            role="annotator",
            task_ids=ids,
            settings=EvalSettings(max_tokens=24),
            served=vllm_server.config(max_concurrency=1),
            n_best=2,
        )
    )
    assert result.n == len(ids) and result.n_passed == 0
    details = _details(home, result.records[0].extra["details_file"])
    assert sorted(details) == ids
    for rec in result.records:
        entry = details[rec.question_id]
        greedy, sampled = entry["candidates"]
        assert greedy["text"] == rec.answer and greedy["status"] == rec.failure_class
        assert sampled["k"] == 1 and sampled["completion_tokens"] > 0
        assert not entry["pass_at_n"] and rec.extra["n_best"] == 2
        assert greedy["diff"].startswith("--- gold")  # random text is no gold body
    # sampled at the family's temperature with another seed: not the greedy text
    assert any(e["candidates"][0]["text"] != e["candidates"][1]["text"] for e in details.values())
