"""The analysis family's gate rules as plain functions: `questions` (contract, split hygiene,
hashes, floors, conventions) and `episodes` (trace integrity, hook grounding, verification).
`family.py` binds them to a `RuleContext`."""
