// Sum 0 + 1 + ... + n with a loop, against a recursive definition.
function SumTo(n: nat): nat
{
  if n == 0 then 0 else n + SumTo(n - 1)
}

method ComputeSum(n: nat) returns (s: nat)
  ensures s == SumTo(n)
{
  s := 0;
  var i := 0;
  while i < n
    invariant 0 <= i <= n
    invariant s == SumTo(i)
  {
    i := i + 1;
    s := s + i;
  }
}
