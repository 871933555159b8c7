"""Benchmark: the report views and marts over 10k, 100k and 1M synthetic episode rows.

Writes a synthetic lake per size (episodes, a quarter as many questions, and a fixed set of
tables; the columns are exactly the record models' Polars schemas), builds every staging
view and mart in a fresh warehouse, and prints the time per model and the growth ratio
between sizes. Group cardinalities (datasets, templates, teachers) stay fixed, so only the
row count grows: cost that grows no worse than linearly shows as a ratio <= the size ratio.

    .venv/bin/python benchmarks/reports.py [--sizes 10000 100000 1000000] [--check]
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import get_args

import numpy as np
import polars as pl

from verilearn_assets.analysis.records import Episode, QuestionRecord
from verilearn_assets.analysis.records import FailureClass as _FailureClass
from verilearn_assets.core import lake
from verilearn_assets.core.records import SOURCES, SPLITS, AnswerSchema, TableRecord, canonical_json
from verilearn_assets.core.warehouse import (
    build_model,
    discover_sql_models,
    order_models,
    warehouse_path,
    writer,
)

DATASETS = 60  # 20 per split: a dataset never spans two splits
TABLES_PER_DATASET = 3
TEMPLATES = [f"tmpl_{i:02d}" for i in range(12)]
OP_FAMILIES = ["filter", "groupby", "aggregate", "sort", "join", "window"]
TEACHERS = {"program": 0.97, "llm-small": 0.55, "llm-large": 0.78}  # teacher -> pass prob.
REJECTIONS = [
    "answer mismatch on re-execution",
    "ambiguous: alternatives disagree",
    "execution failure",
    "trivial answer",
    "too many steps",
]
FAILURES = list(get_args(_FailureClass))
ANSWER_SCHEMA = canonical_json(AnswerSchema(kind="number").model_dump(mode="json"))


def _dataset_split(n: int) -> np.ndarray:
    return np.array([SPLITS[i % len(SPLITS)] for i in range(n)])


def synthetic_tables() -> pl.DataFrame:
    ds = np.repeat(np.arange(DATASETS), TABLES_PER_DATASET)
    n = len(ds)
    return pl.DataFrame(
        {
            "id": _names("t", np.arange(n), 5),
            "dataset": _names("ds", ds, 3),
            "name": [f"table_{i}.csv" for i in range(n)],
            "split": _dataset_split(DATASETS)[ds],
            "path": [f"/data/t{i:05d}.parquet" for i in range(n)],
            "n_rows": (np.arange(n) * 37 % 5000 + 100).astype(np.int64),
            "n_columns": (np.arange(n) % 20 + 2).astype(np.int64),
            "sha256": ["0" * 64] * n,
            "columns": ["[]"] * n,
        },
        schema=TableRecord.polars_schema(),
    )


def _names(prefix: str, ix: np.ndarray, width: int) -> pl.Series:
    return prefix + pl.Series(ix).cast(pl.Utf8).str.zfill(width)


def _const(value: str, n: int) -> pl.Series:
    return pl.repeat(value, n, eager=True)


def _const_list(value: str, n: int) -> pl.Series:
    return _const(value, n).to_frame("v").select(pl.concat_list("v"))["v"]


def synthetic_questions(n: int, rng: np.random.Generator) -> pl.DataFrame:
    source = rng.choice(SOURCES, n)
    dataset_ix = rng.integers(0, DATASETS, n)
    template = pl.Series(rng.choice(TEMPLATES, n)).set(pl.Series(source != "template"), None)
    combos = [sorted(rng.choice(OP_FAMILIES, 1 + i % 3, replace=False).tolist()) for i in range(24)]
    ops = pl.Series([combos[i] for i in range(24)], dtype=pl.List(pl.Utf8))[rng.integers(0, 24, n)]
    ops = ops.to_frame("ops").select(
        pl.when(pl.Series(source == "procedural"))
        .then(pl.col("ops"))
        .otherwise(pl.lit([], dtype=pl.List(pl.Utf8)))
    )["ops"]
    accepted = rng.random(n) < 0.85
    alt = '[{"answer":"2.0","answer_hash":"h2","code":"answer = 2.0","description":"other"}]'
    reasons = pl.Series(rng.choice(REJECTIONS, n)).set(pl.Series(accepted), None)
    return pl.DataFrame(
        {
            "id": _names("q", np.arange(n), 8),
            "family": _const("analysis", n),
            "source": source,
            "split": _dataset_split(DATASETS)[dataset_ix],
            "dataset": _names("ds", dataset_ix, 3),
            "table": _names("t", dataset_ix * TABLES_PER_DATASET, 5),
            "question": _const("What is the mean of x per group?", n),
            "question_mechanical": _const("mean(x) by g", n),
            "answer_schema": _const(ANSWER_SCHEMA, n),
            "answer": _const("1.0", n),
            "answer_hashes": _const_list("h1", n),
            "code": _const("answer = df.groupby('g')['x'].mean()", n),
            "alternatives": np.where(rng.random(n) < 0.1, alt, "[]"),
            "n_steps": rng.integers(1, 6, n),
            "difficulty": rng.choice(["easy", "medium", "hard"], n),
            "template": template,
            "program_ops": ops,
            "op_families": ops,
            "hooks": _const("[]", n),
            "status": np.where(accepted, "accepted", "rejected"),
            "rejection_reason": reasons,
            "conventions": [[] for _ in range(n)],
            "readability": rng.uniform(1, 5, n).round(2),
        },
        schema=QuestionRecord.polars_schema(),
    )


def synthetic_episodes(n: int, questions: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    accepted = questions.filter(pl.col("status") == "accepted")
    picked = accepted[rng.integers(0, accepted.height, n)]
    teacher_ix = rng.integers(0, len(TEACHERS), n)
    verified = rng.random(n) < np.array(list(TEACHERS.values()))[teacher_ix]
    hooks_total = rng.integers(0, 7, n)
    hooks_grounded = (hooks_total * rng.random(n)).astype(np.int64)
    hooks_malformed = ((hooks_total - hooks_grounded) * rng.random(n) * 0.5).astype(np.int64)
    failure = pl.Series(rng.choice(FAILURES, n)).set(pl.Series(verified), None)
    return pl.DataFrame(
        {
            "id": _names("e", np.arange(n), 9),
            "question_id": picked["id"],
            "family": _const("analysis", n),
            "source": picked["source"],
            "split": picked["split"],
            "dataset": picked["dataset"],
            "template": picked["template"],
            "teacher": np.array(list(TEACHERS))[teacher_ix],
            "sampling_key": _const("k0", n),
            "role": _const("single", n),
            "messages": '[{"content":"Question '
            + picked["id"]
            + '","kind":"prompt","role":"user","turn":0}]',
            "cells": _const("[]", n),
            "submissions": _const_list("1.0", n),
            "answer": np.where(verified, "1.0", "2.0"),
            "hooks": _const("[]", n),
            "hooks_total": hooks_total,
            "hooks_grounded": hooks_grounded,
            "hooks_malformed": hooks_malformed,
            "verified": verified,
            "failure_class": failure,
            "n_turns": rng.integers(2, 12, n),
            "prompt_tokens": rng.integers(200, 4000, n),
            "completion_tokens": rng.integers(50, 1500, n),
            "duration_ms": rng.random(n) * 20000,
        },
        schema=Episode.polars_schema(),
    )


def write_lake(root: Path, n_episodes: int, seed: int = 7) -> dict[str, int]:
    """Write the synthetic lake under `root` (a lake root); returns the row counts."""
    rng = np.random.default_rng(seed)
    tables = synthetic_tables()
    questions = synthetic_questions(max(n_episodes // 4, 1), rng)
    episodes = synthetic_episodes(n_episodes, questions, rng)
    for (split,), part in tables.group_by(["split"]):
        lake.write_partition("tables", part, root, split=split)
    for asset, frame in (("questions", questions), ("episodes", episodes)):
        for (source, split), part in frame.group_by(["source", "split"]):
            lake.write_partition(f"analysis/{asset}", part, root, source=source, split=split)
    return {"tables": tables.height, "questions": questions.height, "episodes": episodes.height}


def time_models(home: Path, repeat: int = 3) -> dict[str, float]:
    """Best-of-`repeat` seconds to build each view/mart (dependency order): the best run is
    the least disturbed by other work on a shared machine."""
    timings: dict[str, float] = {}
    with writer(warehouse_path(home)) as con:
        for model in order_models(discover_sql_models()):
            runs = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                build_model(con, model, lake.lake_root(home))
                runs.append(time.perf_counter() - t0)
            timings[model.name] = min(runs)
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where to write the synthetic lakes (default: a temp dir)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per model; best counts")
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if the marts' total cost grows faster than linearly",
    )
    args = parser.parse_args(argv)
    sizes = sorted(args.sizes)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="verilearn-bench-"))
    results: dict[int, dict[str, float]] = {}
    try:
        for n in sizes:
            home = work / f"n{n}"
            shutil.rmtree(home, ignore_errors=True)
            t0 = time.perf_counter()
            counts = write_lake(lake.lake_root(home), n)
            gen = time.perf_counter() - t0
            results[n] = time_models(home, args.repeat)
            print(
                f"n={n:>9,}: wrote {counts['episodes']:,} episodes, "
                f"{counts['questions']:,} questions, {counts['tables']} tables in "
                f"{gen:.1f}s; built {len(results[n])} models in "
                f"{sum(results[n].values()):.2f}s",
                flush=True,
            )
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    return report(sizes, results, args.check)


def report(sizes: list[int], results: dict[int, dict[str, float]], check: bool) -> int:
    names = list(results[sizes[0]])
    steps = list(zip(sizes, sizes[1:], strict=False))
    head = (
        f"{'model':<26}"
        + "".join(f"{n:>11,}" for n in sizes)
        + "".join(f"{f'x{b // a} rows':>13}" for a, b in steps)
    )
    print("\nseconds per model (views are lazy: their scan cost shows in the marts)")
    print(head)
    print("-" * len(head))
    rows = [*names, "TOTAL marts"]
    for name in rows:
        if name == "TOTAL marts":
            times = [sum(t for m, t in results[n].items() if m.startswith("mart_")) for n in sizes]
        else:
            times = [results[n][name] for n in sizes]
        ratios = "".join(f"{f'{b / a:.1f}x':>13}" for a, b in zip(times, times[1:], strict=False))
        print(f"{name:<26}" + "".join(f"{t:>11.3f}" for t in times) + ratios)
    total = [sum(t for m, t in results[n].items() if m.startswith("mart_")) for n in sizes]
    worst = 0.0
    for (a, b), (ta, tb) in zip(steps, zip(total, total[1:], strict=False), strict=True):
        exponent = math.log(tb / ta) / math.log(b / a)
        worst = max(worst, exponent)
        print(
            f"growth {a:,} -> {b:,} rows: time x{tb / ta:.2f} for rows x{b / a:.0f} "
            f"(exponent {exponent:.2f}; 1.00 = linear)"
        )
    verdict = "no worse than linear" if worst <= 1.1 else "SUPERLINEAR"
    print(f"verdict: {verdict} (worst exponent {worst:.2f})")
    return 1 if check and worst > 1.1 else 0


if __name__ == "__main__":
    sys.exit(main())
