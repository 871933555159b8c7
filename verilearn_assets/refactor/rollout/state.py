"""The agent's capped working state: pydantic model, merge, render, SQLite versions.

A model sees its state, not the whole transcript, so the state is small and bounded: every
text ≤ `text_cap` characters, `history` ≤ `history_cap` entries, and the rendered block
within a token budget, enforced by deterministic compaction (oldest items go first).
Each step saves a new version in one SQLite transaction, so a trajectory replays exactly
and concurrent actors never interleave a half-written state.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from verilearn_assets.refactor.config import StateSettings
from verilearn_assets.refactor.verify.sqlite_wal import connect_wal

LIST_FIELDS = ("goals", "constraints", "decisions", "hypotheses", "history", "open_issues")
# compaction drops from these first (oldest item first), goals and constraints last
DROP_ORDER = ("hypotheses", "open_issues", "decisions", "history", "constraints", "goals")
MAX_ITEMS = 8  # per list field besides history


class StateError(ValueError):
    """A state update was refused; the message names the field. The old state stands."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"state field {field!r}: {message}")
        self.field = field


def _check_text(value: str, cap: int, field: str) -> str:
    if len(value) > cap:
        raise ValueError(f"{field}: text of {len(value)} characters exceeds the cap of {cap}")
    return value


class State(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
    goals: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    constraints: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    decisions: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    hypotheses: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    history: list[str] = Field(default_factory=list, max_length=3)
    open_issues: list[str] = Field(default_factory=list, max_length=MAX_ITEMS)
    next_focus: str = ""

    @field_validator(*LIST_FIELDS)
    @classmethod
    def _texts(cls, value: list[str], info: Any) -> list[str]:
        return [_check_text(v, 256, info.field_name) for v in value]

    @field_validator("next_focus")
    @classmethod
    def _focus(cls, value: str) -> str:
        return _check_text(value, 256, "next_focus")


class StateUpdate(BaseModel):
    """What a step may say: list items to add (history keeps the last few), a new focus,
    and items to resolve (removed from open_issues/hypotheses)."""

    model_config = ConfigDict(extra="forbid")
    goals: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)
    decisions: list[str] = Field(default_factory=list)
    hypotheses: list[str] = Field(default_factory=list)
    history: list[str] = Field(default_factory=list)
    open_issues: list[str] = Field(default_factory=list)
    resolved: list[str] = Field(default_factory=list)
    next_focus: str | None = None


def parse_update(raw: str | dict[str, Any], settings: StateSettings | None = None) -> StateUpdate:
    """Validate an update (JSON text or mapping); StateError names the first bad field."""
    settings = settings or StateSettings()
    if isinstance(raw, str):
        if not raw.strip():
            return StateUpdate()
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise StateError("<root>", f"not JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise StateError("<root>", f"must be a JSON object, got {type(raw).__name__}")
    try:
        update = StateUpdate.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "<root>"
        raise StateError(field, err["msg"]) from exc
    for name in (*LIST_FIELDS, "resolved"):
        for item in getattr(update, name):
            if len(item) > settings.text_cap:
                raise StateError(
                    name, f"text of {len(item)} characters exceeds {settings.text_cap}"
                )
    if update.next_focus is not None and len(update.next_focus) > settings.text_cap:
        raise StateError("next_focus", f"text exceeds {settings.text_cap} characters")
    return update


def merge(
    existing: State,
    update: StateUpdate,
    settings: StateSettings | None = None,
    to_budget: bool = True,
) -> State:
    """A new state: items appended (no duplicates), resolved items dropped, history trimmed
    to the last `history_cap`, then (with `to_budget`) compacted to the token budget by the
    rules; the actor passes False when a model compacts (`compaction.py`). `existing` is
    unchanged."""
    settings = settings or StateSettings()
    data = existing.model_dump()
    for name in LIST_FIELDS:
        items = [i for i in data[name] if i not in update.resolved]
        for item in getattr(update, name):
            if item not in items:
                items.append(item)
        cap = settings.history_cap if name == "history" else MAX_ITEMS
        data[name] = items[-cap:]
    if update.next_focus is not None:
        data["next_focus"] = update.next_focus
    try:
        state = State.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise StateError(".".join(str(p) for p in err["loc"]), err["msg"]) from exc
    return compact(state, settings.token_budget) if to_budget else state


def render(state: State) -> str:
    """The `<state>` block a prompt carries (stable order, one item per line)."""
    lines = []
    for name in ("goals", "constraints", "decisions", "hypotheses", "history", "open_issues"):
        items = getattr(state, name)
        lines.append(f"{name}:" + ("" if items else " (none)"))
        lines.extend(f"- {item}" for item in items)
    lines.append(f"next_focus: {state.next_focus or '(none)'}")
    return "\n".join(lines)


def count_tokens(text: str) -> int:
    """A deterministic, tokenizer-free estimate: ~4 characters per token, at least one per word."""
    return max(len(text) // 4, len(text.split()))


def compact(state: State, token_budget: int) -> State:
    """Deterministic rule-based summarization: drop the oldest item of the first non-empty
    field in DROP_ORDER until the rendered state fits the budget (the focus stays)."""
    data = state.model_dump()
    while count_tokens(render(State.model_validate(data))) > token_budget:
        for name in DROP_ORDER:
            if data[name]:
                data[name] = data[name][1:]
                break
        else:
            data["next_focus"] = data["next_focus"][: token_budget * 2]
            break
    return State.model_validate(data)


SCHEMA = """
CREATE TABLE IF NOT EXISTS states (
    task_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    state JSON NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (task_id, version)
);
"""


def connect(path: Path) -> sqlite3.Connection:
    """A connection for one thread; WAL so readers never block the writer."""
    conn = connect_wal(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE … COMMIT (ROLLBACK on any error): one step, all or nothing."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class StateStore:
    """Versioned states in SQLite (JSON column): version 0 is the empty state."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.conn = connect(self.path)
        self.conn.executescript(SCHEMA)

    def close(self) -> None:
        self.conn.close()

    def load(self, task_id: str) -> tuple[State, int]:
        row = self.conn.execute(
            "SELECT state, version FROM states WHERE task_id = ? ORDER BY version DESC LIMIT 1",
            (task_id,),
        ).fetchone()
        if row is None:
            return State(), 0
        return State.model_validate_json(row[0]), int(row[1])

    def save(self, task_id: str, state: State, conn: sqlite3.Connection | None = None) -> int:
        """Store the next version; inside the caller's transaction when `conn` is given."""
        own = conn is None
        conn = conn or self.conn
        if own:
            conn.execute("BEGIN IMMEDIATE")
        try:
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(version), 0) FROM states WHERE task_id = ?", (task_id,)
            ).fetchone()
            version = int(last) + 1
            conn.execute(
                "INSERT INTO states (task_id, version, state, created) VALUES (?, ?, ?, ?)",
                (task_id, version, state.model_dump_json(), time.time()),
            )
        except BaseException:
            if own:
                conn.execute("ROLLBACK")
            raise
        if own:
            conn.execute("COMMIT")
        return version

    def versions(self, task_id: str) -> list[tuple[int, State, float]]:
        rows = self.conn.execute(
            "SELECT version, state, created FROM states WHERE task_id = ? ORDER BY version",
            (task_id,),
        ).fetchall()
        return [(int(v), State.model_validate_json(s), float(c)) for v, s, c in rows]

    def apply_update(
        self, task_id: str, raw: str | dict[str, Any], settings: StateSettings
    ) -> State:
        """Validate, merge and save in one go; on a bad update nothing is written."""
        state, _ = self.load(task_id)
        new = merge(state, parse_update(raw, settings), settings)
        self.save(task_id, new)
        return new
