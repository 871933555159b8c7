// Product of a sequence, multiplying from the back.
function Prod(s: seq<int>): int
{
  if |s| == 0 then 1 else Prod(s[..|s| - 1]) * s[|s| - 1]
}

method Product(s: seq<int>) returns (p: int)
  ensures p == Prod(s)
{
  p := 1;
  var i := 0;
  while i < |s|
    invariant 0 <= i <= |s|
    invariant p == Prod(s[..i])
  {
    assert s[..i + 1][..i] == s[..i];
    p := p * s[i];
    i := i + 1;
  }
  assert s[..|s|] == s;
}
