// Linear-time Fibonacci against the exponential definition.
function Fib(n: nat): nat
{
  if n < 2 then n else Fib(n - 1) + Fib(n - 2)
}

method ComputeFib(n: nat) returns (r: nat)
  ensures r == Fib(n)
{
  if n == 0 {
    return 0;
  }
  var prev := 0;
  var cur := 1;
  var i := 1;
  while i < n
    invariant 1 <= i <= n
    invariant prev == Fib(i - 1)
    invariant cur == Fib(i)
  {
    prev, cur := cur, prev + cur;
    i := i + 1;
  }
  r := cur;
}
