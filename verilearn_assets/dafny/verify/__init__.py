"""The Dafny verifier: toolchain, server pool, verdicts, their cache, the anti-cheat screen."""
