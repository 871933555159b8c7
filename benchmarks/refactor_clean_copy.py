"""Benchmark: what the clean-copy verdict costs over running the tests in place.

On one workspace of `pathconf` (one rule applied), alternating in the same run:
`run_tests` (the visible files copied into the jail's tree, the workspace set aside and put
back: `runner.run_on_files`, with `-X pycache_prefix`) against `pytest -q` run in place on
the workspace (the way before issue 25), and the copy-swap-restore alone. Prints one JSON
object: the medians and the ratio clean / in place.

    .venv/bin/python benchmarks/refactor_clean_copy.py [--backend bwrap|docker] [--runs 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from verilearn_assets.refactor.config import load_refactor_config
from verilearn_assets.refactor.sources.catalog import load_corpus, load_rules
from verilearn_assets.refactor.verify.clean_copy import visible_files
from verilearn_assets.refactor.verify.jail import run_in_jail
from verilearn_assets.refactor.verify.runner import (
    TestSpec,
    _clean_tree,
    apply_action,
    cleanup,
    prepare_workspace,
    run_tests,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="bwrap", choices=["bwrap", "docker", "none"])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="refactor-clean-bench-"))
    os.environ["VERILEARN_HOME"] = str(home)
    config = load_refactor_config().for_home(home)
    config = config.model_copy(update={"backend": args.backend, "test_cache": None})
    repo = next(r.path for r in load_corpus() if r.name == "pathconf")
    rule = next(r.rule for r in load_rules() if r.id == "eq-none-to-is")
    ws = prepare_workspace("bench-clean-copy", repo, config)
    clean: list[float] = []
    in_place: list[float] = []
    swap: list[float] = []
    try:
        assert apply_action(ws, {"kind": "rule", "rule": rule}).status == "ok"
        argv = ["pytest", "-q"]  # as it ran before: no pycache prefix, in the workspace
        for _ in range(args.runs):
            start = time.perf_counter()
            assert run_tests(ws, TestSpec()).status == "passed"
            clean.append(time.perf_counter() - start)
            start = time.perf_counter()
            done = run_in_jail(config, ws.tree, ws.control, argv, 60, session=ws.jail)
            in_place.append(time.perf_counter() - start)
            assert done.exit_code == 0, done.stdout[-500:]
            start = time.perf_counter()
            with _clean_tree(ws, visible_files(ws, ws.snapshot())):
                pass
            swap.append(time.perf_counter() - start)
    finally:
        cleanup(ws)
    med = statistics.median
    print(
        json.dumps(
            {
                "backend": args.backend,
                "runs": args.runs,
                "clean_copy_median_s": round(med(clean), 4),
                "in_place_median_s": round(med(in_place), 4),
                "ratio_clean_over_in_place": round(med(clean) / med(in_place), 3),
                "copy_swap_restore_median_ms": round(med(swap) * 1000, 2),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
