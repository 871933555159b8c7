"""Spec strength and task quality (`dafny/sources/template.py`, `procedural.py`,
`mutants.py`), on the real verifier, over the bundled programs whose specs were fixed plus
a few others (the whole corpus takes ~1.5 min cold on 2 cores; `make demo` builds it and
rejects any weak spec).

- every spec rejects its generated wrong bodies (constant outputs, dropped
  statements, off-by-one loop bounds, swapped arguments, the empty body; `{ while true }`
  is refused by the screen before the verifier);
- the specs the corpus had before (Withdraw, Histogram, AppendThree) are caught as weak,
  each naming the wrong body it accepts;
- no accepted annotator task asks to copy its input or to change code;
- every writer gold target scores 1.0 under the writer's own reward (the GRPO scorer).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from verilearn_assets.dafny.corpus.loader import examples_from_program, load_bundled
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.grpo import grpo_task
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.sources.mutants import wrong_bodies
from verilearn_assets.dafny.sources.procedural import procedural_tasks
from verilearn_assets.dafny.sources.template import (
    NOTHING_TO_ANNOTATE,
    spec_strength,
    template_tasks,
)
from verilearn_assets.dafny.verify.anticheat import screen
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

# The corpus specs as they were: each accepts a wrong implementation.
OLD_WITHDRAW = """class Account {
  var balance: int
  method Withdraw(amount: nat) returns (ok: bool)
    requires balance >= 0
    modifies this
    ensures balance >= 0
    ensures ok ==> balance == old(balance) - amount
    ensures !ok ==> balance == old(balance)
  {
    if amount <= balance {
      balance := balance - amount;
      ok := true;
    } else {
      ok := false;
    }
  }
}
"""
OLD_APPEND_THREE = """datatype List = Nil | Cons(head: int, tail: List)
function Length(l: List): nat
{
  match l
  case Nil => 0
  case Cons(_, t) => 1 + Length(t)
}
function method Append(a: List, b: List): List
{
  match a
  case Nil => b
  case Cons(h, t) => Cons(h, Append(t, b))
}
lemma AppendLength(a: List, b: List)
  ensures Length(Append(a, b)) == Length(a) + Length(b)
{
  match a
  case Nil =>
  case Cons(_, t) => AppendLength(t, b);
}
method AppendThree(a: List, b: List, c: List) returns (r: List)
  ensures Length(r) == Length(a) + Length(b) + Length(c)
{
  AppendLength(b, c);
  AppendLength(a, Append(b, c));
  r := Append(a, Append(b, c));
}
"""


def _old_histogram() -> str:
    text = (Path(__file__).parents[2] / "data/dafny/corpus/map_ops.dfy").read_text()
    old = text.replace("  ensures forall x :: x in h ==> h[x] == multiset(s)[x]\n", "")
    old = old.replace("    invariant forall x :: x in h ==> h[x] == multiset(s[..i])[x]\n", "")
    assert old != text
    return old


SAMPLE = ("account_class", "map_ops", "list_datatype", "multiply", "abs_max", "binary_search")


@pytest.fixture(scope="module")
def corpus_tasks(verifier: DafnyVerifier) -> list[DafnyTask]:
    examples = [e for e in load_bundled() if e.program in SAMPLE]
    assert len({e.program for e in examples}) == len(SAMPLE)
    splits = split_examples(examples)
    # three mutants each: hint mutants come first, so the third reaches a code mutant
    procedural = procedural_tasks(examples, splits, verifier, per_example=3)
    return template_tasks(examples, splits, verifier) + procedural


def test_every_bundled_spec_rejects_its_wrong_bodies(corpus_tasks: list[DafnyTask]) -> None:
    weak = {
        t.name: t.rejection_reason for t in corpus_tasks if "weak_spec" in str(t.rejection_reason)
    }
    assert weak == {}
    for ex in load_bundled():  # every bundled method gets the two shape cheats
        kinds = {w.kind for w in wrong_bodies(ex.spec, ex.annotated_body)}
        assert {"empty", "while_true"} <= kinds, ex.name
        assert screen("{ while true }", "writer"), ex.name  # refused before the verifier


@pytest.mark.parametrize(
    ("program", "method", "accepts"),
    [
        (OLD_WITHDRAW, "Withdraw", "constant_0"),  # ok := false, balance untouched
        (None, "Histogram", "constant_values"),  # every count 0, keys right
        (OLD_APPEND_THREE, "AppendThree", "swap_args"),  # Append(a, Append(c, b))
    ],
)
def test_the_old_weak_specs_are_caught(verifier, program, method, accepts) -> None:
    text = program or _old_histogram()
    examples = [e for e in examples_from_program(text, "old", "plain") if e.name.endswith(method)]
    (ex,) = examples
    reason = spec_strength(examples, verifier)[ex.id]
    assert reason is not None and reason.startswith(f"weak_spec: accepts the wrong body {accepts}")
    tasks = template_tasks(examples, {ex.id: "train"}, verifier)
    assert {t.status for t in tasks} == {"rejected"}
    assert all(t.rejection_reason == reason for t in tasks), [t.rejection_reason for t in tasks]


def test_annotator_tasks_have_something_to_annotate(corpus_tasks: list[DafnyTask]) -> None:
    annot = [t for t in corpus_tasks if t.role == "annotator"]
    accepted = [t for t in annot if t.status == "accepted"]
    assert accepted, "no annotator task left"
    for t in accepted:
        assert t.input_status != "verified" and not t.easy, t.name
        assert (t.mutation or "").split("@")[0] != "weaken_guard", t.name
    reasons = {t.rejection_reason for t in annot if t.status == "rejected"}
    assert NOTHING_TO_ANNOTATE in reasons  # Abs, Max3, … verify without hints
    assert any(str(r).startswith("code_repair: weaken_guard") for r in reasons)


def test_every_writer_gold_target_scores_one(home: Path, corpus_tasks: list[DafnyTask]) -> None:
    writers = [t for t in corpus_tasks if t.role == "writer"]
    assert writers and all(t.status == "accepted" for t in writers), [
        (t.name, t.rejection_reason) for t in writers if t.status != "accepted"
    ]
    from verilearn_assets.dafny import prompts

    scorer = grpo_task().scorer(home, writers, "writer")
    try:
        got = scorer.score([t.id for t in writers], [prompts.fenced(t.target) for t in writers])
    finally:
        scorer.close()
    assert [g["outcome"] for g in got] == [1.0] * len(writers)
