"""Reading Dafny's output into one structured verdict.

`[SUCCESS]` from DafnyServer only means the request was handled; the verdict comes from the
`file(line,col): Error …` lines. Errors reported after Boogie started (`Verifying …`, the
CLI's "verifier finished" line) are verification errors; earlier ones are parse or
resolution errors (the CLI says which in its summary line; the server path decides from
the parser's message forms or a parse-only CLI run, see `verifier.py`). The z3
`model_compress` complaint and its parameter listing are noise and are dropped first.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

Status = Literal[
    "verified", "parse_error", "resolution_error", "verification_error", "timeout", "crash"
]
STATUSES: tuple[str, ...] = (
    "verified",
    "parse_error",
    "resolution_error",
    "verification_error",
    "timeout",
    "crash",
)

_DIAG = re.compile(
    r"^(?P<file>.*?)\((?P<line>\d+),(?P<col>\d+)\): "
    r"(?P<kind>Error|Warning|Related location|Timed out on)(?: (?P<code>BP\d+))?:? ?(?P<msg>.*)$"
)
# Warnings Dafny 2.3 verifies *through*: a bodiless loop is assumed to exit (`while true`
# proves `false`), a bodiless forall statement is an axiom. A program that draws one is
# refused whatever else the verifier says (with no partial credit: status resolution_error).
UNSOUND_WARNINGS = ("this loop has no body", "this forall statement has no body")
_TIMED_OUT = re.compile(r"timed out after \d+ seconds|\]\s+timed out|\d+ time outs?")
_PARSE_SUMMARY = re.compile(r"^\d+ parse errors? detected in")
_RESOLVE_SUMMARY = re.compile(r"^\d+ resolution/type errors? detected in")
_NOISE = (
    re.compile(r"^Prover error: .*unknown parameter"),
    re.compile(r"^Legal parameters are:"),
    re.compile(r"^\s+\w+ \((?:bool|string|unsigned int|int|double|symbol)\)"),
)


class Diagnostic(BaseModel):
    line: int
    column: int
    message: str
    code: str | None = None
    related: list[str] = Field(default_factory=list)  # "line:col message" of related spots


class VerifyResult(BaseModel):
    """One program's verdict, the same shape from the server pool and the CLI."""

    status: Status
    errors: list[Diagnostic] = Field(default_factory=list)
    verifier: dict[str, str] = Field(default_factory=dict)
    mode: str = "server"
    duration_ms: float = 0.0
    cached: bool = False
    key: str = ""  # content hash of (program, versions, flags): the cache key
    output: str = ""  # filtered output, capped, for logs and failure buckets

    @property
    def ok(self) -> bool:
        return self.status == "verified"

    def error_lines(self) -> list[int]:
        return [d.line for d in self.errors]


_SYNTAX = re.compile(r"(?:^\w+ expected$|^invalid \w+$|^this symbol not expected in \w+$)")


def looks_like_syntax_error(message: str) -> bool:
    """The parser's generated messages (`closeparen expected`, `invalid Expression`)."""
    return bool(_SYNTAX.search(message.strip()))


def filter_noise(text: str) -> str:
    """Drop z3's unknown-parameter complaint (Debian z3 ≥ 4.8.9 with Dafny 2.3)."""
    keep = [ln for ln in text.splitlines() if not any(p.search(ln) for p in _NOISE)]
    return "\n".join(keep)


def diagnostics(text: str) -> tuple[list[Diagnostic], bool]:
    """Errors (with related locations attached) and whether any VC timed out."""
    errors: list[Diagnostic] = []
    timed_out = False
    for line in text.splitlines():
        if _TIMED_OUT.search(line) and not re.search(r"\b0 time outs?", line):
            timed_out = True
        match = _DIAG.match(line.strip())
        if not match:
            continue
        kind = match["kind"]
        if kind == "Related location" and errors:
            errors[-1].related.append(f"{match['line']}:{match['col']} {match['msg']}")
        elif kind == "Timed out on":
            timed_out = True
        elif kind == "Warning" and any(w in match["msg"] for w in UNSOUND_WARNINGS):
            errors.append(
                Diagnostic(
                    line=int(match["line"]),
                    column=int(match["col"]),
                    message=f"unsound: {match['msg'].strip()} (refused)",
                    code="unsound",
                )
            )
        elif kind == "Error":
            errors.append(
                Diagnostic(
                    line=int(match["line"]),
                    column=int(match["col"]),
                    message=match["msg"].strip(),
                    code=match["code"],
                )
            )
    return errors, timed_out


def classify(text: str, parse_only_failed: bool | None = None) -> tuple[Status, list[Diagnostic]]:
    """The verdict of one run's (noise-filtered) output.

    `parse_only_failed` is the answer of a `/noResolve` re-run (server path), used when the
    output itself does not say whether a code-less error came from parsing or resolution.
    """
    errors, timed_out = diagnostics(text)
    unsound = [e for e in errors if e.code == "unsound"]
    if unsound:
        return "resolution_error", unsound
    lines = [ln.strip() for ln in text.splitlines()]
    if any(_PARSE_SUMMARY.match(ln) for ln in lines):
        return "parse_error", errors
    if any(_RESOLVE_SUMMARY.match(ln) for ln in lines):
        return "resolution_error", errors
    # Once Boogie ran (`Verifying …` in the server, the CLI's summary), every error is a
    # verification error, with or without a BP code (termination errors have none).
    verification_ran = any(
        ln.startswith("Verifying ") or ln.startswith("Dafny program verifier finished")
        for ln in lines
    )
    if errors and not verification_ran:
        if parse_only_failed is None:
            return "resolution_error", errors
        return ("parse_error" if parse_only_failed else "resolution_error"), errors
    if errors:
        return "verification_error", errors
    if timed_out:
        return "timeout", errors
    return "verified", errors
