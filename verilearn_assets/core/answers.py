"""Canonical answers: normalisation, the answer hash, and strict schema-driven comparison.

An answer travels as canonical JSON (``contracts.canonical_json``). Two things are done
with it, and they deliberately differ:

* **Identity** — ``answer_hash`` names an answer so that a re-execution can be checked
  ("same hash, same answer") and alternatives can be deduplicated. Hashing needs one
  exact byte string per answer, so the value is first *normalised*:

  1. parse the JSON; with a schema, coerce by kind: ``number`` → float, ``integer`` → int
     (an integral float such as ``3.0`` becomes ``3``; a non-integral one is left alone
     and will fail validation), ``string`` → Unicode NFC with surrounding whitespace
     stripped;
  2. every float is rounded to ``HASH_SIGNIFICANT_DIGITS`` (8) significant digits and
     ``-0.0`` becomes ``0.0``. *Why:* the same program on another machine (another BLAS,
     another libm, another summation order in a vectorised kernel) may differ in the last
     few units in the last place (~1e-15 relative). Eight digits leave a margin of about
     1e7 ulps, so such noise changes the hash only when a value sits within ~1e-15 of a
     rounding boundary (probability ~1e-7 per float), while answers that differ in any
     meaningful way still hash apart;
  3. lists marked ``ordered: false`` are sorted by the canonical JSON of their
     normalised items; mapping keys are sorted by ``canonical_json``;
  4. the result is serialised with ``canonical_json`` (sorted keys, no spaces, floats
     as Python's shortest round-trip ``repr``, which is the same on every IEEE-754
     machine) and hashed with SHA-256 (first 16 hex digits).

* **Correctness** — ``answers_match`` decides whether a submitted answer is right. It is
  strict and driven by the schema: numbers within the field's own ``rel_tol``/``abs_tol``
  (``math.isclose``), integers and booleans exactly, strings exactly after NFC + strip,
  mappings with exactly the expected keys. There is no leniency such as "a scalar
  matches any number inside a dict", and no sign folding (``-0.4`` never matches ``0.4``).
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from typing import Any

from verilearn_assets.core.records import AnswerSchema, canonical_json

HASH_SIGNIFICANT_DIGITS = 8


class AnswerError(ValueError):
    """An answer is not valid JSON or does not fit its schema."""


# --- normalisation and hashing ------------------------------------------------------
def parse_answer(answer_json: str) -> Any:
    """Parse canonical JSON; NaN/Infinity literals are refused."""

    def _no_constants(name: str) -> Any:
        raise AnswerError(f"answer contains the non-finite literal {name}")

    try:
        return json.loads(answer_json, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise AnswerError(f"answer is not valid JSON: {exc}") from exc


def _round_float(x: float) -> float:
    if not math.isfinite(x):
        raise AnswerError(f"answer contains a non-finite number {x!r}")
    if x == 0:
        return 0.0
    return float(f"{x:.{HASH_SIGNIFICANT_DIGITS}g}")


def _norm_str(s: str) -> str:
    return unicodedata.normalize("NFC", s).strip()


def normalise(value: Any, schema: AnswerSchema | None = None) -> Any:
    """The value used for hashing (see module docstring for the rules)."""
    kind = schema.kind if schema is not None else None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            return int(value)
        if kind == "number" or isinstance(value, float):
            return _round_float(float(value))
        return value
    if isinstance(value, str):
        return _norm_str(value)
    if isinstance(value, list):
        item_schema = schema.items if schema is not None else None
        items = [normalise(v, item_schema) for v in value]
        if schema is not None and not schema.ordered:
            items.sort(key=canonical_json)
        return items
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            sub = None
            if schema is not None:
                sub = (schema.fields or {}).get(k) if schema.fields else schema.items
            out[_norm_str(str(k))] = normalise(v, sub)
        return out
    if value is None:
        return None
    raise AnswerError(f"answer holds a value of unsupported type {type(value).__name__}")


def answer_hash(answer: str | Any, schema: AnswerSchema | None = None) -> str:
    """Stable hash of an answer given as canonical JSON (str) or as a parsed value.

    A ``str`` argument is always read as JSON; pass ``json.dumps(s)`` for a bare string.
    """
    value = parse_answer(answer) if isinstance(answer, str) else answer
    text = canonical_json(normalise(value, schema))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --- validation -----------------------------------------------------------------------
def validate_answer(value: Any, schema: AnswerSchema, path: str = "answer") -> str | None:
    """Why `value` cannot be an answer of `schema` (None when it can).

    Null, NaN, infinite, empty and wrongly typed answers are refused here, so a program
    that silently produced nothing never becomes ground truth.
    """
    if value is None:
        return f"{path} is null (missing, NaN or not computed)"
    kind = schema.kind
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{path}: expected a number, got {type(value).__name__}"
        if not math.isfinite(value):
            return f"{path} is not finite ({value!r})"
        return None
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{path}: expected an integer, got {type(value).__name__}"
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            return f"{path}: expected an integer, got {value!r}"
        return None
    if kind == "boolean":
        return (
            None
            if isinstance(value, bool)
            else (f"{path}: expected a boolean, got {type(value).__name__}")
        )
    if kind == "string":
        if not isinstance(value, str):
            return f"{path}: expected a string, got {type(value).__name__}"
        return None if _norm_str(value) else f"{path} is an empty string"
    if kind == "list":
        if not isinstance(value, list):
            return f"{path}: expected a list, got {type(value).__name__}"
        if not value:
            return f"{path} is an empty list"
        if schema.items is not None:
            for i, item in enumerate(value):
                problem = validate_answer(item, schema.items, f"{path}[{i}]")
                if problem:
                    return problem
        return None
    if kind == "mapping":
        if not isinstance(value, dict):
            return f"{path}: expected a mapping, got {type(value).__name__}"
        if not value:
            return f"{path} is an empty mapping"
        if schema.fields is not None:
            missing = sorted(set(schema.fields) - set(value))
            extra = sorted(set(value) - set(schema.fields))
            if missing or extra:
                return f"{path}: keys differ from schema (missing {missing}, unexpected {extra})"
            for key, sub in schema.fields.items():
                problem = validate_answer(value[key], sub, f"{path}.{key}")
                if problem:
                    return problem
        elif schema.items is not None:
            for key, item in value.items():
                problem = validate_answer(item, schema.items, f"{path}.{key}")
                if problem:
                    return problem
        return None
    raise AnswerError(f"unknown answer kind {kind!r}")


# --- strict comparison ------------------------------------------------------------------
def explain_mismatch(
    expected: Any, got: Any, schema: AnswerSchema, path: str = "answer"
) -> str | None:
    """Why `got` does not match `expected` under `schema`; None when it matches.

    Both arguments are parsed values (use ``parse_answer`` on canonical JSON).
    """
    problem = validate_answer(got, schema, path)
    if problem:
        return problem
    kind = schema.kind
    if kind == "number":
        if math.isclose(
            float(expected), float(got), rel_tol=schema.rel_tol, abs_tol=schema.abs_tol
        ):
            return None
        return (
            f"{path}: expected {expected!r}, got {got!r} "
            f"(rel_tol={schema.rel_tol}, abs_tol={schema.abs_tol})"
        )
    if kind == "integer":
        return None if int(expected) == int(got) else f"{path}: expected {expected!r}, got {got!r}"
    if kind == "boolean":
        return None if expected is got else f"{path}: expected {expected!r}, got {got!r}"
    if kind == "string":
        if _norm_str(expected) == _norm_str(got):
            return None
        return f"{path}: expected {expected!r}, got {got!r}"
    if kind == "list":
        if len(expected) != len(got):
            return f"{path}: expected {len(expected)} items, got {len(got)}"
        item_schema = schema.items or _infer_schema(expected[0])
        if schema.ordered:
            for i, (e, g) in enumerate(zip(expected, got, strict=True)):
                problem = explain_mismatch(e, g, item_schema, f"{path}[{i}]")
                if problem:
                    return problem
            return None
        unmatched = list(got)
        for i, e in enumerate(expected):
            hit = next(
                (j for j, g in enumerate(unmatched) if explain_mismatch(e, g, item_schema) is None),
                None,
            )
            if hit is None:
                return f"{path}: expected item {e!r} (#{i}) has no match in {got!r}"
            unmatched.pop(hit)
        return None
    if kind == "mapping":
        if schema.fields is not None:
            for key, sub in schema.fields.items():
                problem = explain_mismatch(expected[key], got[key], sub, f"{path}.{key}")
                if problem:
                    return problem
            return None
        exp = {_norm_str(str(k)): v for k, v in expected.items()}
        gt = {_norm_str(str(k)): v for k, v in got.items()}
        if set(exp) != set(gt):
            return (
                f"{path}: keys differ (missing {sorted(set(exp) - set(gt))}, "
                f"unexpected {sorted(set(gt) - set(exp))})"
            )
        for key in sorted(exp):
            sub = schema.items or _infer_schema(exp[key])
            problem = explain_mismatch(exp[key], gt[key], sub, f"{path}.{key}")
            if problem:
                return problem
        return None
    raise AnswerError(f"unknown answer kind {kind!r}")


def answers_match(expected: Any, got: Any, schema: AnswerSchema) -> bool:
    """True when `got` equals `expected` under the schema's strict, per-field rules."""
    return explain_mismatch(expected, got, schema) is None


def _infer_schema(value: Any) -> AnswerSchema:
    """Exact-comparison schema for untyped nested values (numbers still use defaults)."""
    if isinstance(value, bool):
        return AnswerSchema(kind="boolean")
    if isinstance(value, int):
        return AnswerSchema(kind="integer")
    if isinstance(value, float):
        return AnswerSchema(kind="number")
    if isinstance(value, str):
        return AnswerSchema(kind="string")
    if isinstance(value, list):
        return AnswerSchema(kind="list")
    return AnswerSchema(kind="mapping")
