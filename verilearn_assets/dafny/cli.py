"""`verilearn dafny verify FILE...` and `verilearn dafny load DIR`.

`verify` prints one JSON line per file (file, status, errors, verifier, duration_ms,
cached, dialect, rewrites) and exits 0 whenever the verifier itself worked, whatever the
verdicts; 1 when a verification crashed; 2 on bad input. It applies the loader's dialect
handling (`dialect.apply`): a Dafny 4 file is rewritten to the installed 2.3 dialect and
every rewrite is named in its line (an error's `line` is mapped back to the file as
written, `rewritten_line` is the verifier's own);
a Dafny 4 construct with no sound rewrite is status `dialect_error` with the reason, not
verified; `--dialect as-is` verifies the files exactly as written. `load` reads a directory
or catalog corpora (`--corpus NAME`, repeatable). `load` prints the examples loaded, rewritten and
skipped per reason, and writes the examples to Parquet with `--out`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from verilearn_assets.core import lake
from verilearn_assets.dafny.config import cache_dir, load_dafny_config
from verilearn_assets.dafny.corpus.catalog import catalog_corpora, load_corpora
from verilearn_assets.dafny.corpus.loader import load_dafny_bench
from verilearn_assets.dafny.lang import dialect
from verilearn_assets.dafny.records import DafnyExample
from verilearn_assets.dafny.verify.toolchain import ToolchainError
from verilearn_assets.dafny.verify.verifier import DafnyVerifier, VerifierConfig

EXAMPLES = {  # shown by `--help` (verilearn_assets/cli: one example per command)
    "dafny verify": "verilearn dafny verify data/dafny/corpus/abs_max.dfy",
    "dafny load": "verilearn dafny load --corpus dafny-bundled --out programs.parquet",
}


def register(subparsers: Any) -> None:
    dafny = subparsers.add_parser("dafny", help="the Dafny verifier and corpus loader")
    sub = dafny.add_subparsers(dest="dafny_command", required=True)
    verify = sub.add_parser("verify", help="verify Dafny files; one JSON line per file")
    verify.add_argument("files", nargs="+", type=Path)
    verify.add_argument("--mode", choices=["server", "cli"], default=None)
    verify.add_argument("--timeout", type=float, default=None, help="seconds per file")
    verify.add_argument("--no-cache", action="store_true", help="ignore cached verdicts")
    verify.add_argument(
        "--dialect",
        choices=["auto", "as-is"],
        default="auto",
        help="auto: rewrite Dafny 4 to the installed 2.3 dialect as the loader does (each "
        "rewrite named in the JSON line); as-is: verify the files exactly as written",
    )
    verify.set_defaults(handler=_verify)
    load = sub.add_parser(
        "load", help="load a DafnyBench or .dfy directory, or a catalog corpus (--corpus)"
    )
    load.add_argument("directory", type=Path, nargs="?", default=None)
    load.add_argument(
        "--corpus",
        action="append",
        default=None,
        help="a dafny `programs:` entry of the catalog (configs/datasets.yaml or "
        "$VERILEARN_LOCAL_CATALOG); repeatable, duplicates dropped across corpora",
    )
    load.add_argument("--out", type=Path, default=None, help="write examples to this .parquet")
    load.set_defaults(handler=_load)


def _verify(args: argparse.Namespace) -> int:
    texts = []
    for f in args.files:
        if not f.is_file():
            raise ValueError(f"{f}: no such file")
        try:
            texts.append(f.read_text())
        except UnicodeDecodeError as exc:
            raise ValueError(f"{f}: not UTF-8 text ({exc})") from exc
    prepared: list[tuple[str, str, list[str]] | str] = []  # (text, dialect, rewrites) | reason
    for text in texts:
        try:
            prepared.append(dialect.apply(text, args.dialect))
        except dialect.DialectError as exc:
            prepared.append(str(exc))
    sources = [p[0] for p in prepared if isinstance(p, tuple)]
    text_of = {str(f): t for f, t in zip(args.files, texts, strict=True)}
    base = load_dafny_config().verifier
    update: dict[str, Any] = {}
    if args.mode:
        update["mode"] = args.mode
    if args.timeout is not None:
        if args.timeout <= 0:
            raise ValueError(f"--timeout must be positive, got {args.timeout}")
        update["timeout_s"] = args.timeout
    config = VerifierConfig.model_validate({**base.model_dump(), **update})
    try:
        verifier = DafnyVerifier(config, cache_dir=cache_dir(lake.home()))
    except ToolchainError as exc:
        print(f"verilearn dafny verify: {exc}", file=sys.stderr)
        return 1
    crashed = False
    with verifier:
        results = iter(verifier.verify_many(sources, use_cache=not args.no_cache))
        for f, prep in zip(args.files, prepared, strict=True):
            if isinstance(prep, str):
                line: dict[str, Any] = {"file": str(f), "status": "dialect_error"}
                print(json.dumps({**line, "dialect": "4", "reason": prep}), flush=True)
                continue
            r = next(results)
            crashed |= r.status == "crash"
            errors = [{"line": e.line, "column": e.column, "message": e.message} for e in r.errors]
            if prep[2]:  # rewritten: point into the file as written, keep the rewritten line
                lines = dialect.line_map(text_of[str(f)], prep[0])
                for e in errors:
                    if e["line"] is not None and 1 <= e["line"] <= len(lines):
                        e["rewritten_line"], e["line"] = e["line"], lines[e["line"] - 1]
            line = {
                "file": str(f),
                "status": r.status,
                "errors": errors,
                "verifier": r.verifier,
                "mode": r.mode,
                "duration_ms": r.duration_ms,
                "cached": r.cached,
                "dialect": prep[1],
                "rewrites": prep[2],
            }
            print(json.dumps(line), flush=True)
    return 1 if crashed else 0


def _load(args: argparse.Namespace) -> int:
    if (args.directory is None) == (args.corpus is None):
        raise ValueError("give a directory or --corpus NAME (not both)")
    if args.out is not None and args.out.suffix != ".parquet":
        raise ValueError(f"--out {args.out}: must end in .parquet")
    if args.directory is not None:
        reports = [load_dafny_bench(args.directory)]
        print(json.dumps(reports[0].summary()))
    else:
        loaded = load_corpora(catalog_corpora(args.corpus, home=lake.home()))
        reports = loaded.reports
        print(json.dumps(loaded.summary()))
    examples = [e for r in reports for e in r.examples]
    for report in reports:
        for path, reason in sorted(report.skipped_files.items()):
            print(json.dumps({"skipped": path, "reason": reason}))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        lake.atomic_write_parquet(DafnyExample.to_frame(examples), args.out)
        print(json.dumps({"written": str(args.out), "examples": len(examples)}))
    return 0
