"""Where the verilearn home is: the one resolver every reader of `VERILEARN_HOME` calls.

The home holds the lake, the warehouse, the Dagster instance, run directories, caches and
logs. An explicit path wins (a `--home` flag, `HomeResource.path`), then `VERILEARN_HOME`,
then `./.verilearn`; the result is absolute, so a later `chdir` cannot move it. Configured
paths written as `${VERILEARN_HOME}/...` expand against the same answer, so a log file and
the lake never disagree about where the home is.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "VERILEARN_HOME"
DEFAULT_HOME = ".verilearn"


def resolve_home(explicit: str | Path | None = None) -> Path:
    """`explicit`, else `$VERILEARN_HOME`, else `./.verilearn`, as an absolute path.

    Creates nothing: `core/lake.py`'s `home()` creates it where a writer needs it.
    """
    return Path(explicit or os.environ.get(HOME_ENV, DEFAULT_HOME)).resolve()


def expand_home(path: str) -> Path:
    """A configured path with `${VERILEARN_HOME}` / `$VERILEARN_HOME` replaced by the home,
    other `$VARS` and `~` expanded; absolute."""
    home = str(resolve_home())
    expanded = path.replace("${" + HOME_ENV + "}", home).replace("$" + HOME_ENV, home)
    return Path(os.path.expanduser(os.path.expandvars(expanded))).resolve()
