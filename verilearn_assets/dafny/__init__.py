"""The Dafny family: writer (spec → body) and annotator (body → proof hints) tasks,
verified by Dafny itself through a pool of long-lived, jailed verifier processes."""
