"""Dafny 4 programs the dialect, CLI and corpus tests share (2.3 reads them only rewritten)."""


def acc_for(k: int) -> str:
    """A ghost function and a `for` loop: `ComputeAcc(n)` sums `k * i` for i in 1..n."""
    return f"""ghost function Acc(n: nat): int
{{
  if n == 0 then 0 else Acc(n - 1) + {k} * n
}}

method ComputeAcc(n: nat) returns (s: int)
  ensures s == Acc(n)
{{
  s := 0;
  for j := 0 to n
    invariant s == Acc(j)
  {{
    s := s + {k} * (j + 1);
  }}
}}
"""
