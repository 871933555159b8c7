"""Dataset ingestion: catalog → raw copies (bundled or secure download) → typed tables.

Pure logic lives in the small modules here; `assets.py` is the only one importing Dagster.
"""
