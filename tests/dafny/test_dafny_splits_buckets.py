"""Split stratification on the bundled corpus, the `easy` flag of annotator tasks from
real verdicts, and the cascade's `timeout` bucket from a real verifier timeout."""

from __future__ import annotations

from collections import defaultdict

import pytest

from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.corpus.splits import program_features, split_examples
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.rollout.cascade import cascade_sample
from verilearn_assets.dafny.sources.template import NOTHING_TO_ANNOTATE, template_tasks
from verilearn_assets.dafny.verify.verifier import DafnyVerifier


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_every_stratum_with_three_programs_spans_splits(seed: int) -> None:
    examples = load_bundled()
    split = split_examples(examples, seed=seed)
    assert split == split_examples(examples, seed=seed)
    assert split != split_examples(examples, seed=seed + 100)
    per_program: dict[str, set[str]] = defaultdict(set)
    members: dict[str, list] = defaultdict(list)
    for ex in examples:
        per_program[ex.program].add(split[ex.id])
        members[ex.program].append(ex)
    assert all(len(s) == 1 for s in per_program.values()), per_program
    strata: dict[str, dict[str, str]] = defaultdict(dict)
    for program, exs in members.items():
        for feature in program_features(exs):
            strata[feature][program] = split[exs[0].id]
    big = {f: placed for f, placed in strata.items() if len(placed) >= 3}
    # the corpus has tags and length buckets with >= 3 programs (else this checks nothing)
    assert any(f.startswith("tag:") for f in big) and any(f.startswith("len:") for f in big)
    lumped = {f: sorted(set(p.values())) for f, p in big.items() if len(set(p.values())) < 2}
    assert not lumped, lumped


def test_easy_flag_follows_the_hint_free_verdict(verifier: DafnyVerifier) -> None:
    """Max3 has no hints to remove (its plain program verifies: easy, and so no annotator
    task: the answer would copy the input); Multiply's loop fails without its invariants
    (not easy)."""
    chosen = [e for e in load_bundled() if e.name in ("abs_max.Max3", "multiply.Multiply")]
    assert len(chosen) == 2
    tasks = template_tasks(chosen, split_examples(chosen), verifier)
    annotator = {t.name: t for t in tasks if t.role == "annotator"}
    easy, hard = annotator["abs_max.Max3"], annotator["multiply.Multiply"]
    assert (easy.status, easy.rejection_reason) == ("rejected", NOTHING_TO_ANNOTATE)
    assert hard.status == "accepted"
    assert (easy.easy, easy.input_status) == (True, "verified")
    assert (hard.easy, hard.input_status) == (False, "verification_error")
    assert hard.body != hard.target  # the hints were removed from its input


class HardAssert:
    """A scripted annotator that adds a cubic Fermat assertion z3 cannot settle in 1 s."""

    name = "scripted"

    def write(self, task: DafnyTask) -> str:
        return prompts.fenced(task.body)

    def annotate(self, task: DafnyTask, body: str) -> str:
        closing = task.annotated_body.rstrip().rfind("}")
        fermat = (
            "  assert forall x: int, y: int, z: int :: "
            "x > 0 && y > 0 && z > 0 ==> x*x*x + y*y*y != z*z*z;\n"
        )
        return prompts.fenced(
            task.annotated_body[:closing] + fermat + task.annotated_body[closing:]
        )


def test_cascade_timeout_bucket(quick_verifier: DafnyVerifier) -> None:
    """quick_verifier gives each verification condition 1 s: the assertion times out."""
    ex = [e for e in load_bundled() if e.name == "multiply.Multiply"]
    task = next(t for t in template_tasks(ex, split_examples(ex), quick_verifier))
    result = cascade_sample(task, HardAssert(), quick_verifier)
    assert (result.status, result.failure_bucket) == ("timeout", "timeout"), result.stages
    # a timeout earns nothing: a hard assert must not farm more than an honest wrong answer
    assert (result.reward, result.partial_reward) == (0.0, 0.0)
    assert result.stages[-1].failure_bucket == "timeout" and result.reward < 1.0
