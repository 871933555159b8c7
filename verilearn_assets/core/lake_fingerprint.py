"""A fingerprint of the lake: what a restructuring of the code must not change.

The same demo run before and after a refactoring of the code must give the same records. Run
times, timestamps and home paths differ between any two runs, so the fingerprint covers the
columns that carry meaning: the ids (content hashes of the inputs) and the answers (ground
truth, verdicts, rewards, the text a record teaches). Each asset's selected columns are
serialised row by row, sorted, and hashed, so partition file layout and row order do not
matter but any changed id or answer does.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import polars as pl
from pydantic import BaseModel

# A column is part of the fingerprint when its name says it identifies a record or carries
# its answer; everything else (durations, timestamps, paths, logs) may change between runs.
FINGERPRINT_COLUMN = re.compile(
    r"(^|_)(id|ids|answer|answers|answer_hashes|answer_schema|gold|verdict|verified|"
    r"reward|passed|status|source|split|messages|completion|prompt|body|diff|target)(_|$)"
)
# ... unless it measures time, which no two runs share
VOLATILE_COLUMN = re.compile(r"(_ms|_s|_seconds|_at|latency|duration|elapsed|time)$")
# ... and run times written into text: lakes built before the tool messages dropped them
# head each tool output with how long the cell took (`[cell ok, 80 ms]`), and a long output
# is cut to a character budget that counts that header, so where the cut falls moves with
# the digits. Masked to the form tool messages have now (`[cell ok]`), so an old lake and a
# new one compare equal
CELL_TIME = re.compile(r"(\[cell \w+), \d+ ms\]")
# ... and the memory addresses in the repr of an object a cell printed (old lakes; tool
# messages now show the form this masks them to)
ADDRESS = re.compile(r" at 0x[0-9a-f]+>")
CUT_LINE = re.compile(r"[^\n]*…\[\d+ characters truncated\]…[^\n]*")


class AssetPrint(BaseModel):
    """One asset's fingerprint: rows seen, the columns hashed, and the digest."""

    rows: int
    columns: list[str]
    sha256: str


class LakePrint(BaseModel):
    """The whole lake: one print per asset folder and a digest over all of them."""

    assets: dict[str, AssetPrint]
    sha256: str


def _frames(asset_dir: Path) -> list[pl.DataFrame]:
    """Every committed part file of an asset, with its hive partition values as columns."""
    frames = []
    for part in sorted(asset_dir.rglob("part-*.parquet")):
        if any("=" not in piece for piece in part.relative_to(asset_dir).parts[:-1]):
            continue  # a nested asset of its own (`a/b` under `a`), fingerprinted apart
        frame = pl.read_parquet(part)
        for piece in part.relative_to(asset_dir).parts[:-1]:
            if "=" in piece:
                key, value = piece.split("=", 1)
                if key not in frame.columns:
                    frame = frame.with_columns(pl.lit(value).alias(key))
        frames.append(frame)
    return frames


def _steady(value: object) -> object:
    """`value` with the run times in its text (and the cuts they move) masked."""
    if isinstance(value, str):
        value = ADDRESS.sub(" at 0x…>", CELL_TIME.sub(r"\1]", value))
        return CUT_LINE.sub("<cut>", value)
    if isinstance(value, list):
        return [_steady(v) for v in value]
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items()}
    return value


def _row_text(row: dict) -> str:
    return json.dumps(_steady(row), sort_keys=True, default=str, ensure_ascii=False)


def asset_print(asset_dir: Path) -> AssetPrint:
    """The fingerprint of one asset folder (all partitions)."""
    frames = _frames(asset_dir)
    frame = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
    columns = sorted(
        c for c in frame.columns if FINGERPRINT_COLUMN.search(c) and not VOLATILE_COLUMN.search(c)
    )
    lines = sorted(_row_text(row) for row in frame.select(columns).iter_rows(named=True))
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    return AssetPrint(rows=frame.height, columns=columns, sha256=digest)


def asset_dirs(lake: Path) -> list[Path]:
    """Every asset folder: the part of a part file's path above its first `key=value`
    partition folder (or its own folder when unpartitioned). Asset keys nest
    (`analysis/questions`), so the first level alone would merge a family's assets."""
    found = set()
    for part in lake.rglob("part-*.parquet"):
        pieces = part.relative_to(lake).parts[:-1]
        cut = next((i for i, piece in enumerate(pieces) if "=" in piece), len(pieces))
        found.add(lake.joinpath(*pieces[:cut]))
    return sorted(found)


def lake_print(lake: Path) -> LakePrint:
    """The fingerprint of every asset folder under `lake` that holds part files."""
    if not lake.is_dir():
        raise FileNotFoundError(f"{lake}: no lake here")
    assets = {str(d.relative_to(lake)): asset_print(d) for d in asset_dirs(lake)}
    total = hashlib.sha256(
        "\n".join(f"{name} {a.sha256}" for name, a in assets.items()).encode()
    ).hexdigest()
    return LakePrint(assets=assets, sha256=total)


def differences(before: LakePrint, after: LakePrint) -> list[str]:
    """One line per asset whose print differs (or exists on one side only)."""
    lines = []
    for name in sorted(set(before.assets) | set(after.assets)):
        a, b = before.assets.get(name), after.assets.get(name)
        if a is None or b is None:
            lines.append(f"{name}: only {'after' if a is None else 'before'}")
        elif a != b:
            lines.append(
                f"{name}: rows {a.rows} -> {b.rows}, columns "
                f"{'same' if a.columns == b.columns else f'{a.columns} -> {b.columns}'}, "
                f"sha256 {a.sha256[:12]} -> {b.sha256[:12]}"
            )
    return lines
