// Whether an array holds a value.
method Contains(a: array<int>, v: int) returns (found: bool)
  ensures found <==> exists k :: 0 <= k < a.Length && a[k] == v
{
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant forall k :: 0 <= k < i ==> a[k] != v
  {
    if a[i] == v {
      return true;
    }
    i := i + 1;
  }
  return false;
}
