// n * n as the sum of the first n odd numbers.
method Square(n: nat) returns (s: nat)
  ensures s == n * n
{
  s := 0;
  var i := 0;
  while i < n
    invariant 0 <= i <= n
    invariant s == i * i
  {
    s := s + 2 * i + 1;
    i := i + 1;
  }
}
