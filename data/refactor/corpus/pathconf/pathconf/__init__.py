"""Layered key=value configuration files (refactor corpus: test split)."""
