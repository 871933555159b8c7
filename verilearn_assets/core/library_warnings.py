"""Library warnings about APIs the graph uses on purpose: kept off the console, not lost.

Dagster flags its beta and preview APIs every time the code location is imported (the
split mapping of `sft_dataset`, partitioned asset checks). We chose those APIs knowingly,
so on a `verilearn` command's console they only make a user think something went wrong.
`keep_off_console()` drops exactly those warnings (category name and message start, so a
new warning still shows) when they would reach the real terminal; when stderr is
redirected to a log file (`verilearn demo` loads the code location into its log), they are
written there as before. pytest records warnings itself (`catch_warnings(record=True)`
bypasses this hook), so the test summary is unchanged.

Pure Python: the categories are matched by name, so nothing here imports Dagster.
"""

from __future__ import annotations

import sys
import warnings
from typing import TextIO

# (category class name, module prefix of the category, start of the message)
KNOWN: tuple[tuple[str, str, str], ...] = (
    ("BetaWarning", "dagster", "Class `MultiToSingleDimensionPartitionMapping`"),
    ("PreviewWarning", "dagster", "Specifying a partitions_def on an AssetCheckSpec"),
)


def is_known(message: Warning | str, category: type[Warning]) -> bool:
    """Whether this warning is one we chose to accept (see `KNOWN`)."""
    text = str(message)
    return any(
        category.__name__ == name
        and category.__module__.startswith(module)
        and text.startswith(start)
        for name, module, start in KNOWN
    )


def keep_off_console() -> None:
    """Install (once per process) the `warnings.showwarning` that drops `KNOWN` warnings
    bound for the terminal and shows everything else exactly as before."""
    previous = warnings.showwarning
    if getattr(previous, "_verilearn_quiet", False):
        return

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        target = file if file is not None else sys.stderr
        if is_known(message, category) and target is sys.__stderr__:
            return
        previous(message, category, filename, lineno, file, line)

    show._verilearn_quiet = True  # type: ignore[attr-defined]
    warnings.showwarning = show
