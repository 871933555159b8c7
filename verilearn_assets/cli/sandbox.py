"""`verilearn sandbox exec FILE`: run one code file as one task in a fresh sandbox slot."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from verilearn_assets.core.sandbox.config import SandboxConfig, load_sandbox_config
from verilearn_assets.core.sandbox.pool import SandboxError, SandboxPool, TaskResult

EXAMPLES = {"sandbox exec": "verilearn sandbox exec cell.py --csv table.csv --timeout 10"}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sandbox",
        help="run code in the sandbox",
        description="Run code in a slot of the container pool (Docker or bubblewrap, "
        "configs/sandbox.yaml): no network, read-only root, resource limits.",
    )
    sub = parser.add_subparsers(dest="sandbox_command", required=True)
    run = sub.add_parser(
        "exec",
        help="run FILE as one task; print one JSON object",
        description="Run FILE as one cell in a fresh sandbox task (with --csv, the table "
        "loaded as `df`) and print one JSON object: stdout, stderr, the error if any, timing.",
    )
    run.add_argument("file", help="Python file to run as one cell")
    run.add_argument(
        "--backend",
        choices=["docker", "bwrap"],
        default=None,
        help="override configs/sandbox.yaml's backend",
    )
    run.add_argument("--timeout", type=float, default=None, help="wall-clock seconds")
    run.add_argument("--csv", default=None, help="table loaded as `df` (CSV or Parquet)")
    run.add_argument("--config-dir", default=None, help="directory holding sandbox.yaml")
    run.set_defaults(handler=exec_file)


async def _run_once(
    config: SandboxConfig, code: str, table: str | None, timeout: float | None
) -> TaskResult:
    async with SandboxPool(config) as pool:
        return await pool.run_program(code, table, timeout)


def exec_file(args: argparse.Namespace) -> int:
    """Exit 0 whenever the sandbox worked (whatever the code did); 1 if it did not."""
    path = Path(args.file)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    if args.csv is not None and not Path(args.csv).is_file():
        raise ValueError(f"--csv {args.csv}: no such file")
    if args.timeout is not None and args.timeout <= 0:
        raise ValueError(f"--timeout {args.timeout}: must be positive")
    config = load_sandbox_config(args.config_dir)
    overrides = {"slots": 1}
    if args.backend:
        overrides["backend"] = args.backend
    config = SandboxConfig.model_validate({**config.model_dump(), **overrides})
    try:
        result = asyncio.run(_run_once(config, path.read_text(), args.csv, args.timeout))
    except SandboxError as exc:
        print(f"verilearn sandbox exec: sandbox failure: {exc}", file=sys.stderr)
        return 1
    out = {
        "status": result.status,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "answer": json.loads(result.answer) if result.answer is not None else None,
        "submissions": [json.loads(s) for s in result.submissions],
        "hooks": [h.model_dump() for h in result.hooks],
        "duration_ms": round(result.duration_ms, 3),
    }
    print(json.dumps(out, ensure_ascii=False))
    return 0
