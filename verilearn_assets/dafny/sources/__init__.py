"""Where Dafny tasks come from: template pairings, procedural mutants, LLM proposals."""
