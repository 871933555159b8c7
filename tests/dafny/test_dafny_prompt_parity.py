"""Dafny SFT rows ask what evaluation and GRPO ask, per role, and teach the model to stop
where evaluation stops it.

The prompts come from a changed configs/dafny_prompts.yaml (other system texts, the
permissive variant): SFT rows that ignored the file (the old `variant`-only rows) would
train on a prompt evaluation never sends. The "model" is a scripted source that has
memorized the SFT rows: asked a prompt, it says the row's target as a vLLM server returns
it (cut before the first stop sequence); asked any other prompt, it says nothing. Through
the real evaluator and verifier it must pass every writer, annotator and cascade task.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from verilearn_assets.core import lake
from verilearn_assets.core.family import SftRow
from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.family import FAMILY
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.rollout.cascade import ProgramTeacher, cascade_sample, trajectory
from verilearn_assets.dafny.sources.template import template_tasks
from verilearn_assets.dafny.verify.verifier import DafnyVerifier
from verilearn_assets.training.eval.request import EvalRequest
from verilearn_assets.training.eval.single_turn import Completion, evaluate_family, family_stop
from verilearn_assets.training.grpo.stop import text_before_stop

REPO = Path(__file__).resolve().parents[2]
SPLIT = "train"
NAMES = ("multiply.Multiply", "power.ComputePow")


@pytest.fixture(scope="module")
def parity_home(tmp_path_factory: pytest.TempPathFactory, verifier: DafnyVerifier):
    """Configs with changed Dafny prompts, accepted writer and annotator tasks in the lake,
    and the SFT rows of their program-teacher trajectories (the family contract's)."""
    root = tmp_path_factory.mktemp("parity")
    home, configs = root / "home", root / "configs"
    home.mkdir()
    shutil.copytree(REPO / "configs", configs)
    data = yaml.safe_load((configs / "dafny_prompts.yaml").read_text())
    data["variant"] = "permissive"
    data["system"] = {role: f"PARITY {role}: {text}" for role, text in data["system"].items()}
    (configs / "dafny_prompts.yaml").write_text(yaml.safe_dump(data))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERILEARN_CONFIG_DIR", str(configs))
        mp.setenv("VERILEARN_HOME", str(home))
        ex = [e for e in load_bundled() if e.name in NAMES]
        tasks = [
            t.model_copy(update={"split": SPLIT})
            for t in template_tasks(ex, split_examples(ex), verifier)
            if t.status == "accepted"
        ]
        assert {t.role for t in tasks} == {"writer", "annotator"}
        root_ = lake.lake_root(home)
        lake.write_records("dafny/tasks", tasks, DafnyTask, root_, source="template", split=SPLIT)
        teacher = ProgramTeacher()
        trajs = [trajectory(t, teacher, cascade_sample(t, teacher, verifier)) for t in tasks]
        assert all(t.verified for t in trajs)
        rows = FAMILY.sft_rows(trajs)
        yield home, tasks, rows


class Memorized:
    """Stands in for a model that learned the SFT rows by heart (what a model says)."""

    name = "memorized"

    def __init__(self, rows: Sequence[SftRow], stop: Sequence[str]) -> None:
        self.said = {_key(r.messages[:-1]): r.messages[-1]["content"] for r in rows}
        self.stop = list(stop)
        self.asked: list[list[dict[str, Any]]] = []

    def complete(self, rows: Sequence[dict[str, Any]], progress: Any = None) -> list[Completion]:
        self.asked += [r["prompt"] for r in rows]
        return [
            Completion(text_before_stop(self.said.get(_key(r["prompt"]), ""), self.stop))
            for r in rows
        ]


def _key(messages: Sequence[dict[str, Any]]) -> tuple[tuple[str, str], ...]:
    return tuple((m["role"], m["content"]) for m in messages)


def test_sft_prompts_are_the_evaluation_prompts_of_every_role(parity_home) -> None:
    home, tasks, rows = parity_home
    stop = family_stop(FAMILY)
    assert stop == prompts.load_prompt_config().stop  # what evaluation and GRPO send
    by_role = {role: [r for r in rows if r.role == role] for role in ("writer", "annotator")}
    writers = [t for t in tasks if t.role == "writer"]
    assert len(by_role["writer"]) == len(writers)  # one writer row per writer task
    for row in rows:  # the changed yaml reached the SFT prompt
        assert row.messages[0]["content"].startswith(f"PARITY {row.role}: ")
        assert row.messages[0]["content"].endswith(prompts.load_prompt_config().permissive_suffix)
    grpo_writer = {r["task_id"]: r["prompt"] for r in FAMILY.grpo.prompts(home, tasks, "writer")}
    for row in by_role["writer"]:
        assert row.messages[:-1] == grpo_writer[row.task_id]

    for role in ("writer", "annotator", "cascade"):
        source = Memorized(rows, stop)
        result = evaluate_family(
            EvalRequest(
                model="memorized", split=SPLIT, home=home, family="dafny", role=role, source=source
            )
        )
        assert result.n > 0 and source.asked
        assert all(_key(p) in source.said for p in source.asked), role  # every prompt taught
        assert result.n_passed == result.n, (role, [r.failure_class for r in result.records])


def test_sft_targets_end_with_the_stop_evaluation_stops_at(parity_home) -> None:
    _, _, rows = parity_home
    stop = family_stop(FAMILY)
    for row in rows:
        target = row.messages[-1]["content"]
        ends = [s for s in stop if target.endswith(s)]
        assert ends, (row.role, target[-20:])
        cut = text_before_stop(target, stop)
        assert cut == target[: -len(ends[0])]  # the first stop is the one at the end
        assert prompts.answer(cut) == prompts.answer(target)  # the same body is judged
