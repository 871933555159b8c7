// Replace every element of an array by its absolute value.
function Abs(x: int): int
{
  if x < 0 then -x else x
}

method AbsAll(a: array<int>)
  modifies a
  ensures forall k :: 0 <= k < a.Length ==> a[k] == Abs(old(a[k]))
{
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant forall k :: 0 <= k < i ==> a[k] == Abs(old(a[k]))
    invariant forall k :: i <= k < a.Length ==> a[k] == old(a[k])
  {
    if a[i] < 0 {
      a[i] := -a[i];
    }
    i := i + 1;
  }
}
