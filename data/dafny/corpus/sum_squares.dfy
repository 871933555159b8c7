// Sum of the squares 1*1 + ... + n*n by a loop.
function SumSq(n: nat): nat
{
  if n == 0 then 0 else SumSq(n - 1) + n * n
}

method ComputeSumSquares(n: nat) returns (s: nat)
  ensures s == SumSq(n)
{
  s := 0;
  var i := 0;
  while i < n
    invariant 0 <= i <= n
    invariant s == SumSq(i)
  {
    i := i + 1;
    s := s + i * i;
  }
}
