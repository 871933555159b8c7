"""Dafny writer/annotator rewards through the family's GRPO hook, on the real verifier
(Debian dafny + z3). Completions are what a model would say: text with a dafny block."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.config import cache_dir
from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.family import FAMILY
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.rewards import PARTIAL_CAP
from verilearn_assets.dafny.sources.template import template_tasks
from verilearn_assets.dafny.verify.verifier import DafnyVerifier, VerifierConfig


@pytest.fixture(scope="module")
def dafny_world(tmp_path_factory: pytest.TempPathFactory):
    if shutil.which("dafny") is None:
        pytest.fail("dafny is not installed: run `make dafny-deps`")
    home = tmp_path_factory.mktemp("dafny-grpo-home")
    ex = [e for e in load_bundled() if e.name == "multiply.Multiply"]
    with DafnyVerifier(VerifierConfig(processes=1), cache_dir=cache_dir(home)) as v:
        tasks = template_tasks(ex, split_examples(ex), v)
    assert FAMILY.grpo is not None
    scorers = {role: FAMILY.grpo.scorer(home, tasks, role) for role in ("writer", "annotator")}
    try:
        yield home, tasks, scorers
    finally:
        for s in scorers.values():
            s.close()


def _task(tasks: list[DafnyTask], role: str) -> DafnyTask:
    return next(t for t in tasks if t.role == role and t.status == "accepted")


def test_prompts_per_role(dafny_world) -> None:
    home, tasks, _ = dafny_world
    grpo = FAMILY.grpo
    assert grpo is not None and grpo.roles[:2] == ("writer", "annotator")
    for role in grpo.roles[:2]:
        rows = grpo.prompts(Path(home), tasks, role)
        assert [r["task_id"] for r in rows] == [_task(tasks, role).id]
        assert rows[0]["prompt"][0]["content"] == prompts.SYSTEM[role]
        assert rows[0]["prompt"][-1]["role"] == "user"
    with pytest.raises(ValueError, match="writer or annotator"):
        grpo.prompts(Path(home), tasks, "default")


def test_writer_rewards(dafny_world) -> None:
    _, tasks, scorers = dafny_world
    t = _task(tasks, "writer")
    said = [
        "Here it is:\n" + prompts.fenced(t.annotated_body),  # writes the body with its proof
        prompts.fenced(t.annotated_body.replace("p := p + a;", "p := p + a + 1;")),  # wrong
        prompts.fenced("{\n  assume false;\n}"),  # cheat
        prompts.fenced(t.body.replace(";", "", 1)),  # does not parse
    ]
    good, wrong, cheat, broken = scorers["writer"].score([t.id] * 4, said)
    assert good == {"outcome": 1.0, "partial": 1.0}
    assert wrong["outcome"] == 0.0 and 0.0 < wrong["partial"] <= PARTIAL_CAP < 1.0
    assert cheat == {"outcome": 0.0, "partial": 0.0}
    assert broken == {"outcome": 0.0, "partial": 0.0}


def test_annotator_rewards(dafny_world) -> None:
    _, tasks, scorers = dafny_world
    t = _task(tasks, "annotator")
    said = [
        prompts.fenced(t.annotated_body),
        prompts.fenced(t.annotated_body.replace("invariant p == a * i", "invariant p == 0")),
        prompts.fenced(t.body.replace("p := p + a;", "p := p + a;\n    assume p == a * i;")),
    ]
    good, weak, cheat = scorers["annotator"].score([t.id] * 3, said)
    assert good == {"outcome": 1.0, "partial": 1.0}
    assert weak["outcome"] == 0.0 and 0.0 < weak["partial"] <= PARTIAL_CAP
    assert cheat == {"outcome": 0.0, "partial": 0.0}
    with pytest.raises(KeyError, match="no accepted task"):
        scorers["annotator"].score([_task(tasks, "writer").id], said[:1])


def test_pass_rates_per_group_from_stored_trajectories(dafny_world) -> None:
    from verilearn_assets.core import lake
    from verilearn_assets.dafny.records import DafnyTrajectory
    from verilearn_assets.dafny.rollout.cascade import ProgramTeacher, cascade_sample, trajectory

    home, tasks, scorers = dafny_world
    t = _task(tasks, "writer")
    verifier = scorers["writer"].verifier
    traj = trajectory(t, ProgramTeacher(), cascade_sample(t, ProgramTeacher(), verifier))
    assert traj.verified
    failed = traj.model_copy(update={"id": traj.id + "x", "verified": False})
    root = lake.lake_root(home)
    lake.write_records(
        "dafny/trajectories", [traj, failed], DafnyTrajectory, root, source=t.source, split=t.split
    )
    assert FAMILY.grpo is not None and FAMILY.grpo.pass_rates is not None
    assert FAMILY.grpo.pass_rates(Path(home), t.split) == {"template": 0.5}
