"""Dafny's surface language as we need it: tokens, declarations, the 4 → 2.3 dialect."""
