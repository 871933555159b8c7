"""The analysis verifier: candidates become questions only through clean re-execution in the
sandbox, and stored questions are re-verified the same way."""
