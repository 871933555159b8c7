// The first index of a value in a sequence, or -1.
method IndexOf(s: seq<int>, v: int) returns (idx: int)
  ensures -1 <= idx < |s|
  ensures idx >= 0 ==> s[idx] == v && forall k :: 0 <= k < idx ==> s[k] != v
  ensures idx == -1 ==> forall k :: 0 <= k < |s| ==> s[k] != v
{
  idx := 0;
  while idx < |s|
    invariant 0 <= idx <= |s|
    invariant forall k :: 0 <= k < idx ==> s[k] != v
  {
    if s[idx] == v {
      return;
    }
    idx := idx + 1;
  }
  idx := -1;
}
