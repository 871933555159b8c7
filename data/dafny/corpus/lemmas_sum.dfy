// Closed form of 0 + 1 + ... + n, proved by induction.
function Tri(n: nat): nat
{
  if n == 0 then 0 else n + Tri(n - 1)
}

lemma TriClosedForm(n: nat)
  ensures 2 * Tri(n) == n * (n + 1)
{
  if n > 0 {
    TriClosedForm(n - 1);
  }
}

method TriFast(n: nat) returns (t: nat)
  ensures t == Tri(n)
{
  TriClosedForm(n);
  t := n * (n + 1) / 2;
}
