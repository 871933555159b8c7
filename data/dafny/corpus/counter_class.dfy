// A class with a validity predicate.
class Counter {
  var value: nat
  var limit: nat

  predicate Valid()
    reads this
  {
    value <= limit
  }

  constructor (lim: nat)
    ensures Valid() && value == 0 && limit == lim
  {
    value := 0;
    limit := lim;
  }

  method Increment()
    requires Valid()
    modifies this
    ensures Valid()
    ensures limit == old(limit)
    ensures old(value) < limit ==> value == old(value) + 1
    ensures old(value) == limit ==> value == limit
  {
    if value < limit {
      value := value + 1;
    }
  }
}
