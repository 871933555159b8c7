"""The one progress bar every long CLI command shows (demo runs, training steps, evaluation)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def progress_bar(console: Console) -> Progress:
    """Description, bar, done/total and elapsed time; cleared when done (the command then
    prints its own summary line)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
