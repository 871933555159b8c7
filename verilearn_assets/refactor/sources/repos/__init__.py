"""Real repositories (published packages) as refactor corpora: the test baseline taken at
ingestion (`baseline.py`) and task mining on their code (`mining.py`)."""
