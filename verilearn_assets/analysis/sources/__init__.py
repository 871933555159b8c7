"""Where analysis questions come from, one module or package per `source`: `template` (the
template library), `procedural` (typed program search), `llm` (proposed by a model, decided by
triangulated traces); and what they share: the `Candidate` they propose, `generate` (one
table's candidates), `build` (one partition: generate, verify, summarise)."""
