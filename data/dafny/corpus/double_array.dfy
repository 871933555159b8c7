// Double every element of an array in place.
method DoubleAll(a: array<int>)
  modifies a
  ensures forall k :: 0 <= k < a.Length ==> a[k] == 2 * old(a[k])
{
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant forall k :: 0 <= k < i ==> a[k] == 2 * old(a[k])
    invariant forall k :: i <= k < a.Length ==> a[k] == old(a[k])
  {
    a[i] := 2 * a[i];
    i := i + 1;
  }
}
