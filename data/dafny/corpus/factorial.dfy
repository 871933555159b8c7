// Iterative factorial against the recursive definition.
function Fact(n: nat): nat
{
  if n == 0 then 1 else n * Fact(n - 1)
}

method ComputeFact(n: nat) returns (f: nat)
  ensures f == Fact(n)
{
  f := 1;
  var i := 0;
  while i < n
    invariant 0 <= i <= n
    invariant f == Fact(i)
  {
    i := i + 1;
    f := f * i;
  }
}
