// Whether every element of a sequence is positive.
method AllPositive(s: seq<int>) returns (b: bool)
  ensures b <==> forall k :: 0 <= k < |s| ==> s[k] > 0
{
  var i := 0;
  while i < |s|
    invariant 0 <= i <= |s|
    invariant forall k :: 0 <= k < i ==> s[k] > 0
  {
    if s[i] <= 0 {
      return false;
    }
    i := i + 1;
  }
  return true;
}
