"""The rollout of analysis questions: the teacher loop, where a policy writes code cells, the
sandbox runs them and traces are verified.

Pure domain logic — nothing here imports Dagster. `run_episode` drives one trace;
`triangulate` decides `llm` questions by agreement between independent traces.
"""
