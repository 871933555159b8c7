// Count the positive elements of a sequence, counting from the back.
function CountPos(s: seq<int>): nat
{
  if |s| == 0 then 0 else CountPos(s[..|s| - 1]) + (if s[|s| - 1] > 0 then 1 else 0)
}

method CountPositive(s: seq<int>) returns (c: nat)
  ensures c == CountPos(s)
{
  c := 0;
  var i := 0;
  while i < |s|
    invariant 0 <= i <= |s|
    invariant c == CountPos(s[..i])
  {
    assert s[..i + 1][..i] == s[..i];
    if s[i] > 0 {
      c := c + 1;
    }
    i := i + 1;
  }
  assert s[..|s|] == s;
}
