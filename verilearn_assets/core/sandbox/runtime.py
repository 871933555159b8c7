"""What a cell sees as `submit` and `hook`: value normalisation and stable hashing.

Pure numpy/pandas so the same code runs on the host (to recompute a hash or normalise an
expected answer) and inside the jail, where the project package is not importable: this
module must not import anything from `verilearn_assets`.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

JSON = None | bool | int | float | str | list["JSON"] | dict[str, "JSON"]


def canonical_dumps(value: Any) -> str:
    """Same encoding as `contracts.canonical_json` (kept here: the jail can't import it)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def _is_missing(value: Any) -> bool:
    if value is None or value is pd.NaT or value is pd.NA:
        return True
    if isinstance(value, float | np.floating):
        return not math.isfinite(float(value))
    return False


def _key(value: Any) -> str:
    """A mapping key as JSON wants it: a string, rendered from the normalised key."""
    norm = to_jsonable(value)
    return norm if isinstance(norm, str) else canonical_dumps(norm)


def _is_default_index(index: pd.Index) -> bool:
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1


def to_jsonable(value: Any) -> JSON:
    """Normalise a cell's answer to plain JSON.

    1x1 frame -> scalar; one-column frame -> like its Series; Series -> list (default
    index) or dict (keyed by index); other frames -> list of row dicts (default index) or
    dict of row dicts; numpy/pandas scalars -> Python; NaN/NaT/NA/inf -> None.
    """
    if isinstance(value, pd.DataFrame):
        if value.shape == (1, 1):
            return to_jsonable(value.iat[0, 0])
        if value.shape[1] == 1:
            return to_jsonable(value.iloc[:, 0])
        rows = [
            {_key(c): to_jsonable(v) for c, v in zip(value.columns, row, strict=True)}
            for row in value.itertuples(index=False, name=None)
        ]
        if _is_default_index(value.index):
            return rows
        return {_key(k): r for k, r in zip(value.index, rows, strict=True)}
    if isinstance(value, pd.Series):
        if _is_default_index(value.index):
            return [to_jsonable(v) for v in value.tolist()]
        return {_key(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, pd.Index):
        return [to_jsonable(v) for v in value.tolist()]
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return to_jsonable(value.item())
        return [to_jsonable(v) for v in value.tolist()]
    if _is_missing(value):
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating | decimal.Decimal):
        return float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, pd.Timestamp | _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, np.datetime64):
        return to_jsonable(pd.Timestamp(value))
    if isinstance(value, pd.Timedelta | _dt.timedelta | np.timedelta64):
        return pd.Timedelta(value).isoformat()
    if isinstance(value, pd.Interval):
        return str(value)
    if isinstance(value, Mapping):
        return {_key(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        items = [to_jsonable(v) for v in value]
        return sorted(items, key=canonical_dumps)
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    raise TypeError(
        f"cannot submit a value of type {type(value).__name__}: "
        "use numbers, strings, booleans, lists, dicts, Series or DataFrames"
    )


def value_hash(value: Any) -> str:
    """Stable 16-hex hash of a value: the same data gives the same hash on every machine.

    Frames and Series hash their data, index, column names and dtypes (pandas' fixed-key
    row hashing); everything else hashes its normalised JSON.
    """
    h = hashlib.sha256()
    if isinstance(value, pd.Series | pd.DataFrame):
        kind = "frame" if isinstance(value, pd.DataFrame) else "series"
        h.update(kind.encode())
        if isinstance(value, pd.DataFrame):
            meta: Any = [[str(c), str(t)] for c, t in value.dtypes.items()]
        else:
            meta = [str(value.name), str(value.dtype)]
        h.update(canonical_dumps(meta).encode())
        try:
            rows = pd.util.hash_pandas_object(value, index=True).to_numpy()
            h.update(rows.tobytes())
        except TypeError:  # unhashable cells (lists, dicts): fall back to their JSON
            h.update(canonical_dumps(to_jsonable(value)).encode())
    else:
        try:
            h.update(b"json")
            h.update(canonical_dumps(to_jsonable(value)).encode())
        except (TypeError, ValueError):
            h.update(b"repr")
            h.update(repr(value).encode())
    return h.hexdigest()[:16]


def summarize(value: Any, limit: int = 500) -> str:
    """A short human summary of a hooked value (frames: shape, columns, head)."""
    if isinstance(value, pd.DataFrame):
        head = value.head(3).to_string(max_cols=8, max_colwidth=20)
        text = f"DataFrame {value.shape[0]}x{value.shape[1]} columns={list(value.columns)}\n{head}"
    elif isinstance(value, pd.Series):
        head = value.head(5).to_string(max_rows=5)
        text = f"Series name={value.name!r} len={len(value)} dtype={value.dtype}\n{head}"
    elif isinstance(value, np.ndarray):
        body = np.array2string(value, threshold=8)
        text = f"ndarray shape={value.shape} dtype={value.dtype} {body}"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_ASSIGN = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)")


def _default_hook_name(code_line: str, index: int) -> str:
    """`x = df[...]` -> "x"; otherwise `hook_<n>` (a stable, readable name)."""
    match = _ASSIGN.match(code_line)
    if match:
        return match.group(1)
    return f"hook_{index}"


class Recorder:
    """Builds `submit` and `hook` for one task; `emit` sends each record at once.

    Records leave through `emit` (a channel separate from stdout), so truncating a
    cell's output can never lose a submission or a hook.
    """

    def __init__(
        self,
        emit: Callable[[dict[str, Any]], None],
        *,
        summary_chars: int = 500,
        submission_cap: int = 1_000_000,
    ) -> None:
        self._emit = emit
        self._summary_chars = summary_chars
        self._submission_cap = submission_cap
        self._hooks = 0

    def submit(self, answer: Any) -> None:
        """Record `answer` (normalised to JSON) as a submission; may be called repeatedly."""
        text = canonical_dumps(to_jsonable(answer))
        if len(text.encode()) > self._submission_cap:
            raise ValueError(
                f"submission is {len(text.encode())} bytes, over the cap of {self._submission_cap}"
            )
        self._emit({"ev": "submit", "value": text})

    def hook(
        self,
        value: Any,
        code_line: str,
        name: str | None = None,
        depends_on: list[str] | tuple[str, ...] = (),
    ) -> Any:
        """Record an intermediate value with its code line; returns `value` unchanged."""
        if not isinstance(code_line, str):
            raise TypeError("hook(value, code_line, ...): code_line must be a string")
        self._hooks += 1
        record = {
            "name": str(name) if name is not None else _default_hook_name(code_line, self._hooks),
            "code_line": code_line[:2000],
            "value_hash": value_hash(value),
            "summary": summarize(value, self._summary_chars),
            "depends_on": [str(d) for d in depends_on],
        }
        self._emit({"ev": "hook", "hook": record})
        return value
