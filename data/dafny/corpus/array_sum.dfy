// Sum of an array's elements, through its sequence of values.
function Sum(s: seq<int>): int
{
  if |s| == 0 then 0 else Sum(s[..|s| - 1]) + s[|s| - 1]
}

method ArraySum(a: array<int>) returns (total: int)
  ensures total == Sum(a[..])
{
  total := 0;
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant total == Sum(a[..i])
  {
    assert a[..i + 1][..i] == a[..i];
    total := total + a[i];
    i := i + 1;
  }
  assert a[..a.Length] == a[..];
}
