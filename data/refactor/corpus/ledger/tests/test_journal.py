import asyncio
import os.path

import pytest

from ledger import Ledger
from ledger.journal import Journal, Transaction, load_journal, parent_of, parse_line, replay

TEXT = """# opening
2024-01-01 | salary | assets:bank 3000; income:salary -3000
2024-01-03 | rent | expenses:rent 1200; assets:bank -1200

2024-02-01 | groceries | expenses:food 80; assets:cash -80
"""


def test_parse_line():
    txn = parse_line("2024-01-01 | pay | a 5; b -5")
    assert txn.date == "2024-01-01" and txn.memo == "pay"
    assert txn.legs == [("a", 5), ("b", -5)]
    assert txn.is_balanced()
    assert parse_line("  # note") is None
    assert parse_line("") is None
    with pytest.raises(ValueError):
        parse_line("2024-01-01 | only two")
    with pytest.raises(ValueError):
        parse_line("2024-01-01 | pay | 5")


def test_transaction_round_trip():
    txn = Transaction("2024-03-01", "move", [("cash", -7)])
    txn.add("bank", 7)
    assert txn.to_line() == "2024-03-01 | move | cash -7; bank 7"
    assert parse_line(txn.to_line()).legs == txn.legs
    assert txn.touches("bank") and not txn.touches("card")
    assert not Transaction("d", "m").is_balanced()


def test_parent_of():
    assert parent_of("expenses:food:lunch") == "expenses:food"
    assert parent_of("cash") is None


def test_load_apply_and_dump(tmp_path):
    path = tmp_path / "2024.journal"
    path.write_text(TEXT)
    journal = load_journal(str(path))
    assert [t.memo for t in journal.transactions] == ["salary", "rent", "groceries"]
    assert [t.memo for t in journal.between(start="2024-01-02")] == ["rent", "groceries"]
    assert [t.memo for t in journal.between(end="2024-01-31")] == ["salary", "rent"]
    ledger = Ledger()
    assert journal.apply(ledger) == 6
    assert ledger.balanced()
    assert ledger.find("assets:bank").balance() == 1800
    assert ledger.children("expenses") == ["expenses:food", "expenses:rent"]
    out = journal.dump(str(tmp_path), "copy.txt")
    assert os.path.basename(out) == "copy.txt"
    assert len(load_journal(out).transactions) == 3


def test_record_refuses_unbalanced_and_missing_file(tmp_path):
    journal = Journal()
    with pytest.raises(ValueError):
        journal.record(Transaction("d", "oops", [("a", 1), ("b", 2)]))
    with pytest.raises(FileNotFoundError):
        load_journal(os.path.join(str(tmp_path), "none.journal"))


def test_replay_async_feed():
    async def feed():
        for line in TEXT.splitlines():
            await asyncio.sleep(0)
            yield line

    journal = Journal()
    assert asyncio.run(replay(feed(), journal)) == 3
    assert journal.transactions[-1].memo == "groceries"
