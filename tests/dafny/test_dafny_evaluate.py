"""Writer and annotator metrics on the real verifier."""

from __future__ import annotations

import pytest

from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.sources.template import template_tasks
from verilearn_assets.dafny.verify.scoring import annotator_score, bleu4, rates, writer_score
from verilearn_assets.dafny.verify.verifier import DafnyVerifier


@pytest.fixture(scope="module")
def abs_tasks(verifier: DafnyVerifier) -> dict[str, DafnyTask]:
    ex = [e for e in load_bundled() if e.name == "abs_max.Abs"]
    return {t.role: t for t in template_tasks(ex, split_examples(ex), verifier)}


def test_bleu_orders_candidates() -> None:
    gold = "{\n  if x < 0 { y := -x; } else { y := x; }\n}"
    assert bleu4(gold, gold) == pytest.approx(1.0)
    near = bleu4("{ if x < 0 { y := 0 - x; } else { y := x; } }", gold)
    far = bleu4("{ y := x * x; }", gold)
    assert 1.0 > near > far >= 0.0 and bleu4("", gold) == 0.0


def test_writer_and_annotator_scores(abs_tasks: dict, verifier: DafnyVerifier) -> None:
    w = abs_tasks["writer"]
    same = writer_score(w, "  " + w.body.replace("\n", "\n ") + "  // reformatted", verifier)
    assert same.exact_match and same.covered and same.bleu == pytest.approx(1.0)
    other = writer_score(w, "{\n  y := if x < 0 then -x else x;\n}", verifier)
    assert not other.exact_match and other.covered and other.bleu < 1.0
    wrong = writer_score(w, "{\n  y := x;\n}", verifier)
    assert (wrong.covered, wrong.status) == (False, "verification_error")
    a = abs_tasks["annotator"]
    good = annotator_score(a, a.annotated_body, verifier)
    cheat = annotator_score(a, "{\n  assume false;\n}", verifier)
    assert (good.verified, cheat.verified, cheat.status) == (True, False, "cheat")
    assert rates([good, cheat], "verified") == 0.5
