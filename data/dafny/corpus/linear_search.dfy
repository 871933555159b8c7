// Index of the first occurrence of a key, or -1.
method LinearSearch(a: array<int>, key: int) returns (idx: int)
  ensures -1 <= idx < a.Length
  ensures idx >= 0 ==> a[idx] == key
  ensures idx == -1 ==> forall k :: 0 <= k < a.Length ==> a[k] != key
{
  idx := 0;
  while idx < a.Length
    invariant 0 <= idx <= a.Length
    invariant forall k :: 0 <= k < idx ==> a[k] != key
  {
    if a[idx] == key {
      return;
    }
    idx := idx + 1;
  }
  idx := -1;
}
