"""The bundled corpus verifies; the loader reads DafnyBench layouts (Dafny 4 included)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from verilearn_assets.dafny.corpus.loader import BUNDLED, load_bundled, load_dafny_bench
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.records import CONSTRUCTS
from verilearn_assets.dafny.sources.mutants import mutants
from verilearn_assets.dafny.verify.verifier import DafnyVerifier


def test_every_bundled_program_verifies(verifier: DafnyVerifier) -> None:
    files = sorted(BUNDLED.glob("*.dfy"))
    assert len(files) >= 20
    results = verifier.verify_many([f.read_text() for f in files])
    failed = {f.name: r.status for f, r in zip(files, results, strict=True) if not r.ok}
    assert failed == {}


def test_bundled_examples_cover_every_construct() -> None:
    report = load_dafny_bench(BUNDLED)
    assert report.skipped == Counter() and report.rewritten == 0
    tags = {t for e in report.examples for t in e.constructs}
    assert tags == set(CONSTRUCTS)
    for ex in report.examples:  # the pieces reassemble to the comment-free file exactly
        assert ex.gold_program.strip() and ex.annotated_body.startswith("{")
        assert ex.id == type(ex).make_id(ex.prefix, ex.spec, ex.annotated_body, ex.suffix)
        assert "invariant" not in ex.body and "assert " not in ex.body


DAFNY4_GOLD = """ghost function Sum(n: nat): nat
{
  if n == 0 then 0 else n + Sum(n - 1)
}

function Twice(x: int): int { 2 * x }

method SumUp(n: nat) returns (s: nat)
  ensures s == Sum(n)
{
  s := 0;
  for i := 0 to n
    invariant s == Sum(i)
  {
    s := s + (i + 1);
  }
}

method UseTwice(x: int) returns (y: int)
  ensures y == 2 * x
{
  y := Twice(x);
}
"""
DAFNY4_NO_HINTS = DAFNY4_GOLD.replace("    invariant s == Sum(i)\n", "")
DAFNY2_GOLD = (BUNDLED / "multiply.dfy").read_text()


@pytest.fixture
def bench_dir(tmp_path: Path) -> Path:
    """A DafnyBench-layout directory written here, with Dafny 4 files and bad ones."""
    gt, nh = tmp_path / "ground_truth", tmp_path / "hints_removed"
    gt.mkdir()
    nh.mkdir()
    (gt / "sum4.dfy").write_text(DAFNY4_GOLD)
    (nh / "sum4_no_hints.dfy").write_text(DAFNY4_NO_HINTS)
    (gt / "mult.dfy").write_text(DAFNY2_GOLD)
    (nh / "mult_no_hints.dfy").write_text(DAFNY2_GOLD.replace("invariant", "// invariant"))
    (gt / "down.dfy").write_text(
        "method M(n: nat) {\n  for i := n downto 0 {\n  }\n}\nghost function F(): int { 0 }\n"
    )
    (gt / "elephant.dfy").write_text(
        "ghost function F(): int { 0 }\nmethod M() { var x :- F(); }\n"
    )
    (gt / "broken.dfy").write_text("method M() {\n  if (true) {\n")
    (gt / "only_fun.dfy").write_text("function F(x: int): int { x }\n")
    (gt / "latin1.dfy").write_bytes(b"method M() { } // \xe9\xff\n")
    return tmp_path


def test_dafnybench_layout_rewrites_and_counts_skips(
    bench_dir: Path, verifier: DafnyVerifier
) -> None:
    report = load_dafny_bench(bench_dir)
    assert report.files == 7
    assert report.rewritten == 1
    assert dict(report.skipped) == {
        "dafny4: downto loop has no mechanical rewrite": 1,
        "dafny4: :- (elephant operator) has no mechanical rewrite": 1,
        "no method with a body": 1,
        "unreadable: UnicodeDecodeError": 1,
        "unparseable: unbalanced braces from offset 11": 1,
    }
    by_name = {e.name: e for e in report.examples}
    assert set(by_name) == {"sum4.SumUp", "sum4.UseTwice", "mult.Multiply"}
    rewritten = by_name["sum4.SumUp"]
    assert rewritten.dialect == "4" and rewritten.origin == "dafnybench"
    assert any("for loop" in r for r in rewritten.rewrites)
    assert "invariant s == Sum(i)" in rewritten.annotated_body
    assert "invariant s == Sum(i)" not in rewritten.body  # from hints_removed/
    programs = [by_name[n].gold_program for n in ("sum4.SumUp", "sum4.UseTwice")]
    assert [r.status for r in verifier.verify_many(programs)] == ["verified", "verified"]


COMPILED_FUNCTION_ONLY = """function Square(x: int): int { x * x }

predicate IsEven(n: int) { n % 2 == 0 }

method SumSquares(n: nat) returns (s: int)
  ensures s >= 0
{
  s := 0;
  var i := 0;
  while i < n
    invariant 0 <= i <= n && s >= 0
  {
    if IsEven(i) {
      s := s + Square(i);
    }
    i := i + 1;
  }
}
"""
GHOST_USE_ONLY = """function Square(x: int): int { x * x }

method Sq(x: int) returns (y: int)
  ensures y == Square(x)
{
  y := x * x;
  assert y == Square(x);
  ghost var g := Square(y);
}
"""


def test_compiled_function_is_dafny4_and_rewritten(tmp_path: Path, verifier: DafnyVerifier) -> None:
    """A file whose only Dafny 4 feature is a `function` called from a method body: 2.3
    reads that function as ghost (a resolution error), so it becomes `function method`."""
    from verilearn_assets.dafny.lang.dialect import compiled_function_calls, detect, to_dafny2

    assert compiled_function_calls(COMPILED_FUNCTION_ONLY) == ["IsEven", "Square"]
    assert detect(COMPILED_FUNCTION_ONLY) == "4"
    # called only from specs, asserts and ghost statements: a valid Dafny 2.3 file
    assert (detect(GHOST_USE_ONLY), to_dafny2(GHOST_USE_ONLY)) == ("2", (GHOST_USE_ONLY, []))
    assert verifier.verify(COMPILED_FUNCTION_ONLY).status == "resolution_error"  # as 2.3 sees it

    gt, nh = tmp_path / "ground_truth", tmp_path / "hints_removed"
    gt.mkdir()
    nh.mkdir()
    (gt / "squares.dfy").write_text(COMPILED_FUNCTION_ONLY)
    (nh / "squares_no_hints.dfy").write_text(
        COMPILED_FUNCTION_ONLY.replace("    invariant 0 <= i <= n && s >= 0\n", "")
    )
    (gt / "sq.dfy").write_text(GHOST_USE_ONLY)
    report = load_dafny_bench(tmp_path)
    assert report.rewritten == 1 and not report.skipped
    by_name = {e.name: e for e in report.examples}
    ex = by_name["squares.SumSquares"]
    assert ex.dialect == "4" and ex.rewrites == ["function → function method (2)"]
    assert "function method Square" in ex.gold_program
    assert "predicate method IsEven" in ex.gold_program
    assert by_name["sq.Sq"].dialect == "2" and by_name["sq.Sq"].rewrites == []
    statuses = verifier.verify_many([ex.gold_program, by_name["sq.Sq"].gold_program])
    assert [r.status for r in statuses] == ["verified", "verified"]


def test_plain_directory_and_bad_input(tmp_path: Path) -> None:
    (tmp_path / "a.dfy").write_text(DAFNY2_GOLD)
    report = load_dafny_bench(tmp_path)
    assert [e.origin for e in report.examples] == ["plain"]
    with pytest.raises(ValueError, match="no .dfy files"):
        load_dafny_bench(_empty(tmp_path))
    with pytest.raises(ValueError, match="not a directory"):
        load_dafny_bench(tmp_path / "a.dfy")


def _empty(base: Path) -> Path:
    d = base / "empty"
    d.mkdir()
    return d


def test_split_is_seeded_grouped_and_spread() -> None:
    examples = load_bundled()
    first = split_examples(examples, seed=3)
    assert first == split_examples(examples, seed=3)
    assert first != split_examples(examples, seed=4)
    per_program: dict[str, set[str]] = {}
    for ex in examples:
        per_program.setdefault(ex.program, set()).add(first[ex.id])
    assert all(len(s) == 1 for s in per_program.values())
    counts = Counter(first.values())
    assert set(counts) == {"train", "dev", "test"} and counts["train"] > counts["dev"]


def test_mutants_are_single_edits() -> None:
    ex = next(e for e in load_bundled() if e.name == "array_max.ArrayMax")
    kinds = Counter(m.kind for m in mutants(ex))
    assert kinds == {"drop_invariant": ex.n_hints, "weaken_guard": 1, "drop_requires": 1}
    for m in mutants(ex):
        changed = m.annotated_body != ex.annotated_body or m.spec != ex.spec
        assert changed


def test_lemma_calls_leave_the_hint_free_body(home: Path, verifier: DafnyVerifier) -> None:
    """AppendThree proves its spec by lemma calls only: the loader removes them from the
    hint-free body (they are proof steps), so it is an annotator task; its writer gold
    still scores 1.0 and the annotator's copy-the-input cheat scores 0."""
    from verilearn_assets.dafny import prompts
    from verilearn_assets.dafny.grpo import grpo_task
    from verilearn_assets.dafny.lang.syntax import lemma_names
    from verilearn_assets.dafny.sources.template import template_tasks

    (ex,) = [e for e in load_bundled() if e.name == "list_datatype.AppendThree"]
    lemmas = lemma_names(ex.gold_program)
    called = [name for name in sorted(lemmas) if f"{name}(" in ex.annotated_body]
    assert called and not any(f"{name}(" in ex.body for name in called), ex.body
    assert ex.n_hints >= len(called)
    tasks = {t.role: t for t in template_tasks([ex], {ex.id: "dev"}, verifier)}
    writer, annotator = tasks["writer"], tasks["annotator"]
    assert (annotator.status, annotator.input_status) == ("accepted", "verification_error")
    assert writer.status == "accepted" and writer.target == ex.body
    for role, task, answers in (
        ("writer", writer, {"gold": writer.target, "gold with its lemma calls": ex.annotated_body}),
        ("annotator", annotator, {"gold": annotator.target, "copy of the input": annotator.body}),
    ):
        scorer = grpo_task().scorer(home, [task], role)
        try:
            got = scorer.score(
                [task.id] * len(answers), [prompts.fenced(a) for a in answers.values()]
            )
        finally:
            scorer.close()
        outcome = dict(zip(answers, (g["outcome"] for g in got), strict=True))
        want = {k: 0.0 if k == "copy of the input" else 1.0 for k in answers}
        assert outcome == want, (role, outcome)
