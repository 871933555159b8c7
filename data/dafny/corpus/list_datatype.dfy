// A recursive list datatype: length and append.
datatype List = Nil | Cons(head: int, tail: List)

function Length(l: List): nat
{
  match l
  case Nil => 0
  case Cons(_, t) => 1 + Length(t)
}

function method Append(a: List, b: List): List
{
  match a
  case Nil => b
  case Cons(h, t) => Cons(h, Append(t, b))
}

lemma AppendLength(a: List, b: List)
  ensures Length(Append(a, b)) == Length(a) + Length(b)
{
  match a
  case Nil =>
  case Cons(_, t) => AppendLength(t, b);
}

lemma AppendAssoc(a: List, b: List, c: List)
  ensures Append(Append(a, b), c) == Append(a, Append(b, c))
{
  match a
  case Nil =>
  case Cons(_, t) => AppendAssoc(t, b, c);
}

method AppendThree(a: List, b: List, c: List) returns (r: List)
  ensures Length(r) == Length(a) + Length(b) + Length(c)
  ensures r == Append(Append(a, b), c)
{
  AppendAssoc(a, b, c);
  AppendLength(b, c);
  AppendLength(a, Append(b, c));
  r := Append(a, Append(b, c));
}
