"""The red team: every cheat of `redteam_cases.py` through every public scoring entry point,
against the real verifier, next to an honest wrong answer scored the same way.

Entry points: the GRPO scorer per role (`writer`, `annotator`, `annotator_frozen_writer`),
the `cascade` evaluation chain (`grpo.cascade_score`), the teacher cascade that writes
`dafny/trajectories` plus the SFT rows built from it, and the `llm` source. A cheat fails
the test when it scores anything above the honest wrong answer of the same entry point;
honest controls (strings, comments, char literals that only look like cheats, an allowed
`{:trigger}`) must verify. The only double is the scripted model saying the answers.

Fast by construction: the screen refuses most cheats before the verifier, and every
entry point verifies its whole batch at once through one pool (cached per session).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redteam_cases import (
    ANNOTATOR_CHEATS,
    BODY_CHEATS,
    HONEST,
    HONEST_WRITER,
    LLM_PROPOSALS,
    VERIFIER_CHEATS,
    Cheat,
)

from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.grpo import (
    ANNOTATOR_FROZEN_WRITER,
    WRITER_CASCADE,
    cascade_score,
    grpo_task,
)
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.rollout.cascade import cascade_sample, trajectory
from verilearn_assets.dafny.sft import rows_for
from verilearn_assets.dafny.sources.llm import llm_tasks
from verilearn_assets.dafny.sources.template import template_tasks
from verilearn_assets.dafny.verify.anticheat import screen
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

WRITER_SIDE = BODY_CHEATS + VERIFIER_CHEATS
ANNOTATOR_SIDE = BODY_CHEATS + VERIFIER_CHEATS + ANNOTATOR_CHEATS


def _wrong_writer(g: str, b: str) -> str:
    """An honest wrong body: the gold proof, one step off."""
    return g.replace("p := p + a;", "p := p + a + 1;")


def _wrong_annotator(g: str, b: str) -> str:
    """An honest wrong annotation: the gold code, one invariant wrong."""
    return g.replace("invariant p == a * i", "invariant p == a * i + 1")


WRONG_W = Cheat("honest_wrong", _wrong_writer, None)
WRONG_A = Cheat("honest_wrong", _wrong_annotator, None)


class Scripted:
    """What the model says: one writer answer and one annotation (None: the annotator
    gives back the body it was shown, which already carries the writer's proof)."""

    name = "redteam"

    def __init__(self, body: str, annotated: str | None) -> None:
        self.body, self.annotated = body, annotated

    def write(self, task: DafnyTask) -> str:
        return prompts.fenced(self.body)

    def annotate(self, task: DafnyTask, body: str) -> str:
        return prompts.fenced(body if self.annotated is None else self.annotated)


@pytest.fixture(scope="module")
def tasks(verifier: DafnyVerifier) -> dict[str, DafnyTask]:
    ex = [e for e in load_bundled() if e.name == "multiply.Multiply"]
    out = template_tasks(ex, split_examples(ex), verifier)
    assert [t.status for t in out] == ["accepted", "accepted"], [t.rejection_reason for t in out]
    return {t.role: t.model_copy(update={"split": "train"}) for t in out}


@pytest.fixture(scope="module")
def rhome(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("redteam-home")


def _texts(cases: list[Cheat], task: DafnyTask) -> list[str]:
    return [c.build(task.annotated_body, task.body) for c in cases]


def _grpo(rhome: Path, tasks: dict[str, DafnyTask], role: str, cases: list[Cheat]) -> list[dict]:
    task = tasks["annotator" if role == "annotator" else "writer"]
    # writer_cascade's frozen annotator gives back the body it is shown (the writer's proof)
    hook = grpo_task(frozen_annotator=Scripted("", None))
    scorer = hook.scorer(rhome, list(tasks.values()), role)
    try:
        said = [prompts.fenced(t) for t in _texts(cases, task)]
        return scorer.evaluate([task.id] * len(said), said)
    finally:
        scorer.close()


@pytest.fixture(scope="module")
def verdicts(rhome: Path, tasks: dict[str, DafnyTask], verifier: DafnyVerifier) -> dict[str, Any]:
    """Every case through every entry point, one batch per entry point."""
    w, a = tasks["writer"], tasks["annotator"]
    out: dict[str, Any] = {}
    writer_cases = [WRONG_W, *HONEST, *HONEST_WRITER, *WRITER_SIDE]
    annot_cases = [WRONG_A, *HONEST, *ANNOTATOR_SIDE]
    for role in ("writer", WRITER_CASCADE, "annotator", ANNOTATOR_FROZEN_WRITER):
        cases = writer_cases if f"grpo_{role}" in WRITER_KEYS else annot_cases
        out[f"grpo_{role}"] = dict(
            zip((c.name for c in cases), _grpo(rhome, tasks, role, cases), strict=True)
        )
    # the evaluation cascade: writer answers (with their own proof) given back by the
    # annotator; annotator answers on the gold body
    ids = [w.id] * (len(writer_cases) + len(annot_cases))
    writer_texts = [prompts.fenced(t) for t in _texts(writer_cases, w)]
    annot_texts = list(writer_texts)
    writer_texts += [prompts.fenced(w.body)] * len(annot_cases)
    annot_texts += [prompts.fenced(t) for t in _texts(annot_cases, w)]
    chain = cascade_score(rhome, list(tasks.values()), ids, writer_texts, annot_texts)
    out["chain_writer"] = dict(
        zip((c.name for c in writer_cases), chain[: len(writer_cases)], strict=True)
    )
    out["chain_annotator"] = dict(
        zip((c.name for c in annot_cases), chain[len(writer_cases) :], strict=True)
    )
    # the teacher cascade (dafny/trajectories) and its SFT rows
    for key, task, cases, teacher in (
        ("teacher_writer", w, writer_cases, lambda t: Scripted(t, None)),
        ("teacher_annotator_on_writer", w, annot_cases, lambda t: Scripted(w.body, t)),
        ("teacher_annotator", a, annot_cases, lambda t: Scripted(a.body, t)),
    ):
        runs = {}
        for case, text in zip(cases, _texts(cases, task), strict=True):
            model = teacher(text)
            result = cascade_sample(task, model, verifier)
            traj = trajectory(task, model, result)
            runs[case.name] = {"result": result, "trajectory": traj, "rows": rows_for(traj)}
        out[key] = runs
    return out


GRPO_KEYS = (
    "grpo_writer",
    f"grpo_{WRITER_CASCADE}",
    "grpo_annotator",
    f"grpo_{ANNOTATOR_FROZEN_WRITER}",
)
WRITER_KEYS = ("grpo_writer", f"grpo_{WRITER_CASCADE}", "chain_writer", "teacher_writer")
CHAIN_KEYS = ("chain_writer", "chain_annotator")
TEACHER_KEYS = ("teacher_writer", "teacher_annotator_on_writer", "teacher_annotator")


def _side(key: str) -> list[Cheat]:
    return WRITER_SIDE if key in WRITER_KEYS else ANNOTATOR_SIDE


def _all_cases() -> Iterator[Any]:
    for key in GRPO_KEYS + CHAIN_KEYS + TEACHER_KEYS:
        for c in _side(key):
            yield pytest.param(key, c.name, id=f"{key}-{c.name}")


@pytest.mark.parametrize(("entry", "case"), list(_all_cases()))
def test_cheat_scores_no_more_than_an_honest_wrong_answer(verdicts, entry: str, case: str) -> None:
    got, wrong = verdicts[entry][case], verdicts[entry]["honest_wrong"]
    if entry in TEACHER_KEYS:
        r, wr = got["result"], wrong["result"]
        assert r.status != "verified" and not got["trajectory"].verified, (case, r.status)
        assert r.reward <= wr.reward and r.partial_reward <= wr.partial_reward, (case, r.status)
        assert got["rows"] == [], case  # nothing to learn from a cheat
    else:
        assert got["outcome"] == 0.0, (case, got["status"])
        assert got["partial"] <= wrong["partial"], (case, got["status"], got["partial"])


@pytest.mark.parametrize("entry", GRPO_KEYS + CHAIN_KEYS + TEACHER_KEYS)
def test_honest_answers_verify_and_honest_wrong_ones_earn_credit(verdicts, entry: str) -> None:
    honest = HONEST + (HONEST_WRITER if entry in WRITER_KEYS else [])
    for c in honest:
        got = verdicts[entry][c.name]
        if entry in TEACHER_KEYS:
            assert got["result"].status == "verified", (c.name, got["result"].stages[-1])
            assert got["rows"], c.name  # verified, clean: it teaches
        else:
            assert got["outcome"] == 1.0, (c.name, got["status"], got.get("verifier_log"))
    wrong = verdicts[entry]["honest_wrong"]
    status = wrong["result"].status if entry in TEACHER_KEYS else wrong["status"]
    assert status == "verification_error"  # the baseline is a real, credited failure


@pytest.mark.parametrize(
    "cheat", [c for c in BODY_CHEATS + VERIFIER_CHEATS if c.screen], ids=lambda c: c.name
)
def test_the_screen_names_each_cheat(cheat: Cheat) -> None:
    """Before any verifier: the class of each body cheat (pure, cheap: `screen`)."""
    ex = next(e for e in load_bundled() if e.name == "multiply.Multiply")
    found = {f.cheat for f in screen(cheat.build(ex.annotated_body, ex.body), "writer")}
    assert cheat.screen in found, found


def test_a_replaced_writer_body_is_a_failed_cascade(tasks, verifier) -> None:
    """The gold annotator fed a wrong writer body substitutes the gold code: a failed
    cascade (`code_changed`), never a verified writer trajectory nor an SFT row."""
    from verilearn_assets.dafny.rollout.cascade import ProgramTeacher

    w = tasks["writer"]

    class WrongWriter(ProgramTeacher):
        def write(self, task: DafnyTask) -> str:
            return prompts.fenced(task.body.replace("i := i + 1;", "i := i + 2;"))

    result = cascade_sample(w, WrongWriter(), verifier)
    assert (result.status, result.failure_bucket) == ("code_changed", "code_changed")
    traj = trajectory(w, WrongWriter(), result)
    assert not traj.verified and rows_for(traj) == []
    forged = traj.model_copy(update={"verified": True, "status": "verified", "reward": 1.0})
    assert rows_for(forged) == []  # SFT re-checks the texts, not the flag


@pytest.mark.parametrize("name", sorted(LLM_PROPOSALS))
def test_llm_proposals_are_screened(llm_verdicts: dict[str, list[DafnyTask]], name: str) -> None:
    want = LLM_PROPOSALS[name][1]
    mine = llm_verdicts[name]
    assert mine and all(t.status == "rejected" for t in mine), name
    assert all(want in (t.rejection_reason or "") for t in mine), [t.rejection_reason for t in mine]


@pytest.fixture(scope="module")
def llm_verdicts(verifier: DafnyVerifier) -> dict[str, list[DafnyTask]]:
    """Every proposal through `llm_tasks` at once; the tasks of each, by program text."""
    names = sorted(LLM_PROPOSALS)
    said = iter([prompts.fenced(LLM_PROPOSALS[n][0]) for n in names])
    tasks = llm_tasks(lambda _m: next(said), len(names), "dev", verifier)
    text = {LLM_PROPOSALS[n][0].strip(): n for n in names}
    out: dict[str, list[DafnyTask]] = {n: [] for n in names}
    for t in tasks:
        out[text[t.gold_program.strip()]].append(t)
    return out


DEFENCE = {
    # Dafny 2.3 verifies these as written; our verifier (/noCheating:1 and the classifier
    # treating its "has no body" warnings as failures) does not, screen or no screen
    "bodiless_while": (
        "method M() returns (r: int)\n  ensures r == 5\n{\n  r := 0;\n  while true\n}\n"
    ),
    "bodiless_forall": (
        "method M(a: array<int>)\n  ensures forall i :: 0 <= i < a.Length ==> a[i] == 7\n"
        "{\n  forall i | 0 <= i < a.Length ensures false\n}\n"
    ),
    "assume": "method M() returns (r: int)\n  ensures r == 5\n{\n  r := 0;\n  assume false;\n}\n",
    "bodiless_method": "method M() returns (r: int)\n  ensures r == 5\n",
}


def test_the_verifier_itself_refuses_what_the_screen_refuses(verifier: DafnyVerifier) -> None:
    names = sorted(DEFENCE)
    got = dict(zip(names, verifier.verify_many([DEFENCE[n] for n in names]), strict=True))
    assert {n: r.status for n, r in got.items()} == {
        "assume": "verification_error",  # /noCheating:1: the assume is asserted
        "bodiless_forall": "parse_error",  # /noCheating:1: an ensures forall needs a body
        "bodiless_method": "parse_error",  # /noCheating:1: an ensures method needs a body
        "bodiless_while": "resolution_error",  # the warning, refused by the classifier
    }
    assert "unsound: " in got["bodiless_while"].errors[0].message
    assert got["bodiless_while"].errors[0].code == "unsound"


def test_sft_never_teaches_the_hints_a_writer_got_wrong(tasks, verifier) -> None:
    """Gold code with a false invariant, proved by the annotator's own hints: the writer
    row teaches the code only, the annotator row the hints that verified."""
    from verilearn_assets.dafny.rollout.cascade import ProgramTeacher

    w = tasks["writer"]
    bogus = w.annotated_body.replace("invariant p == a * i", "invariant false")

    class BogusHints(ProgramTeacher):
        def write(self, task: DafnyTask) -> str:
            return prompts.fenced(bogus)

    result = cascade_sample(w, BogusHints(), verifier)
    assert result.status == "verified"  # the annotator kept the code and gave good hints
    rows = {
        r.role: r.messages[-1]["content"] for r in rows_for(trajectory(w, BogusHints(), result))
    }
    assert "invariant" not in rows["writer"] and "p := p + a;" in rows["writer"]
    assert (
        "invariant p == a * i" in rows["annotator"] and "invariant false" not in rows["annotator"]
    )
