// Quotient and remainder by repeated subtraction.
method Divide(n: nat, d: nat) returns (q: nat, r: nat)
  requires d > 0
  ensures n == q * d + r
  ensures r < d
{
  q := 0;
  r := n;
  while r >= d
    invariant n == q * d + r
    decreases r
  {
    q := q + 1;
    r := r - d;
  }
}
