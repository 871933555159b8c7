"""Dafny 4 → 2.3 rewrites: each one verifies on the real verifier, keeps every spec clause,
and never weakens what is proved (the rewritten program of a wrong body still fails);
constructs whose only 2.3 spelling would drop a proof are refused by name."""

from __future__ import annotations

import re

import pytest
from dafny4_programs import acc_for

from verilearn_assets.dafny.lang import dialect
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

FOR_SUM = acc_for(3)
LEAST = """least predicate Even(n: nat)
{
  n == 0 || (n >= 2 && Even(n - 2))
}

least lemma EvenPlus(n: nat)
  requires Even(n)
  ensures Even(n + 2)
{
}

method Zero() returns (z: nat)
  ensures Even(z)
{
  z := 0;
}
"""
COMPILED = """function Pick(a: int, b: int): int
{
  if a > b then a else b
}

predicate Big(x: int) { x > 10 }

method M(a: int, b: int) returns (m: int, big: bool)
  ensures m >= a && m >= b
  ensures big == Big(m)
{
  m := Pick(a, b);
  big := Big(m);
}
"""
# Wrong bodies: if a rewrite weakened the proof, these would verify after rewriting.
WRONG = {
    "for": FOR_SUM.replace("s := s + 3 * (j + 1);", "s := s + 3 * j;"),
    # the loop must run to its bound: a body that breaks the sum on the last step fails
    "for_last": FOR_SUM.replace(
        "s := s + 3 * (j + 1);", "s := s + 3 * (j + 1);\n    if j + 1 == n { s := s + 1; }"
    ),
    "least": LEAST.replace("z := 0;", "z := 1;"),
    "compiled": COMPILED.replace("m := Pick(a, b);", "m := a;"),
}
SPEC_WORDS = ("requires", "ensures", "invariant", "decreases", "modifies", "reads")


def _spec_lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip().startswith(SPEC_WORDS)]


@pytest.mark.parametrize("program", [FOR_SUM, LEAST, COMPILED], ids=["for", "least", "compiled"])
def test_rewrites_keep_every_spec_clause(program: str) -> None:
    out, applied = dialect.to_dafny2(program)
    assert applied and dialect.detect(program) == "4"
    flat = re.sub(r"\s+", " ", out)
    for clause in _spec_lines(program):
        assert re.sub(r"\s+", " ", clause) in flat, clause


def test_rewritten_programs_verify_and_wrong_bodies_still_fail(verifier: DafnyVerifier) -> None:
    gold = {"for": FOR_SUM, "least": LEAST, "compiled": COMPILED}
    rewritten = {k: dialect.to_dafny2(v) for k, v in gold.items()}
    assert rewritten["for"][1] == ["ghost function → function (1)", "for loop → while (1)"]
    assert rewritten["least"][1] == ["least/greatest → inductive/co (2)"]
    assert rewritten["compiled"][1] == ["function → function method (2)"]
    wrong = {k: dialect.to_dafny2(v)[0] for k, v in WRONG.items()}
    results = verifier.verify_many([t for t, _ in rewritten.values()] + list(wrong.values()))
    statuses = [r.status for r in results]
    assert statuses[: len(gold)] == ["verified"] * len(gold)
    assert all(s == "verification_error" for s in statuses[len(gold) :]), dict(
        zip(wrong, statuses[len(gold) :], strict=True)
    )
    # as-is, the Dafny 4 text does not even parse or resolve under 2.3
    as_is = verifier.verify_many([FOR_SUM, LEAST, COMPILED])
    assert all(r.status in ("parse_error", "resolution_error") for r in as_is)


BY_METHOD = """function Sq(x: int): int
{
  x * x
} by method {
  return x * x;
}
"""
BOUND_ASSIGNED = """method M(n: nat) returns (s: int)
{
  var m := n;
  s := 0;
  for i := 0 to m
  {
    m := m + 1;
    s := s + 1;
  }
}
"""
DATATYPE_MEMBERS = """datatype T = A | B
{
  function Id(): T { this }
}
"""


@pytest.mark.parametrize(
    ("program", "reason"),
    [
        (BY_METHOD, "by method"),
        (BOUND_ASSIGNED, "assigns its bounds"),
        (DATATYPE_MEMBERS, "datatype members"),
        ("method M(n: nat) {\n  for i := n downto 0 {\n  }\n}\n", "downto"),
        ("method M() returns (r: int) {\n  var x :- F();\n}\n", "elephant"),
    ],
)
def test_constructs_without_a_sound_rewrite_are_refused(program: str, reason: str) -> None:
    """`by method` would lose the proof that the method computes the function; a `for`
    whose body moves its bound would become another loop: refused, never rewritten."""
    assert dialect.detect(program) == "4"
    with pytest.raises(dialect.DialectError, match=reason):
        dialect.to_dafny2(program)
    assert dialect.apply(program, "as-is") == (program, "4", [])


def test_comments_never_trigger_a_rewrite() -> None:
    text = "// for i := 0 to n\n/* ghost function F() */\nmethod M() { }\n"
    assert dialect.detect(text) == "2" and dialect.to_dafny2(text) == (text, [])
    with pytest.raises(ValueError, match="unknown dialect mode"):
        dialect.apply(text, "dafny5")


def test_line_map_points_rewritten_lines_back_to_the_file_as_written() -> None:
    out, _ = dialect.to_dafny2(FOR_SUM)
    lines, rewritten = dialect.line_map(FOR_SUM, out), out.split("\n")
    original = FOR_SUM.split("\n")
    for j, text in enumerate(rewritten):
        if text.strip() in (
            "invariant s == Acc(j)",
            "s := s + 3 * (j + 1);",
            "ensures s == Acc(n)",
        ):
            assert original[lines[j] - 1].strip() == text.strip()
    header = original.index("  for j := 0 to n") + 1
    assert lines[rewritten.index("  var j := 0;")] == header
    assert lines[rewritten.index("  while j < (n)")] == header
