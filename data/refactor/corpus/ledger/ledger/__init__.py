"""A tiny double-entry ledger (refactor corpus: train split)."""

from ledger.accounts import Account, Ledger

__all__ = ["Account", "Ledger"]
