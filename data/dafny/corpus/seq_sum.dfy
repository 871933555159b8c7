// Sum of a sequence, summing from the back.
function SeqSum(s: seq<int>): int
{
  if |s| == 0 then 0 else SeqSum(s[..|s| - 1]) + s[|s| - 1]
}

method SumSeq(s: seq<int>) returns (total: int)
  ensures total == SeqSum(s)
{
  total := 0;
  var i := 0;
  while i < |s|
    invariant 0 <= i <= |s|
    invariant total == SeqSum(s[..i])
  {
    assert s[..i + 1][..i] == s[..i];
    total := total + s[i];
    i := i + 1;
  }
  assert s[..|s|] == s;
}
