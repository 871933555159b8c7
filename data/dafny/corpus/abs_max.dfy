// Absolute value and maximum: branches only.
method Abs(x: int) returns (y: int)
  ensures y >= 0
  ensures y == x || y == -x
{
  if x < 0 {
    y := -x;
  } else {
    y := x;
  }
}

method Max3(a: int, b: int, c: int) returns (m: int)
  ensures m >= a && m >= b && m >= c
  ensures m == a || m == b || m == c
{
  m := a;
  if b > m {
    m := b;
  }
  if c > m {
    m := c;
  }
}
