"""An asyncio job queue (refactor corpus: dev split)."""
