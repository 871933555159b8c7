"""`verilearn dafny verify FILE...` and `verilearn dafny load DIR`.

`verify` prints one JSON line per file (file, status, errors, verifier, duration_ms,
cached) and exits 0 whenever the verifier itself worked, whatever the verdicts; 1 when a
verification crashed; 2 on bad input. `load` prints the examples loaded, rewritten and
skipped per reason, and writes the examples to Parquet with `--out`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from verilearn_assets.core import lake
from verilearn_assets.dafny.loader import load_dafny_bench
from verilearn_assets.dafny.records import DafnyExample
from verilearn_assets.dafny.settings import cache_dir, load_dafny_config
from verilearn_assets.dafny.toolchain import ToolchainError
from verilearn_assets.dafny.verifier import DafnyVerifier, VerifierConfig


def register(subparsers: Any) -> None:
    dafny = subparsers.add_parser("dafny", help="the Dafny verifier and corpus loader")
    sub = dafny.add_subparsers(dest="dafny_command", required=True)
    verify = sub.add_parser("verify", help="verify Dafny files; one JSON line per file")
    verify.add_argument("files", nargs="+", type=Path)
    verify.add_argument("--mode", choices=["server", "cli"], default=None)
    verify.add_argument("--timeout", type=float, default=None, help="seconds per file")
    verify.add_argument("--no-cache", action="store_true", help="ignore cached verdicts")
    verify.set_defaults(handler=_verify)
    load = sub.add_parser("load", help="load a DafnyBench or .dfy directory")
    load.add_argument("directory", type=Path)
    load.add_argument("--out", type=Path, default=None, help="write examples to this .parquet")
    load.set_defaults(handler=_load)


def _verify(args: argparse.Namespace) -> int:
    sources = []
    for f in args.files:
        if not f.is_file():
            raise ValueError(f"{f}: no such file")
        try:
            sources.append(f.read_text())
        except UnicodeDecodeError as exc:
            raise ValueError(f"{f}: not UTF-8 text ({exc})") from exc
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
        for f, r in zip(
            args.files, verifier.verify_many(sources, use_cache=not args.no_cache), strict=True
        ):
            crashed |= r.status == "crash"
            line = {
                "file": str(f),
                "status": r.status,
                "errors": [
                    {"line": e.line, "column": e.column, "message": e.message} for e in r.errors
                ],
                "verifier": r.verifier,
                "mode": r.mode,
                "duration_ms": r.duration_ms,
                "cached": r.cached,
            }
            print(json.dumps(line), flush=True)
    return 1 if crashed else 0


def _load(args: argparse.Namespace) -> int:
    report = load_dafny_bench(args.directory)
    print(json.dumps(report.summary()))
    for path, reason in sorted(report.skipped_files.items()):
        print(json.dumps({"skipped": path, "reason": reason}))
    if args.out is not None:
        if args.out.suffix != ".parquet":
            raise ValueError(f"--out {args.out}: must end in .parquet")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        lake.atomic_write_parquet(DafnyExample.to_frame(report.examples), args.out)
        print(json.dumps({"written": str(args.out), "examples": len(report.examples)}))
    return 0
