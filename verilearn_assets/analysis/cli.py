"""`verilearn questions generate|verify`: questions for one CSV, and their re-verification.

`generate` reads and types the CSV, profiles it, generates candidates, verifies them in the
sandbox and writes every QuestionRecord (accepted and rejected) to FILE.parquet. The typed
table and its TableRecord are written beside it (`FILE.tables/`), so `verify FILE.parquet`
can re-execute each question in a clean slot later without the original CSV.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import polars as pl

from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.core.lake import atomic_write_parquet
from verilearn_assets.core.records import TableRecord, content_hash

EXAMPLES = {
    "questions generate": "verilearn questions generate --csv iris.csv --source template "
    "--out q.parquet",
    "questions verify": "verilearn questions verify q.parquet --timeout 30",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "questions",
        help="generate or re-verify analysis questions",
        description="The analysis family's question generator and verifier, outside Dagster: "
        "on one table, into one Parquet file.",
    )
    sub = parser.add_subparsers(dest="questions_command", required=True)
    gen = sub.add_parser(
        "generate",
        help="generate and verify questions for one table",
        description="Generate questions for one table (template library or typed program "
        "search) and verify each by clean re-execution in the sandbox; accepted and rejected "
        "records go to --out.",
    )
    gen.add_argument("--csv", required=True, type=Path, help="CSV/TSV (or Parquet) table")
    gen.add_argument("--source", required=True, choices=["template", "procedural"])
    gen.add_argument("--out", required=True, type=Path, help="output FILE.parquet")
    gen.add_argument(
        "--backend",
        choices=["auto", "docker", "bwrap"],
        default=None,
        help="sandbox backend (default: configs/sandbox.yaml)",
    )
    gen.set_defaults(handler=_generate)
    ver = sub.add_parser(
        "verify",
        help="re-execute every accepted question in a clean slot",
        description="Re-execute every accepted question of FILE in a clean sandbox slot and "
        "report each whose answer does not reproduce.",
    )
    ver.add_argument("file", type=Path, help="questions FILE.parquet")
    ver.add_argument(
        "--tables",
        type=Path,
        default=None,
        help="TableRecord parquet (default: FILE.tables/tables.parquet)",
    )
    ver.add_argument("--backend", choices=["auto", "docker", "bwrap"], default=None)
    ver.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds per re-execution (default: verify.timeout_s of configs/questions.yaml, "
        "the limit that accepted the questions)",
    )
    ver.set_defaults(handler=_verify)


def tables_dir(out: Path) -> Path:
    return out.with_name(out.name.removesuffix(".parquet") + ".tables")


def _sandbox_config(backend: str | None):
    from verilearn_assets.core.sandbox.config import load_sandbox_config

    cfg = load_sandbox_config()
    return cfg.model_copy(update={"backend": backend}) if backend else cfg


def _typed_frame(path: Path):
    from verilearn_assets.core.ingest.catalog import load_datasets_config
    from verilearn_assets.core.ingest.read_table import read_typed

    datasets = load_datasets_config()
    return read_typed(path, datasets.read, datasets.limits.max_table_bytes)


def build_table_record(csv: Path, out: Path) -> TableRecord:
    """Type + profile the file, write the typed Parquet beside `out`, return its record."""
    from verilearn_assets.core.ingest.archive import file_sha256
    from verilearn_assets.core.ingest.profile import profile_frame

    if not csv.is_file():
        raise ValueError(f"{csv}: no such file")
    frame = _typed_frame(csv)
    dataset = csv.name.split(".")[0]
    target = tables_dir(out) / f"{dataset}.parquet"
    target.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(target, index=False)
    return TableRecord(
        id=content_hash("table", dataset, csv.name, file_sha256(csv)),
        dataset=dataset,
        name=dataset,
        split="train",
        path=str(target.resolve()),
        n_rows=len(frame),
        n_columns=frame.shape[1],
        sha256=file_sha256(target),
        columns=profile_frame(frame),
    )


def _generate(args: argparse.Namespace) -> int:
    from verilearn_assets.analysis.config import load_questions_config
    from verilearn_assets.analysis.sources.generate import generate
    from verilearn_assets.analysis.verify.verifier import verify_candidates

    cfg = load_questions_config()
    table = build_table_record(args.csv, args.out)
    atomic_write_parquet(TableRecord.to_frame([table]), tables_dir(args.out) / "tables.parquet")
    generation = generate(table, args.source, cfg)
    records, stats = verify_candidates(
        [(table, c) for c in generation.candidates],
        cfg,
        _sandbox_config(args.backend),
        split="train",
    )
    atomic_write_parquet(QuestionRecord.to_frame(records), args.out)
    for name, reason in sorted(generation.not_applicable.items()):
        print(f"not applicable: {name}: {reason}", file=sys.stderr)
    for rec in records:
        if rec.status == "rejected":
            print(
                f"rejected {rec.id} ({rec.template or rec.source}): {rec.rejection_reason}",
                file=sys.stderr,
            )
    print(
        f"{args.out}: {stats.accepted} accepted, {stats.rejected} rejected "
        f"({len(generation.candidates)} candidates, {stats.runs} sandbox runs, "
        f"{len(generation.not_applicable)} templates not applicable)"
    )
    return 0


def load_questions(path: Path) -> list[QuestionRecord]:
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    rows = pl.read_parquet(path).to_dicts()
    records = []
    for i, row in enumerate(rows):
        try:
            records.append(QuestionRecord.from_row(row))
        except ValueError as exc:
            raise ValueError(f"{path}: row {i}: {exc}") from exc
    return records


def _verify(args: argparse.Namespace) -> int:
    from verilearn_assets.analysis.verify.verifier import reverify
    from verilearn_assets.core.sandbox.pool import SandboxPool

    records = load_questions(args.file)
    tables_file = args.tables or tables_dir(args.file) / "tables.parquet"
    if not tables_file.is_file():
        raise ValueError(f"{tables_file}: table records not found (pass --tables)")
    tables = [TableRecord.from_row(r) for r in pl.read_parquet(tables_file).to_dicts()]
    paths = {t.id: t.path for t in tables}

    timeout_s = args.timeout
    if timeout_s is None:
        from verilearn_assets.analysis.config import load_questions_config

        timeout_s = load_questions_config().verify.timeout_s
    elif timeout_s <= 0:
        raise ValueError(f"--timeout must be positive, got {timeout_s}")

    async def main():
        async with SandboxPool(_sandbox_config(args.backend)) as pool:
            return await reverify(pool, records, paths, timeout_s)

    mismatches = asyncio.run(main())
    n = sum(1 for r in records if r.status == "accepted")
    for m in mismatches:
        print(f"MISMATCH {m.question_id}: {m.reason}")
    print(f"{args.file}: {n - len(mismatches)}/{n} accepted questions reproduced")
    return 1 if mismatches else 0
