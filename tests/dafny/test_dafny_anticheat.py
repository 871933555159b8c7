"""Each anti-cheat rule on its own, plus what must stay allowed."""

from __future__ import annotations

import pytest

from verilearn_assets.dafny.verify.anticheat import check_candidate, forbidden_constructs

REFERENCE = """function Sq(x: int): int { x * x }

method Square(x: int) returns (y: int)
  requires x >= 0
  ensures y == Sq(x)
{
  y := x * x;
}
"""
BODY = "  y := x * x;\n"


def cheats(candidate: str) -> list[str]:
    return [f.cheat for f in check_candidate(REFERENCE, candidate)]


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        (REFERENCE.replace(BODY, "  assume false;\n"), ["assume"]),
        (REFERENCE.replace(BODY, "  y := 0;\n  assume y == Sq(x);\n"), ["assume"]),
        (REFERENCE + "lemma {:axiom} Magic() ensures false\n", ["axiom", "bodiless_decl"]),
        (
            REFERENCE.replace("method Square", "method {:verify  false} Square"),
            ["verify", "spec_changed"],
        ),
        (
            REFERENCE + "method {:extern} Oracle(x: int) returns (y: int) ensures y == x * x\n",
            ["extern", "bodiless_decl"],
        ),
        (REFERENCE + "lemma Free(x: int) ensures Sq(x) == x * x\n", ["bodiless_decl"]),
        (REFERENCE + "function Hidden(x: int): int\n", ["bodiless_decl"]),
        (REFERENCE.replace("ensures y == Sq(x)", "ensures true"), ["spec_changed"]),
        (REFERENCE.replace("  requires x >= 0\n", ""), ["spec_changed"]),
        (REFERENCE.replace("returns (y: int)", "returns (y: nat)"), ["spec_changed"]),
        (REFERENCE.replace("{ x * x }", "{ 0 }"), ["spec_changed"]),  # the header is the spec
        (REFERENCE.replace("method Square", "method Square2"), ["spec_changed"]),
    ],
)
def test_each_cheat_has_its_class(candidate: str, expected: list[str]) -> None:
    assert sorted(cheats(candidate)) == sorted(expected)


@pytest.mark.parametrize(
    "candidate",
    [
        REFERENCE,
        REFERENCE.replace(BODY, "  var t := x;\n  y := t * t;\n"),  # another body
        REFERENCE.replace("ensures y == Sq(x)", "ensures   y==Sq( x ) // same spec"),
        REFERENCE.replace(BODY, "  y := x * x; // assume false, {:axiom}\n"),  # comments
        REFERENCE.replace(BODY, "  assert x >= 0;\n  y := x * x;\n"),  # hints are fine
    ],
)
def test_honest_candidates_pass(candidate: str) -> None:
    assert cheats(candidate) == []


def test_assume_in_the_reference_is_not_new() -> None:
    ref = REFERENCE.replace(BODY, "  assume x >= 0;\n" + BODY)
    assert check_candidate(ref, ref) == []
    assert [f.cheat for f in forbidden_constructs(ref)] == ["assume"]


def test_forbidden_constructs_ignores_comments() -> None:
    assert forbidden_constructs("method M() { } // assume {:axiom} {:verify false}") == []
    found = forbidden_constructs("method {:extern} M()\nlemma {:axiom} L() ensures false")
    assert [f.cheat for f in found] == ["axiom", "extern"]


@pytest.mark.parametrize("answer", ["", "\n\n", "// I give up\n"])
def test_a_body_left_out_is_bodiless_for_every_bundled_task(answer: str) -> None:
    """Dafny 2.3 verifies a bodiless method without proving its ensures, so an empty or
    comment-only answer spliced in as the body must be a cheat, on every bundled task."""
    from verilearn_assets.dafny.corpus.loader import load_bundled

    for ex in load_bundled():
        found = [f.cheat for f in check_candidate(ex.gold_program, ex.assemble(answer))]
        assert found == ["bodiless_decl"], (ex.name, found)
        assert check_candidate(ex.gold_program, ex.assemble(ex.body)) == [], ex.name


def test_a_bodiless_method_is_refused_twice(verifier) -> None:
    """Dafny 2.3 verifies a bodiless method without its ensures; with `/noCheating:1` (our
    verifier's flag) it refuses it itself, and the reward refuses it before the verifier."""
    from verilearn_assets.dafny.rewards import score_candidate

    hollow = REFERENCE.replace("{\n" + BODY + "}\n", "\n")
    assert "/noCheating:1" in verifier.flags
    assert verifier.verify(hollow).status == "parse_error"
    scored = score_candidate(REFERENCE, hollow, verifier)
    assert (scored.reward, scored.status) == (0.0, "cheat")
