"""What a training run on Dafny rows records of the toolchain (`Family.tool_versions`):
the Dafny version, so a run's system.json names the verifier its rewards came from."""

from __future__ import annotations

import re
import subprocess


def dafny_version() -> str | None:
    try:
        out = subprocess.run(
            ["dafny", "/version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Dafny\s+([0-9][0-9.]*)", out.stdout + out.stderr)
    return m.group(1) if m else None


def tool_versions() -> dict[str, str | None]:
    return {"dafny": dafny_version()}
