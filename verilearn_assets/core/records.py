"""The record base every family builds on, and the records ingestion writes.

Every record forbids unknown keys and rejects legacy keys by name, so a stale writer
fails loudly instead of being silently normalised. Nested models are stored in Parquet
as canonical JSON strings; `polars_schema` derives the table schema from the model so
it is never written twice.
"""

from __future__ import annotations

import hashlib
import json
import types
import typing
from typing import Any, ClassVar, Literal, get_args, get_origin

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, model_validator

Source = Literal["template", "procedural", "llm"]
Split = Literal["train", "dev", "test"]
SOURCES: tuple[str, ...] = get_args(Source)
SPLITS: tuple[str, ...] = get_args(Split)

LEGACY_KEYS = ("_ground_truth", "_ground_truths", "ground_truth", "subtype")


class ContractError(ValueError):
    """A record broke its contract; the message names the record and the field."""


def canonical_json(value: Any) -> str:
    """Stable JSON: sorted keys, no spaces, floats as Python repr (round-trips exactly)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def content_hash(*parts: Any, length: int = 16) -> str:
    """Content-addressed id: the same input gives the same id on every machine."""
    h = hashlib.sha256()
    for part in parts:
        h.update(canonical_json(part).encode())
        h.update(b"\x1f")
    return h.hexdigest()[:length]


class Record(BaseModel):
    """Base for lake records: strict keys, legacy keys rejected by name."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)
    id_field: ClassVar[str] = "id"

    @model_validator(mode="before")
    @classmethod
    def _reject_legacy(cls, data: Any) -> Any:
        cls.reject_legacy_keys(data)
        return data

    @classmethod
    def reject_legacy_keys(cls, data: Any) -> None:
        """Raise ContractError naming the legacy key and the record id."""
        if isinstance(data, dict):
            legacy = [k for k in data if k in LEGACY_KEYS]
            if legacy:
                rid = data.get(cls.id_field, "<no id>")
                raise ContractError(
                    f"{cls.__name__} {rid!r}: legacy key {legacy[0]!r} is not accepted "
                    f"(use 'answer'/'answer_hashes' and 'source')"
                )

    # --- Parquet round trip -------------------------------------------------
    @classmethod
    def polars_schema(cls) -> dict[str, pl.DataType]:
        return {name: _polars_type(f.annotation) for name, f in cls.model_fields.items()}

    def to_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for name, f in type(self).model_fields.items():
            value = getattr(self, name)
            if _polars_type(f.annotation) == pl.Utf8 and _is_json_field(f.annotation):
                row[name] = canonical_json(_dump(value))
            else:
                row[name] = _dump(value)
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Record:
        cls.reject_legacy_keys(row)
        data = dict(row)
        for name, f in cls.model_fields.items():
            if name in data and _is_json_field(f.annotation) and isinstance(data[name], str):
                data[name] = json.loads(data[name])
        return cls.model_validate(data)

    @classmethod
    def to_frame(cls, records: typing.Sequence[Record]) -> pl.DataFrame:
        return pl.DataFrame([r.to_row() for r in records], schema=cls.polars_schema(), orient="row")


def _dump(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


_SCALARS: dict[Any, pl.DataType] = {
    str: pl.Utf8,
    int: pl.Int64,
    float: pl.Float64,
    bool: pl.Boolean,
}


def _strip_optional(tp: Any) -> Any:
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _is_json_field(tp: Any) -> bool:
    tp = _strip_optional(tp)
    if tp in _SCALARS or get_origin(tp) is Literal:
        return False
    if get_origin(tp) is list:
        (inner,) = get_args(tp)
        inner = _strip_optional(inner)
        return not (inner in _SCALARS or get_origin(inner) is Literal)
    return True


def _polars_type(tp: Any) -> pl.DataType:
    tp = _strip_optional(tp)
    if tp in _SCALARS:
        return _SCALARS[tp]
    if get_origin(tp) is Literal:
        return pl.Utf8
    if get_origin(tp) is list:
        (inner,) = get_args(tp)
        inner = _strip_optional(inner)
        if inner in _SCALARS:
            return pl.List(_SCALARS[inner])
        if get_origin(inner) is Literal:
            return pl.List(pl.Utf8)
    return pl.Utf8  # nested models, dicts, Any: canonical JSON


# --- answers ------------------------------------------------------------------
AnswerKind = Literal["number", "integer", "string", "boolean", "list", "mapping"]


class AnswerSchema(BaseModel):
    """Typed answer: a kind, tolerances for numbers, and the shape of lists/mappings."""

    model_config = ConfigDict(extra="forbid")
    kind: AnswerKind
    rel_tol: float = 1e-6
    abs_tol: float = 1e-9
    fields: dict[str, AnswerSchema] | None = None  # mapping with fixed keys
    items: AnswerSchema | None = None  # list items, or the values of a free-keyed mapping
    ordered: bool = True  # list order matters


class HookRecord(BaseModel):
    """An intermediate value recorded by `hook(...)` and the code line that produced it."""

    model_config = ConfigDict(extra="forbid")
    name: str
    code_line: str
    value_hash: str
    summary: str = ""
    depends_on: list[str] = Field(default_factory=list)


# --- tables -----------------------------------------------------------------------
ColumnKind = Literal["numeric", "integer", "boolean", "categorical", "text", "datetime", "empty"]


class ColumnProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    kind: ColumnKind
    dtype: str
    missing_pct: float
    n_unique: int
    id_like: bool = False
    mean: float | None = None
    std: float | None = None
    min: float | None = None
    max: float | None = None
    median: float | None = None
    skew: float | None = None
    top_values: list[str] = Field(default_factory=list)


class TableRecord(Record):
    """One typed table: where its Parquet lives, its profile, and its split."""

    id: str
    dataset: str
    name: str
    split: Split
    path: str  # Parquet file with the typed table
    n_rows: int
    n_columns: int
    sha256: str
    columns: list[ColumnProfile]
