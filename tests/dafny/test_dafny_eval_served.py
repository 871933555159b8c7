"""Dafny writer evaluation through the family contract (`verilearn eval --family dafny`):
prompts from the family's GRPO hook, completions from a model, verdicts and the writer
metrics (exact match, BLEU-4, functional coverage) from the real Dafny verifier, records in
the lake and `mart_model_pass_rate` grouped by family and role.

The tiny random-weight model goes through the real vLLM server; a scripted completion
source stands in for what a model says when the answer must be known (gold vs wrong body).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from verilearn_assets.cli import main
from verilearn_assets.core import lake
from verilearn_assets.core.eval_records import EVAL_ASSET, ModelEvalRecord
from verilearn_assets.core.warehouse import build_all, reader, warehouse_path, writer
from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.sources.template import NOTHING_TO_ANNOTATE, template_tasks
from verilearn_assets.dafny.verify.verifier import DafnyVerifier
from verilearn_assets.training.eval.config import EvalSettings
from verilearn_assets.training.eval.evaluator import evaluate_model
from verilearn_assets.training.eval.request import EvalRequest
from verilearn_assets.training.eval.single_turn import Completion

SPLIT = "dev"
# Abs and Max3 need no proof hints (their gold body verifies alone); Multiply needs its
# loop invariant, so no body without hints is covered
NAMES = ("abs_max.Abs", "abs_max.Max3", "multiply.Multiply")


@pytest.fixture(scope="module")
def writer_tasks(verifier: DafnyVerifier) -> list[DafnyTask]:
    ex = [e for e in load_bundled() if e.name in NAMES]
    tasks = template_tasks(ex, split_examples(ex), verifier)
    # Abs and Max3 verify without hints: no annotator task (it would copy the input)
    rejected = {(t.name, t.role): t.rejection_reason for t in tasks if t.status == "rejected"}
    assert rejected == {(n, "annotator"): NOTHING_TO_ANNOTATE for n in NAMES[:2]}
    return [t.model_copy(update={"split": SPLIT}) for t in tasks if t.status == "accepted"]


def _write_tasks(home: Path, tasks: list[DafnyTask], names: Sequence[str]) -> list[DafnyTask]:
    chosen = [t for t in tasks if t.name in names]
    root = lake.lake_root(home)
    lake.write_records("dafny/tasks", chosen, DafnyTask, root, source="template", split=SPLIT)
    return [t for t in chosen if t.role == "writer"]


def _mart(home: Path, model: str) -> list[tuple[Any, ...]]:
    db = warehouse_path(home)
    with writer(db, 60) as con:
        build_all(con, lake.lake_root(home))
    with reader(db, 60) as con:
        return con.execute(
            "SELECT family, role, template_family, n_questions, n_passed, pass_rate, "
            "exact_match_rate, mean_bleu, covered_rate FROM mart_model_pass_rate "
            "WHERE model = ? AND source = '(all)'",
            [model],
        ).fetchall()


@pytest.mark.vllm
def test_tiny_model_scores_zero_on_writer_tasks(
    home: Path, writer_tasks: list[DafnyTask], vllm_server: Any, capsys: pytest.CaptureFixture
) -> None:
    writers = _write_tasks(home, writer_tasks, NAMES)
    seen: list[tuple[int, int]] = []
    result = evaluate_model(
        EvalRequest(
            model=vllm_server.model,
            split=SPLIT,
            home=home,
            family="dafny",
            role="writer",
            settings=EvalSettings(max_tokens=32),
            served=vllm_server.config(max_concurrency=1),
            progress=lambda done, total: seen.append((done, total)),
        )
    )
    assert seen[-1] == (len(writers), len(writers))
    assert result.n == len(writers) and result.n_passed == 0 and result.pass_rate == 0.0
    assert (result.family, result.role) == ("dafny", "writer")
    for r in result.records:
        assert (r.family, r.role, r.split, r.n_turns) == ("dafny", "writer", SPLIT, 1)
        assert not r.passed and r.failure_class and r.failure_class != "verified"
        assert r.extra["status"] == r.failure_class and r.extra["outcome"] == 0.0
        assert r.extra["exact_match"] is False and 0.0 <= r.extra["bleu"] < 1.0
        assert r.prompt_tokens > 0 and r.completion_tokens > 0 and r.latency_ms > 0

    stored = lake.read_records(EVAL_ASSET, ModelEvalRecord, lake.lake_root(home), split=SPLIT)
    assert sorted(r.question_id for r in stored) == sorted(t.id for t in writers)
    rows = _mart(home, vllm_server.model)
    overall = [r for r in rows if r[2] == "(all)"]
    assert [r[:6] for r in overall] == [("dafny", "writer", "(all)", len(writers), 0, 0.0)]
    assert overall[0][6] == 0.0 and overall[0][7] < 1.0

    assert main(["report", "--models", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "# mart_model_pass_rate" in out and ",dafny,writer," in out


class Scripted:
    """Stands in for what a model says: a fixed reply per task id."""

    name = "scripted"

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies

    def complete(self, rows: Sequence[dict[str, Any]], progress: Any = None) -> list[Completion]:
        return [Completion(self.replies[r["task_id"]], completion_tokens=1) for r in rows]


def test_gold_bodies_pass_and_a_wrong_body_fails_with_its_status(
    home: Path, writer_tasks: list[DafnyTask]
) -> None:
    writers = _write_tasks(home, writer_tasks, NAMES[:2])  # the two hint-free methods
    gold = Scripted({t.id: "Here:\n" + prompts.fenced(t.body) for t in writers})

    def run(model: str, source: Scripted, ids: list[str] | None = None) -> Any:
        return evaluate_model(
            EvalRequest(
                model=model,
                split=SPLIT,
                home=home,
                family="dafny",
                role="writer",
                source=source,
                task_ids=ids,
            )
        )

    result = run("scripted-gold", gold)
    assert result.n == len(writers) == result.n_passed
    for r in result.records:
        assert r.failure_class is None and r.extra["status"] == "verified"
        assert r.extra["exact_match"] is True and r.extra["covered"] is True
        assert r.extra["bleu"] == pytest.approx(1.0)
    assert result.extra_means()["mean_bleu"] == pytest.approx(1.0)

    abs_task = next(t for t in writers if t.name == "abs_max.Abs")
    max_task = next(t for t in writers if t.name == "abs_max.Max3")
    # Abs: a body that is wrong for x < 0. Max3: nothing but a comment, which would leave
    # the method bodiless, which Dafny 2.3 accepts unproven: no `{ … }` block is no body,
    # never a pass (the tiny model found that hole by answering with newlines)
    wrong = Scripted({abs_task.id: prompts.fenced("{\n  y := x;\n}"), max_task.id: "// done\n\n"})
    bad = {r.question_id: r for r in run("scripted-wrong", wrong).records}
    r = bad[abs_task.id]
    assert not r.passed and r.failure_class == "verification_error"
    assert r.extra["exact_match"] is False and r.extra["covered"] is False
    assert 0.0 < r.extra["bleu"] < 1.0
    r = bad[max_task.id]
    assert not r.passed and r.failure_class == "no_body" and r.extra["outcome"] == 0.0

    root = lake.lake_root(home)

    def stored() -> list[ModelEvalRecord]:
        return lake.read_records(EVAL_ASSET, ModelEvalRecord, root, split=SPLIT)  # type: ignore

    before = sorted(r.model_dump_json() for r in stored())
    assert len(before) == 2 * len(writers)  # both models side by side
    run("scripted-gold", gold)  # a re-run replaces only its own records: the same lake
    assert sorted(r.model_dump_json() for r in stored()) == before

    rows = {r[0:3]: r[3:] for r in _mart(home, "scripted-gold")}
    n, passed, rate, exact, bleu, covered = rows[("dafny", "writer", "(all)")]
    assert (n, passed, rate, exact, covered) == (len(writers), len(writers), 1.0, 1.0, 1.0)
    assert bleu == pytest.approx(1.0)
    wrong_row = {r[0:3]: r[3:] for r in _mart(home, "scripted-wrong")}
    n, passed, rate, exact, bleu, covered = wrong_row[("dafny", "writer", "(all)")]
    assert (n, passed, rate, exact, covered) == (2, 0, 0.0, 0.0, 0.0)


class ScriptedCascade:
    """Stands in for a model in both cascade turns: it answers the writer prompt and the
    annotator prompt (told apart by their system message) from fixed replies per task."""

    name = "scripted"

    def __init__(self, writer: dict[str, str], annotator: dict[str, str]) -> None:
        self.replies = {"writer": writer, "annotator": annotator}
        self.asked: list[str] = []

    def complete(self, rows: Sequence[dict[str, Any]], progress: Any = None) -> list[Completion]:
        out = []
        for r in rows:
            system = r["prompt"][0]["content"]
            role = "annotator" if system == prompts.SYSTEM["annotator"] else "writer"
            self.asked.append(role)
            out.append(Completion(self.replies[role][r["task_id"]], completion_tokens=2))
        return out


def test_cascade_writer_then_annotator(home: Path, writer_tasks: list[DafnyTask]) -> None:
    writers = {t.name: t for t in _write_tasks(home, writer_tasks, NAMES)}
    mult, absw = writers["multiply.Multiply"], writers["abs_max.Abs"]
    source = ScriptedCascade(
        writer={mult.id: prompts.fenced(mult.body), absw.id: "\n\n"},  # Abs: no body
        annotator={mult.id: prompts.fenced(mult.annotated_body), absw.id: "{ }"},
    )
    result = evaluate_model(
        EvalRequest(
            model="scripted-cascade",
            split=SPLIT,
            home=home,
            family="dafny",
            role="cascade",
            source=source,
            task_ids=[mult.id, absw.id],
        )
    )
    assert source.asked == ["writer", "writer", "annotator", "annotator"]
    by_task = {r.question_id: r for r in result.records}
    ok, hollow = by_task[mult.id], by_task[absw.id]
    # the hint-free writer body verifies only once the annotator adds the invariant
    assert ok.passed and ok.role == "cascade" and ok.extra["writer_exact_match"] is True
    assert ok.completion_tokens == 4 and ok.extra["first_turn"] == prompts.fenced(mult.body)
    assert ok.n_turns == 2
    assert not hollow.passed and hollow.failure_class == "no_body"
    rows = {r[0:3]: r[3:6] for r in _mart(home, "scripted-cascade")}
    assert rows[("dafny", "cascade", "(all)")] == (2, 1, 0.5)
