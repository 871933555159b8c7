"""The verifier: actions validated and run in the jail on a workspace, diffs, tests and the
verdict from a clean copy."""
