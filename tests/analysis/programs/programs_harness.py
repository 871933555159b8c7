"""A minimal in-process stand-in for the sandbox's `hook`/`submit`, for running compiled code.

It records what the sandbox would check: each hook's code line must be a line of the
executed code (after whitespace normalisation), and exactly one answer is submitted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats


def _norm(line: str) -> str:
    return " ".join(line.split())


@dataclass
class Run:
    hooks: list[dict[str, Any]] = field(default_factory=list)
    submissions: list[Any] = field(default_factory=list)


def execute(code: str, df: pd.DataFrame) -> Run:
    run = Run()
    code_lines = {_norm(line) for line in code.splitlines()}

    def hook(value: Any, code_line: str, name: str = "", depends_on: list[str] | None = None):
        if _norm(code_line) not in code_lines:
            raise AssertionError(f"hook {name!r}: code line is not in the program: {code_line}")
        run.hooks.append(
            {"name": name, "line": code_line, "depends_on": depends_on or [], "value": value}
        )
        return value

    env = {
        "df": df.copy(),
        "pd": pd,
        "np": np,
        "stats": stats,
        "hook": hook,
        "submit": run.submissions.append,
    }
    exec(compile(code, "<program>", "exec"), env)
    return run
