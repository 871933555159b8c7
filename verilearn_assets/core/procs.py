"""Whether a process id still names a running process.

`os.kill(pid, 0)` succeeds on a zombie: a process that exited but was not reaped yet. A
detached daemon (a Celery worker, a dockerd) is adopted by init or a subreaper when its
parent goes, and some machines' init reaps only every few seconds or minutes, so its
pid answers `kill -0` long after it stopped.
"""

from __future__ import annotations

from pathlib import Path


def state(pid: int) -> str | None:
    """The process's state letter from Linux `/proc` (`R`, `S`, `Z`, ...); None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # the state follows the command name, which may itself hold spaces and parentheses
    return stat.rsplit(")", 1)[1].split()[0]


def running(pid: int) -> bool:
    """`pid` exists and is not a zombie."""
    return state(pid) not in (None, "Z")
