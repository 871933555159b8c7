// Multiplication by repeated addition.
method Multiply(a: nat, b: nat) returns (p: nat)
  ensures p == a * b
{
  p := 0;
  var i := 0;
  while i < b
    invariant 0 <= i <= b
    invariant p == a * i
  {
    p := p + a;
    i := i + 1;
  }
}
