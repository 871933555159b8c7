"""Strict hook grounding: a hook counts only if its code line was really executed.

A hook claims "this value came from this line". The claim is checked against the lines
of the cells that actually ran: after collapsing whitespace, `code_line` must equal one
whole line — a substring is not enough, so `x = 1` never grounds against `x = 10`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from verilearn_assets.core.records import HookRecord

log = logging.getLogger(__name__)


def normalize_line(line: str) -> str:
    """Collapse every run of whitespace to one space and trim the ends."""
    return " ".join(line.split())


def executed_lines(cells: Iterable[str]) -> set[str]:
    """Every non-blank line of the executed cells, normalised."""
    return {n for code in cells for n in (normalize_line(x) for x in code.splitlines()) if n}


@dataclass(frozen=True)
class HookGrounding:
    """The verdict on one hook entry, with the reason a reader can check."""

    index: int
    name: str | None
    status: Literal["grounded", "ungrounded", "malformed"]
    reason: str


@dataclass(frozen=True)
class MalformedHook:
    index: int
    entry: Any
    reason: str


def _as_hook(entry: Any) -> HookRecord:
    if isinstance(entry, HookRecord):
        return entry
    if isinstance(entry, Mapping):
        return HookRecord.model_validate(dict(entry))
    raise TypeError(f"expected a hook record or mapping, got {type(entry).__name__}")


def ground_hooks(
    hooks: Sequence[HookRecord | Mapping[str, Any] | Any],
    executed_cells: Sequence[str],
) -> tuple[list[HookRecord], list[MalformedHook], list[HookGrounding]]:
    """Split hook entries into grounded hooks and malformed entries, with a verdict each.

    Entries that are not valid hook records, or whose `code_line` is empty or spans
    several lines, are malformed: logged and returned, never dropped silently. Valid
    hooks whose line never ran are "ungrounded" in `details` and left out of `grounded`.
    """
    lines = executed_lines(executed_cells)
    grounded: list[HookRecord] = []
    malformed: list[MalformedHook] = []
    details: list[HookGrounding] = []
    for i, entry in enumerate(hooks):
        try:
            hook = _as_hook(entry)
        except (ValidationError, TypeError) as exc:
            reason = f"not a valid hook record: {exc}".replace("\n", " ")
            log.warning("hook entry %d malformed: %s", i, reason)
            malformed.append(MalformedHook(i, entry, reason))
            details.append(HookGrounding(i, None, "malformed", reason))
            continue
        claim = normalize_line(hook.code_line)
        if not claim or "\n" in hook.code_line.strip():
            reason = (
                "code_line is empty"
                if not claim
                else "code_line spans several lines; it must name one line"
            )
            log.warning("hook %d (%r) malformed: %s", i, hook.name, reason)
            malformed.append(MalformedHook(i, entry, reason))
            details.append(HookGrounding(i, hook.name, "malformed", reason))
        elif claim in lines:
            grounded.append(hook)
            details.append(HookGrounding(i, hook.name, "grounded", "line executed"))
        else:
            reason = f"code_line {claim!r} matches no executed line"
            log.info("hook %d (%r) ungrounded: %s", i, hook.name, reason)
            details.append(HookGrounding(i, hook.name, "ungrounded", reason))
    return grounded, malformed, details
