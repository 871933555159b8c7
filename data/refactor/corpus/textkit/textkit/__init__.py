"""Small text utilities (refactor corpus: train split)."""
