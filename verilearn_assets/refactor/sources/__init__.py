"""Where refactor tasks come from: the rule catalog and corpora, generated (template,
procedural), mined from real repositories, and proposed by a model (llm)."""
