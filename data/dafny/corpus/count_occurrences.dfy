// Count how often a value occurs in a sequence.
function Count(s: seq<int>, v: int): nat
{
  if |s| == 0 then 0 else (if s[0] == v then 1 else 0) + Count(s[1..], v)
}

lemma CountAppend(s: seq<int>, x: int, v: int)
  ensures Count(s + [x], v) == Count(s, v) + (if x == v then 1 else 0)
{
  if |s| == 0 {
    assert s + [x] == [x];
  } else {
    assert (s + [x])[1..] == s[1..] + [x];
    CountAppend(s[1..], x, v);
  }
}

method CountOccurrences(s: seq<int>, v: int) returns (c: nat)
  ensures c == Count(s, v)
{
  c := 0;
  var i := 0;
  while i < |s|
    invariant 0 <= i <= |s|
    invariant c == Count(s[..i], v)
  {
    assert s[..i + 1] == s[..i] + [s[i]];
    CountAppend(s[..i], s[i], v);
    if s[i] == v {
      c := c + 1;
    }
    i := i + 1;
  }
  assert s[..|s|] == s;
}
