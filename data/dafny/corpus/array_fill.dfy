// Set every element of an array to one value.
method Fill(a: array<int>, v: int)
  modifies a
  ensures forall k :: 0 <= k < a.Length ==> a[k] == v
{
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant forall k :: 0 <= k < i ==> a[k] == v
  {
    a[i] := v;
    i := i + 1;
  }
}
