// Greatest common divisor by subtraction.
function Gcd(a: nat, b: nat): nat
  requires a > 0 && b > 0
  decreases a + b
{
  if a == b then a else if a > b then Gcd(a - b, b) else Gcd(a, b - a)
}

method ComputeGcd(a: nat, b: nat) returns (g: nat)
  requires a > 0 && b > 0
  ensures g == Gcd(a, b)
{
  var x, y := a, b;
  while x != y
    invariant x > 0 && y > 0
    invariant Gcd(x, y) == Gcd(a, b)
    decreases x + y
  {
    if x > y {
      x := x - y;
    } else {
      y := y - x;
    }
  }
  g := x;
}
