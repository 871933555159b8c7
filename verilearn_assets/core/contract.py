"""The gate's contract types, owned by the core so that the core never imports the gate.

A family's blocking rule is a `GateRule`: a plain function `RuleContext -> RuleOutcome`.
The gate (`verilearn_assets.gate`) runs them as Dagster asset checks and on the command
line; families declare them; the core's own smoke suite reports with `RuleOutcome` too.
Pure: no Dagster here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import polars as pl
from pydantic import BaseModel, Field

from verilearn_assets.core import lake
from verilearn_assets.core.records import Record
from verilearn_assets.core.sandbox.pool import SandboxPool

if TYPE_CHECKING:
    from verilearn_assets.core.family import Family

MAX_LISTED = 20


class RuleOutcome(BaseModel):
    """Whether a rule passed, how many records it looked at, and each failure named."""

    rule: str
    checked: int
    failures: list[str] = Field(default_factory=list)
    stats: dict[str, float | int | str] = Field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        if self.passed:
            return f"{self.rule}: ok ({self.checked} checked)"
        shown = "; ".join(self.failures[:MAX_LISTED])
        more = len(self.failures) - MAX_LISTED
        tail = f"; … and {more} more" if more > 0 else ""
        return f"{self.rule}: {len(self.failures)} failure(s) of {self.checked}: {shown}{tail}"


class PoolProvider(Protocol):
    """What a rule needing the sandbox gets: the container pool resource (or any object
    whose `get_pool()` gives a not-yet-started pool to use as `async with`)."""

    def get_pool(self) -> SandboxPool: ...


@dataclass(frozen=True)
class RuleContext:
    """Where a rule looks: one family's partition under one home, and the pool if needed."""

    family: Family
    source: str
    split: str
    home: Path
    pool: PoolProvider | None = None

    @property
    def lake_root(self) -> Path:
        return lake.lake_root(self.home)

    def task_frame(self) -> pl.DataFrame:
        return lake.read_partition(
            self.family.task_lake, self.lake_root, source=self.source, split=self.split
        )

    def tasks(self) -> list[Record]:
        return self.family.read_tasks(self.home, self.source, self.split)

    def rollouts(self) -> list[Record]:
        return self.family.read_rollouts(self.home, self.source, self.split)


@dataclass(frozen=True)
class GateRule:
    """A blocking check: its name (unique in the code location), the asset it guards and
    the pure evaluation that both the Dagster check and `verilearn gate` run."""

    name: str
    on: Literal["tasks", "rollouts"]
    evaluate: Callable[[RuleContext], RuleOutcome]
    description: str
    needs_pool: bool = False  # evaluated with the container pool (passed in)
    needs_jail: bool = False  # opens a jail of its own (Dafny, ast-grep): a sandbox worker runs it
