"""The report assets leave no DuckDB object behind: a test session used to end, after
pytest's summary line, with `nanobind: leaked 1 instances of type DuckDBPyConnection`
(and 27 `DuckDBPyType`s).

The cause: Dagster compiles a record's checked `__new__` (TableSchema, MaterializeResult…)
on its first call from the caller's locals and keeps them for the life of the process, so
the asset frame that held the warehouse connection kept it (and, through the annotations
of the functions in that namespace, DuckDB's connection type and its modules) reachable.
Whatever else a long session keeps alive at exit (a daemon thread, an uncollectable
cycle) then carried it past the interpreter's last collection, and DuckDB's binding
reported it. A single run does not keep Dagster alive that long, so the subprocess below
does it on purpose: a daemon thread holds every class of Dagster and of the project, the
worst case of "something still reachable at exit"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import gc, os, sys, threading, time

import dagster

from resources.home import HomeResource
from resources.warehouse import WarehouseResource
from verilearn_assets.reports.assets import REPORT_ASSETS

result = dagster.materialize(
    REPORT_ASSETS,
    resources={"warehouse": WarehouseResource(home=HomeResource(path=sys.argv[1]))},
    instance=dagster.DagsterInstance.ephemeral(),
)
assert result.success, "the report assets failed"
del result
gc.collect()
live = [o for o in gc.get_objects() if type(o).__name__ == "DuckDBPyConnection"]
print("live DuckDB connections:", len(live))
del live


OWNERS = ("dagster", "verilearn_assets", "resources")


def named(cls):
    module = cls.__dict__.get("__module__")
    return isinstance(module, str) and module.startswith(OWNERS)


held = [o for o in gc.get_objects() if isinstance(o, type) and named(o)]
assert any(c.__name__ == "TableSchema" for c in held), "Dagster's classes not found"


# the thread's frames are threading's and time's, so this module is cleared as usual
holder = threading.Thread(target=time.sleep, args=(3600,), daemon=True)
holder.held = held
holder.start()
del holder, held


class Finalized:
    # writes when shutdown clears this module: the interpreter's leak check follows
    def __del__(self, write=os.write):
        write(2, b"interpreter finalized\\n")


sentinel = Finalized()
"""


def test_report_assets_leave_no_duckdb_object_at_exit(small_lake: Path) -> None:
    env = {**os.environ, "VERILEARN_HOME": str(small_lake)}
    env["DAGSTER_HOME"] = str(small_lake / "dagster")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(small_lake)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    # right after the run, once garbage is collected: nothing holds a connection
    assert "live DuckDB connections: 0" in proc.stdout, proc.stdout
    # the interpreter went through its shutdown (an os._exit would skip the leak check)
    assert "interpreter finalized" in proc.stderr, proc.stderr[-2000:]
    # and at exit, with Dagster's classes still reachable: no leak report
    report = [line for line in proc.stderr.splitlines() if "leaked" in line]
    assert not report, "\n".join(report[:30])
