// A bank account that never goes negative.
class Account {
  var balance: int

  constructor ()
    ensures balance == 0
  {
    balance := 0;
  }

  method Deposit(amount: nat)
    modifies this
    ensures balance == old(balance) + amount
  {
    balance := balance + amount;
  }

  method Withdraw(amount: nat) returns (ok: bool)
    requires balance >= 0
    modifies this
    ensures balance >= 0
    ensures ok <==> amount <= old(balance)
    ensures ok ==> balance == old(balance) - amount
    ensures !ok ==> balance == old(balance)
  {
    if amount <= balance {
      balance := balance - amount;
      ok := true;
    } else {
      ok := false;
    }
  }
}
