"""The Dafny GRPO roles with a frozen partner (`dafny/grpo.py`), on the real verifier:

- `annotator_frozen_writer`: annotator prompts carry the frozen writer's bodies (the
  program teacher's gold bodies by default, here also a scripted writer); an answer that
  rewrites the shown code scores 0 (`code_changed`);
- `writer_cascade`: the writer's body is annotated by a frozen annotator, then verified;
  reward = `cascade_reward`;
- one GRPO step of `writer_cascade` through the generic trainer on the tiny model.

The only double is a scripted policy standing in for what the frozen model says.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from verilearn_assets.core import lake
from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.family import FAMILY
from verilearn_assets.dafny.grpo import (
    ANNOTATOR_FROZEN_WRITER,
    CODE_CHANGED,
    WRITER_CASCADE,
    GoldHintAnnotator,
    grpo_task,
)
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.rewards import WRITER_ONLY_CREDIT
from verilearn_assets.dafny.sources.template import NOTHING_TO_ANNOTATE, template_tasks
from verilearn_assets.dafny.verify.verifier import DafnyVerifier
from verilearn_assets.training.config import DEFAULT_BASE_MODEL, REPO_ROOT, TrainingConfig
from verilearn_assets.training.grpo.config import GrpoSettings
from verilearn_assets.training.grpo.trainer import train_grpo

LOOP = "p := p + a;\n    i := i + 1;"
SWAPPED = "i := i + 1;\n    p := p + a;"  # same result, other code: p == a * i still holds


class ScriptedModel:
    """Stands in for what a frozen model says: fixed replies keyed by task id (writer) or
    by the body it is asked to annotate (annotator); it records every request."""

    name = "scripted"

    def __init__(self, writes: dict[str, str] | None = None, notes: dict[str, str] | None = None):
        self.writes = writes or {}
        self.notes = notes or {}
        self.asked: list[str] = []

    def write(self, task: DafnyTask) -> str:
        self.asked.append(f"write:{task.id}")
        return "Sure.\n" + prompts.fenced(self.writes[task.id])

    def annotate(self, task: DafnyTask, body: str) -> str:
        self.asked.append(f"annotate:{body}")
        return prompts.fenced(self.notes.get(body.strip(), body))


@pytest.fixture(scope="module")
def tasks(verifier: DafnyVerifier) -> list[DafnyTask]:
    ex = [e for e in load_bundled() if e.name in ("multiply.Multiply", "abs_max.Abs")]
    out = template_tasks(ex, split_examples(ex), verifier)
    # Abs verifies without hints: its annotator task would ask to copy the input
    rejected = {(t.name, t.role): t.rejection_reason for t in out if t.status == "rejected"}
    assert rejected == {("abs_max.Abs", "annotator"): NOTHING_TO_ANNOTATE}
    return [t.model_copy(update={"split": "train"}) for t in out]


def _writer(tasks: list[DafnyTask], name: str) -> DafnyTask:
    return next(t for t in tasks if t.role == "writer" and t.name == name)


def test_annotator_prompts_come_from_the_frozen_writer(home: Path, tasks) -> None:
    mult, absw = _writer(tasks, "multiply.Multiply"), _writer(tasks, "abs_max.Abs")
    swapped = mult.body.replace(LOOP, SWAPPED)
    assert swapped != mult.body
    writer = ScriptedModel(writes={mult.id: swapped, absw.id: "// nothing to say"})
    hook = grpo_task(frozen_writer=writer)
    rows = hook.prompts(home, tasks, ANNOTATOR_FROZEN_WRITER)
    # Abs's frozen body is no `{ … }` block: no annotation can save it, so no prompt
    assert [r["task_id"] for r in rows] == [mult.id]
    user = rows[0]["prompt"][-1]["content"]
    assert rows[0]["prompt"][0]["content"] == prompts.SYSTEM["annotator"]
    assert swapped.strip() in user and mult.body.strip() not in user
    assert sorted(writer.asked) == sorted([f"write:{mult.id}", f"write:{absw.id}"])

    annotated = mult.annotated_body.replace(LOOP, SWAPPED)
    scorer = hook.scorer(home, tasks, ANNOTATOR_FROZEN_WRITER)
    try:
        said = [
            prompts.fenced(annotated),  # the hints on the frozen writer's code
            prompts.fenced(mult.annotated_body),  # the gold program: not the code it was shown
            prompts.fenced(swapped),  # no hints: the loop does not verify
            "I cannot.",  # no block
        ]
        good, rewrote, bare, none = scorer.evaluate([mult.id] * 4, said)
        assert (good["outcome"], good["partial"], good["status"]) == (1.0, 1.0, "verified")
        assert (rewrote["outcome"], rewrote["status"]) == (0.0, CODE_CHANGED)
        assert bare["outcome"] == 0.0 and bare["status"] == "verification_error"
        assert 0.0 < bare["partial"] < 1.0 and "Error" in bare["verifier_log"]
        assert (none["outcome"], none["status"]) == (0.0, "no_body")
        # the memo: the scorer did not ask the frozen writer again
        assert len(writer.asked) == 2
    finally:
        scorer.close()


def test_default_frozen_writer_is_the_program_teacher(home: Path, tasks) -> None:
    """configs/dafny.yaml's default (`frozen_writer: program`): the gold bodies."""
    assert FAMILY.grpo is not None
    rows = FAMILY.grpo.prompts(home, tasks, ANNOTATOR_FROZEN_WRITER)
    writers = {t.id: t for t in tasks if t.role == "writer"}
    assert sorted(r["task_id"] for r in rows) == sorted(writers)
    for r in rows:
        assert writers[r["task_id"]].body.strip() in r["prompt"][-1]["content"]


def test_writer_cascade_rewards(home: Path, tasks) -> None:
    mult = _writer(tasks, "multiply.Multiply")
    wrong = mult.body.replace("p := p + a;", "p := p + a + 1;")
    wrong_annotated = mult.annotated_body.replace("p := p + a;", "p := p + a + 1;")
    annotator = ScriptedModel(
        notes={
            mult.body.strip(): mult.annotated_body,  # a good annotator on the gold body
            wrong.strip(): wrong_annotated,  # the same hints on a wrong body
            # an annotator that swaps in the gold code for a body it does not like
            mult.body.replace("i := i + 1;", "i := i + 2;").strip(): mult.annotated_body,
        }
    )
    hook = grpo_task(frozen_annotator=annotator)
    rows = hook.prompts(home, tasks, WRITER_CASCADE)
    assert rows[0]["prompt"][0]["content"] == prompts.SYSTEM["writer"]
    scorer = hook.scorer(home, tasks, WRITER_CASCADE)
    try:
        said = [
            prompts.fenced(mult.body),
            prompts.fenced(wrong),
            "no code",
            prompts.fenced(mult.body.replace("p := 0;", "p := 0;\n  assume false;")),
            prompts.fenced(mult.body.replace("i := i + 1;", "i := i + 2;")),
        ]
        good, bad, none, cheat, swapped = scorer.evaluate([mult.id] * 5, said)
        assert (good["outcome"], good["partial"], good["exact_match"]) == (1.0, 1.0, True)
        assert bad["outcome"] == 0.0 and bad["partial"] == WRITER_ONLY_CREDIT
        assert bad["status"] == "verification_error"
        assert (none["outcome"], none["partial"], none["status"]) == (0.0, 0.0, "no_body")
        assert (cheat["outcome"], cheat["partial"], cheat["status"]) == (0.0, 0.0, "cheat")
        # the annotator's gold code is discarded: the writer's own body is what is verified
        assert swapped["annotator_changed_code"] is True and swapped["outcome"] == 0.0
        asked = [a for a in annotator.asked if a.startswith("annotate:")]
        assert len(asked) == 3  # never asked about an answer with no body, or a cheat
        assert scorer.score([mult.id], said[:1]) == [{"outcome": 1.0, "partial": 1.0}]
    finally:
        scorer.close()


def test_program_annotator_hints_only_the_gold_body(tasks) -> None:
    mult = _writer(tasks, "multiply.Multiply")
    ann = GoldHintAnnotator()
    assert prompts.answer(ann.annotate(mult, mult.body)) == mult.annotated_body.strip()
    other = mult.body.replace(LOOP, SWAPPED)
    assert prompts.answer(ann.annotate(mult, other)) == other.strip()


def test_one_grpo_step_of_writer_cascade_through_the_generic_trainer(home: Path, tasks) -> None:
    tiny = REPO_ROOT / DEFAULT_BASE_MODEL
    if not (tiny / "config.json").is_file():
        pytest.fail(f"{tiny} missing: run `make tiny-model`")
    lake.write_records(
        "dafny/tasks", tasks, DafnyTask, lake.lake_root(home), source="template", split="train"
    )
    annotator = ScriptedModel()  # returns the body as written: no hints
    probe = dataclasses.replace(FAMILY, grpo=grpo_task(frozen_annotator=annotator))
    config = TrainingConfig(
        base_model=str(tiny),
        grpo=GrpoSettings(
            allow_base_fallback=True,
            max_steps=1,
            num_generations=2,
            per_device_train_batch_size=2,
            max_completion_length=12,
            cpu_threads=1,
            save_model=False,
        ),
    )
    run = train_grpo(config, home, family=probe, role=WRITER_CASCADE)
    assert run.result.extra["role"] == WRITER_CASCADE and run.steps == 1
    metrics = [json.loads(x) for x in (run.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert any("rewards/partial/mean" in m for m in metrics)
    # a random-weight model writes no `{ … }` body: the annotator is never asked, reward 0
    assert not [a for a in annotator.asked if a.startswith("annotate:")]
    assert all(m.get("reward", 0.0) == 0.0 for m in metrics if "reward" in m)
