"""The smoke suite: a few programs with hand-known answers, run through the real sandbox.

It guards training against a broken runtime (a pandas upgrade that changes `submit`
normalisation, a sandbox that leaks state between tasks or lets a socket out) — failures
that per-question checks cannot see because they would move every answer together.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from verilearn_assets.core.contract import RuleOutcome
from verilearn_assets.core.records import canonical_json

SMOKE_TABLE = pd.DataFrame(
    {
        "group": ["a", "a", "b", "b", "b", "c"],
        "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        "y": [2, 4, 6, 8, 10, 12],
    }
)

# (name, program, expected canonical JSON answer); None expected = must not submit
SMOKE_PROGRAMS: list[tuple[str, str, str | None]] = [
    ("mean", "submit(df['x'].mean())", canonical_json(3.5)),
    ("groupby_max", "m = df.groupby('group')['x'].mean()\nsubmit(m.idxmax())", canonical_json("c")),
    ("one_by_one_frame", "submit(df[['y']].sum().to_frame().T)", canonical_json(42)),
    (
        "series_to_mapping",
        "submit(df.groupby('group')['y'].sum())",
        canonical_json({"a": 6, "b": 24, "c": 12}),
    ),
    ("mutate_table", "df['x'] = 0\nsubmit(float(df['x'].sum()))", canonical_json(0.0)),
    ("table_pristine_after_mutation", "submit(float(df['x'].sum()))", canonical_json(21.0)),
    ("leftover_global", "leak = 1\nsubmit(1)", canonical_json(1)),
    ("no_leftover_global", "submit('leak' in globals())", canonical_json(False)),
    (
        "network_blocked",
        "import socket\ns = socket.socket()\ns.settimeout(2)\ns.connect(('1.1.1.1', 53))\n"
        "submit('escaped')",
        None,
    ),
]


def write_smoke_table(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "smoke_table.parquet"
    SMOKE_TABLE.to_parquet(path, index=False)
    return path


def run_smoke_suite(sandbox_config, directory: Path) -> RuleOutcome:
    """Run every smoke program in its own fresh task (in order) and compare answers."""
    from verilearn_assets.core.sandbox.pool import run_programs_sync

    table = str(write_smoke_table(directory))
    results = run_programs_sync(sandbox_config, [(code, table) for _, code, _ in SMOKE_PROGRAMS])
    failures = []
    for (name, _, expected), res in zip(SMOKE_PROGRAMS, results, strict=True):
        if expected is None:
            if res.submissions:
                failures.append(f"{name}: expected no submission, got {res.submissions}")
        elif res.status != "ok" or res.submissions != [expected]:
            failures.append(
                f"{name}: status={res.status} submissions={res.submissions} "
                f"expected [{expected}]; stderr={res.stderr[-300:]!r}"
            )
    return RuleOutcome(rule="smoke_suite", checked=len(SMOKE_PROGRAMS), failures=failures)
