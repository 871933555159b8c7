// Index of the smallest element of a non-empty sequence.
method MinIndex(s: seq<int>) returns (idx: nat)
  requires |s| > 0
  ensures idx < |s|
  ensures forall k :: 0 <= k < |s| ==> s[idx] <= s[k]
{
  idx := 0;
  var i := 1;
  while i < |s|
    invariant 1 <= i <= |s|
    invariant idx < i
    invariant forall k :: 0 <= k < i ==> s[idx] <= s[k]
  {
    if s[i] < s[idx] {
      idx := i;
    }
    i := i + 1;
  }
}
