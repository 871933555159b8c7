"""vLLM access: `config` (configs/vllm.yaml), `client` (async, spread over servers, retried),
`launcher` (own a local server), `tiny_model` (the random-weight model tests serve).

Kept import-free so `tiny_model` runs inside `.venv-vllm` without the project's dependencies.
"""
