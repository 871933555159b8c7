"""Typed reading of raw tables: sniff the delimiter, map NA tokens, infer column types.

Text is first read as strings only, then every column is typed on its own, in a fixed
order (boolean, integer, number, datetime, else text), so the result does not depend on
pandas' guesses. A value that fits no rule keeps its column as text; nothing is dropped.
"""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path

import pandas as pd

from verilearn_assets.core.ingest.catalog import ReadOptions

TEXT_SUFFIXES = (".csv", ".tsv", ".txt", ".tab", ".dat", ".csv.gz", ".tsv.gz", ".txt.gz")
TABLE_SUFFIXES = TEXT_SUFFIXES + (".parquet",)

_INT = r"[+-]?\d+"
_LEADING_ZERO = r"[+-]?0\d+"  # codes such as zip codes: keep them as text
_DATE_LIKE = (
    r"\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}"
    r"(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?"
)
_NO_DELIMITER = "\x1f"  # unit separator: stands in when a table has a single column


class TableReadError(ValueError):
    """A raw table could not be read; the message names the file and the problem."""


class TableTooLarge(TableReadError):
    """A raw table is over a configured size cap: excluded by limits, not unreadable."""


def is_table_file(path: Path) -> bool:
    return path.name.lower().endswith(TABLE_SUFFIXES)


def sniff_delimiter(sample: str, candidates: list[str]) -> str | None:
    """The candidate that splits the sample's lines into the most consistent field count.

    Parsed with the csv module, so delimiters inside quotes do not count. None means no
    candidate splits the header: a single-column table.
    """
    lines = sample.splitlines()
    if len(lines) > 1:
        lines = lines[:-1] if not sample.endswith(("\n", "\r")) else lines  # cut partial line
    lines = [ln for ln in lines if ln.strip()]
    if not lines:
        return None
    best: tuple[float, int, int] | None = None
    chosen = None
    for rank, delimiter in enumerate(candidates):
        counts = [len(row) for row in csv.reader(lines, delimiter=delimiter)]
        if counts[0] < 2:
            continue
        agree = sum(c == counts[0] for c in counts) / len(counts)
        score = (agree, counts[0], -rank)
        if best is None or score > best:
            best, chosen = score, delimiter
    return chosen


def _read_bytes(path: Path, max_bytes: int) -> bytes:
    if path.name.lower().endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise TableTooLarge(f"{path}: decompresses past the cap of {max_bytes} bytes")
        return data
    size = path.stat().st_size
    if size > max_bytes:
        raise TableTooLarge(f"{path}: {size} bytes exceeds the cap of {max_bytes} bytes")
    return path.read_bytes()


def _decode(path: Path, data: bytes, encoding: str | None) -> str:
    if encoding:
        try:
            return data.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise TableReadError(f"{path}: cannot decode as {encoding}: {exc}") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return (
            data.decode("cp1252", errors="strict") if _cp1252_ok(data) else data.decode("latin-1")
        )


def _cp1252_ok(data: bytes) -> bool:
    try:
        data.decode("cp1252")
    except UnicodeDecodeError:
        return False
    return True


def _header(raw: list[str]) -> list[str]:
    """Stripped, non-empty, unique column names (blank → column_<i>, repeats → name_<k>)."""
    names: list[str] = []
    for i, value in enumerate(raw):
        base = str(value).strip() or f"column_{i + 1}"
        name, k = base, 1
        while name in names:
            k += 1
            name = f"{base}_{k}"
        names.append(name)
    return names


def read_typed(path: Path, options: ReadOptions, max_bytes: int) -> pd.DataFrame:
    """Read a CSV/TSV/text (optionally .gz) or Parquet table and type every column."""
    path = Path(path)
    if not path.is_file():
        raise TableReadError(f"{path}: no such file")
    if path.name.lower().endswith(".parquet"):
        if path.stat().st_size > max_bytes:
            raise TableTooLarge(
                f"{path}: {path.stat().st_size} bytes exceeds the cap of {max_bytes} bytes"
            )
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # re-raised with the file named
            raise TableReadError(f"{path}: not a readable Parquet file: {exc}") from exc
        frame = frame.reset_index(drop=True)
        frame.columns = _header([str(c) for c in frame.columns])
        return type_frame(frame, options, only_text=True)
    text = _decode(path, _read_bytes(path, max_bytes), options.encoding)
    if not text.strip():
        raise TableReadError(f"{path}: empty file")
    delimiter = sniff_delimiter(text[: options.sniff_bytes], options.delimiters)
    if delimiter is None:
        if _NO_DELIMITER in text:
            raise TableReadError(f"{path}: contains control character 0x1f")
        delimiter = _NO_DELIMITER
    try:
        cells = pd.read_csv(
            io.StringIO(text),
            sep=delimiter,
            header=None,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            engine="c",
            skip_blank_lines=True,
        )
    except (pd.errors.ParserError, ValueError) as exc:
        raise TableReadError(f"{path}: cannot parse with delimiter {delimiter!r}: {exc}") from exc
    if len(cells) < 2:
        raise TableReadError(f"{path}: a header but no data rows")
    header = _header(list(cells.iloc[0]))
    body = cells.iloc[1:].reset_index(drop=True)
    body.columns = header
    return type_frame(body, options)


def type_frame(frame: pd.DataFrame, options: ReadOptions, only_text: bool = False) -> pd.DataFrame:
    """Type each column; with `only_text`, columns already typed (Parquet) are kept."""
    out = {}
    for name in frame.columns:
        column = frame[name]
        if only_text and not (
            pd.api.types.is_object_dtype(column) or pd.api.types.is_string_dtype(column)
        ):
            out[name] = column
            continue
        out[name] = type_column(column, options)
    return pd.DataFrame(out, index=pd.RangeIndex(len(frame)))


def type_column(column: pd.Series, options: ReadOptions) -> pd.Series:
    """One column of strings → booleans, integers, floats, datetimes or text."""
    values = column.astype("str").str.strip()
    missing = values.isin(set(options.na_tokens)) | column.isna()
    present = values[~missing]
    n = len(values)
    if present.empty:
        return pd.Series([None] * n, dtype="str", name=column.name)
    lower = present.str.lower()
    trues = {t.lower() for t in options.true_tokens}
    falses = {t.lower() for t in options.false_tokens}
    if lower.isin(trues | falses).all():
        result = pd.Series(pd.NA, index=values.index, dtype="boolean")
        result[~missing] = lower.isin(trues)
        return result if missing.any() else result.astype(bool)
    if present.str.fullmatch(_LEADING_ZERO).any():
        return _text(values, missing)  # codes such as "01234" lose meaning as numbers
    if present.str.fullmatch(_INT).all():
        try:
            ints = pd.Series(pd.NA, index=values.index, dtype="Int64")
            ints[~missing] = [int(v) for v in present]
            return ints if missing.any() else ints.astype("int64")
        except (OverflowError, TypeError, ValueError):
            return _text(values, missing)  # wider than int64: an identifier, keep as text
    numbers = pd.to_numeric(present, errors="coerce")
    if numbers.notna().all():
        result = pd.Series(float("nan"), index=values.index, dtype="float64")
        result[~missing] = numbers.astype("float64")
        return result
    if present.str.fullmatch(_DATE_LIKE).all():
        for fmt in options.datetime_formats:
            try:
                parsed = pd.to_datetime(present, format=fmt)
            except (ValueError, TypeError, OverflowError):
                continue
            result = pd.Series(pd.NaT, index=values.index, dtype=parsed.dtype)
            result[~missing] = parsed
            return result
    return _text(values, missing)


def _text(values: pd.Series, missing: pd.Series) -> pd.Series:
    return values.where(~missing, None).astype("str")
