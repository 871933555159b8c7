// Check whether an array is sorted.
method IsSorted(a: array<int>) returns (sorted: bool)
  ensures sorted <==> forall i :: 0 < i < a.Length ==> a[i - 1] <= a[i]
{
  sorted := true;
  var i := 1;
  while i < a.Length
    invariant 1 <= i || a.Length == 0
    invariant i <= a.Length || a.Length == 0
    invariant sorted <==> forall k :: 0 < k < i && k < a.Length ==> a[k - 1] <= a[k]
  {
    if a[i - 1] > a[i] {
      return false;
    }
    i := i + 1;
  }
}
