"""A DafnyBench-sized corpus written for the benchmark: ~780 Dafny-4-syntax programs in
DafnyBench's layout (`ground_truth/<n>.dfy` with `hints_removed/<n>_no_hints.dfy`).

There is no network here, so DafnyBench itself cannot be fetched; these programs are made
from templates of the kinds DafnyBench holds (loops over arrays and sequences with `for`,
ghost and compiled functions and predicates, recursive specs with induction lemmas,
classes, least predicates), each template instantiated with varied names, constants,
comparison operators and sizes. Like DafnyBench it mixes in what a loader must not take at
face value: files using Dafny 4 constructs with no sound 2.3 rewrite (`downto` loops,
`:-`, datatype members), programs repeated under another name with other comments (to be
dropped as duplicates), one method copied into several files (which must share a split),
and stray hint-free twins without their program.

    .venv/bin/python benchmarks/dafny_corpus.py OUT_DIR [--programs 780] [--seed 0]

Hint lines are marked `@@` in the templates: kept (unmarked) in `ground_truth/`, dropped
in `hints_removed/`.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path

CMP = {"<=": ">", "<": ">=", ">=": "<", ">": "<="}  # operator -> its negation


def sum_for(i: int, r: random.Random) -> str:
    k, c = r.randint(1, 9), r.randint(0, 5)
    return f"""ghost function Acc{i}(n: nat): int
{{
  if n == 0 then {c} else Acc{i}(n - 1) + {k} * n
}}

method ComputeAcc{i}(n: nat) returns (s: int)
  ensures s == Acc{i}(n)
{{
  s := {c};
  for j := 0 to n
@@    invariant s == Acc{i}(j)
  {{
    s := s + {k} * (j + 1);
  }}
}}
"""


def array_extreme(i: int, r: random.Random) -> str:
    op = r.choice([">", "<"])
    name = "Max" if op == ">" else "Min"
    rel = "<=" if op == ">" else ">="
    return f"""function Pick{i}(a: int, b: int): int
{{
  if a {op} b then a else b
}}

method Array{name}{i}(a: array<int>) returns (m: int)
  requires a.Length > 0
  ensures forall j :: 0 <= j < a.Length ==> a[j] {rel} m
  ensures exists j :: 0 <= j < a.Length && a[j] == m
{{
  m := a[0];
  for p := 1 to a.Length
@@    invariant forall j :: 0 <= j < p ==> a[j] {rel} m
@@    invariant exists j :: 0 <= j < p && a[j] == m
  {{
    m := Pick{i}(m, a[p]);
  }}
}}
"""


def find_first(i: int, r: random.Random) -> str:
    k = r.randint(1, 50)
    cond = r.choice([f"x == {k}", f"x > {k}", f"x % {r.randint(2, 7)} == 0", f"x < -{k}"])
    return f"""predicate Wanted{i}(x: int)
{{
  {cond}
}}

method FindFirst{i}(a: array<int>) returns (idx: int)
  ensures 0 <= idx ==> idx < a.Length && Wanted{i}(a[idx])
  ensures idx < 0 ==> forall j :: 0 <= j < a.Length ==> !Wanted{i}(a[j])
{{
  idx := -1;
  for q := 0 to a.Length
@@    invariant idx < 0 ==> forall j :: 0 <= j < q ==> !Wanted{i}(a[j])
@@    invariant 0 <= idx ==> idx < a.Length && Wanted{i}(a[idx])
  {{
    if idx < 0 && Wanted{i}(a[q]) {{
      idx := q;
    }}
  }}
}}
"""


def count_in(i: int, r: random.Random) -> str:
    cmp = r.choice(["==", "<", ">", "!="])
    return f"""ghost function CountIn{i}(s: seq<int>, v: int): nat
{{
  if |s| == 0 then 0 else CountIn{i}(s[..|s| - 1], v) + (if s[|s| - 1] {cmp} v then 1 else 0)
}}

method Count{i}(a: array<int>, v: int) returns (c: nat)
  ensures c == CountIn{i}(a[..], v)
{{
  c := 0;
  for t := 0 to a.Length
@@    invariant c == CountIn{i}(a[..t], v)
  {{
@@    assert a[..t + 1][..t] == a[..t];
    if a[t] {cmp} v {{
      c := c + 1;
    }}
  }}
@@  assert a[..a.Length] == a[..];
}}
"""


def fill(i: int, r: random.Random) -> str:
    k, c = r.randint(1, 9), r.randint(-5, 5)
    return f"""method Fill{i}(a: array<int>)
  modifies a
  ensures forall j :: 0 <= j < a.Length ==> a[j] == {k} * j + {c}
{{
  for t := 0 to a.Length
@@    invariant forall j :: 0 <= j < t ==> a[j] == {k} * j + {c}
  {{
    a[t] := {k} * t + {c};
  }}
}}
"""


def power(i: int, r: random.Random) -> str:
    return f"""function Pow{i}(b: int, e: nat): int
{{
  if e == 0 then 1 else b * Pow{i}(b, e - 1)
}}

method ComputePow{i}(b: int, e: nat) returns (p: int)
  ensures p == Pow{i}(b, e)
{{
  p := 1;
  var t := 0;
  while t < e
@@    invariant 0 <= t <= e
@@    invariant p == Pow{i}(b, t)
  {{
    p := b * p;
    t := t + 1;
  }}
}}
"""


def triangle(i: int, r: random.Random) -> str:
    return f"""ghost function Tri{i}(n: nat): nat
{{
  if n == 0 then 0 else n + Tri{i}(n - 1)
}}

lemma TriClosed{i}(n: nat)
  ensures 2 * Tri{i}(n) == n * (n + 1)
{{
@@  if n > 0 {{
@@    TriClosed{i}(n - 1);
@@  }}
}}

method TriLoop{i}(n: nat) returns (t: nat)
  ensures 2 * t == n * (n + 1)
{{
  t := 0;
  for u := 0 to n
@@    invariant t == Tri{i}(u)
  {{
    t := t + u + 1;
  }}
@@  TriClosed{i}(n);
}}
"""


def counter_class(i: int, r: random.Random) -> str:
    k, times = r.randint(1, 9), r.randint(1, 4)
    calls = "\n".join("  c.Inc();" for _ in range(times))
    return f"""class Counter{i} {{
  var value: int

  constructor ()
    ensures value == 0
  {{
    value := 0;
  }}

  method Inc()
    modifies this
    ensures value == old(value) + {k}
  {{
    value := value + {k};
  }}

  function Get(): int
    reads this
  {{
    value
  }}
}}

method UseCounter{i}() returns (v: int)
  ensures v == {k * times}
{{
  var c := new Counter{i}();
{calls}
  v := c.Get();
}}
"""


def reverse(i: int, r: random.Random) -> str:
    off = r.randint(0, 3)
    return f"""method Reverse{i}(a: array<int>) returns (b: array<int>)
  ensures b.Length == a.Length
  ensures forall j :: 0 <= j < a.Length ==> b[j] == a[a.Length - 1 - j] + {off}
{{
  b := new int[a.Length];
  for t := 0 to a.Length
@@    invariant forall j :: 0 <= j < t ==> b[j] == a[a.Length - 1 - j] + {off}
  {{
    b[t] := a[a.Length - 1 - t] + {off};
  }}
}}
"""


def sorted_check(i: int, r: random.Random) -> str:
    op = r.choice(list(CMP))
    neg = CMP[op]
    return f"""ghost predicate Ordered{i}(s: seq<int>)
{{
  forall j :: 1 <= j < |s| ==> s[j - 1] {op} s[j]
}}

method IsOrdered{i}(a: array<int>) returns (ok: bool)
  requires a.Length > 0
  ensures ok == Ordered{i}(a[..])
{{
  ok := true;
  for t := 1 to a.Length
@@    invariant ok == (forall j :: 1 <= j < t ==> a[j - 1] {op} a[j])
  {{
    if a[t - 1] {neg} a[t] {{
      ok := false;
    }}
  }}
}}
"""


def abs_diff(i: int, r: random.Random) -> str:
    k = r.randint(0, 20)
    return f"""function Abs{i}(x: int): int
{{
  if x < 0 then -x else x
}}

method AbsDiff{i}(a: int, b: int) returns (d: int)
  ensures d == Abs{i}(a - b) + {k}
  ensures d >= {k}
{{
  d := Abs{i}(a - b) + {k};
}}
"""


def div_mod(i: int, r: random.Random) -> str:
    k = r.randint(2, 12)
    return f"""method DivMod{i}(n: nat) returns (q: nat, m: nat)
  ensures n == q * {k} + m && m < {k}
{{
  q, m := 0, n;
  while m >= {k}
@@    invariant n == q * {k} + m
    decreases m
  {{
    q, m := q + 1, m - {k};
  }}
}}
"""


def even_least(i: int, r: random.Random) -> str:
    k = r.choice([2, 3, 4])
    return f"""least predicate Step{i}(n: nat)
{{
  n == 0 || (n >= {k} && Step{i}(n - {k}))
}}

least lemma StepUp{i}(n: nat)
  requires Step{i}(n)
  ensures Step{i}(n + {k})
{{
}}

method Zero{i}() returns (z: nat)
  ensures Step{i}(z)
{{
  z := 0;
}}
"""


TEMPLATES: list[Callable[[int, random.Random], str]] = [
    sum_for,
    array_extreme,
    find_first,
    count_in,
    fill,
    power,
    triangle,
    counter_class,
    reverse,
    sorted_check,
    abs_diff,
    div_mod,
    even_least,
]

# Dafny 4 files with no sound 2.3 rewrite: the loader must skip them, naming why.
UNREWRITABLE = [
    """method CountDown{i}(n: nat) returns (s: nat)
{{
  s := 0;
  for j := n downto 0
  {{
    s := s + 1;
  }}
}}
""",
    """datatype Shape{i} = Circle(r: nat) | Square(side: nat)
{{
  function Area(): nat {{
    match this
    case Circle(r) => 3 * r * r
    case Square(s) => s * s
  }}
}}

method UseShape{i}() returns (a: nat)
{{
  a := Circle(1).Area();
}}
""",
    """function Get{i}(o: Option<int>): int {{ 0 }}
datatype Option<T> = None | Some(value: T)
method Chain{i}(x: int) returns (y: int)
{{
  var t :- Some(x);
  y := t;
}}
""",
]

SHARED_METHOD = """
method Swap(a: array<int>, i: int, j: int)
  requires 0 <= i < a.Length && 0 <= j < a.Length
  modifies a
  ensures a[i] == old(a[j]) && a[j] == old(a[i])
  ensures forall k :: 0 <= k < a.Length && k != i && k != j ==> a[k] == old(a[k])
{
  a[i], a[j] := a[j], a[i];
}
"""


def _split_hints(template: str) -> tuple[str, str]:
    lines = template.split("\n")
    gold = "\n".join(ln.replace("@@", "", 1) if ln.startswith("@@") else ln for ln in lines)
    bare = "\n".join(ln for ln in lines if not ln.startswith("@@"))
    return gold, bare


def generate(out: Path, programs: int = 780, seed: int = 0) -> dict:
    """Write the corpus under `out` and return what was written, by kind."""
    rng = random.Random(seed)
    truth, hints = out / "ground_truth", out / "hints_removed"
    truth.mkdir(parents=True, exist_ok=True)
    hints.mkdir(parents=True, exist_ok=True)
    kinds: Counter[str] = Counter()
    n_bad = max(3, programs * 4 // 100)
    n_dup = max(2, programs * 2 // 100)
    n_shared = 5
    n_good = programs - n_bad - n_dup
    written: list[str] = []
    for i in range(n_good):
        template = TEMPLATES[i % len(TEMPLATES)]
        text = template(i, rng)
        if i < n_shared * len(TEMPLATES) and i % len(TEMPLATES) == 4:  # `fill` files
            text += SHARED_METHOD  # one identical method in several programs
            kinds["shared_method"] += 1
        gold, bare = _split_hints(text)
        stem = f"gen_{template.__name__}_{i:04d}"
        (truth / f"{stem}.dfy").write_text(f"// generated: {template.__name__}\n{gold}")
        (hints / f"{stem}_no_hints.dfy").write_text(f"// generated: {template.__name__}\n{bare}")
        written.append(stem)
        kinds[template.__name__] += 1
    for j in range(n_bad):
        i = n_good + j
        text = UNREWRITABLE[j % len(UNREWRITABLE)].format(i=i)
        (truth / f"gen_unrewritable_{i:04d}.dfy").write_text(text)
        (hints / f"gen_unrewritable_{i:04d}_no_hints.dfy").write_text(text)
        kinds["unrewritable"] += 1
    for j in range(n_dup):  # the same program under another name, other comments and layout
        stem = written[rng.randrange(len(written))]
        text = (truth / f"{stem}.dfy").read_text()
        copy = "/* a copy kept in another folder */\n" + text.replace("\n\n", "\n\n\n")
        (truth / f"dup_{j:03d}_{stem}.dfy").write_text(copy)
        kinds["duplicate"] += 1
    (hints / "orphan_no_hints.dfy").write_text("method Orphan() { }\n")
    kinds["orphan_twin"] += 1
    return {"root": str(out), "programs": programs, "kinds": dict(sorted(kinds.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--programs", type=int, default=780)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(generate(args.out, args.programs, args.seed), indent=2))


if __name__ == "__main__":
    main()
