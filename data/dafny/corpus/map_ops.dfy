// Maps: counting keys and updating a histogram entry.
method Bump(m: map<int, nat>, k: int) returns (r: map<int, nat>)
  ensures k in r
  ensures k in m ==> r[k] == m[k] + 1
  ensures k !in m ==> r[k] == 1
  ensures forall j :: j in m && j != k ==> j in r && r[j] == m[j]
  ensures forall j :: j in r ==> j in m || j == k
{
  if k in m {
    r := m[k := m[k] + 1];
  } else {
    r := m[k := 1];
  }
}

method Histogram(s: seq<int>) returns (h: map<int, nat>)
  ensures forall x :: x in s ==> x in h
  ensures forall x :: x in h ==> x in s
  ensures forall x :: x in h ==> h[x] == multiset(s)[x]
{
  h := map[];
  var i := 0;
  while i < |s|
    invariant 0 <= i <= |s|
    invariant forall x :: x in s[..i] ==> x in h
    invariant forall x :: x in h ==> x in s[..i]
    invariant forall x :: x in h ==> h[x] == multiset(s[..i])[x]
  {
    assert s[..i + 1] == s[..i] + [s[i]];
    h := Bump(h, s[i]);
    i := i + 1;
  }
  assert s[..|s|] == s;
}
