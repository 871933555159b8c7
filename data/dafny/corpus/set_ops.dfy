// Build a set of the elements of a sequence.
method ToSet(s: seq<int>) returns (r: set<int>)
  ensures forall x :: x in r <==> x in s
{
  r := {};
  var i := 0;
  while i < |s|
    invariant 0 <= i <= |s|
    invariant forall x :: x in r <==> x in s[..i]
  {
    r := r + {s[i]};
    i := i + 1;
  }
  assert s[..|s|] == s;
}

method Intersect(a: set<int>, b: set<int>) returns (c: set<int>)
  ensures forall x :: x in c <==> x in a && x in b
{
  c := a * b;
}
