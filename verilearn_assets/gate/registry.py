"""The evaluator registry: every family's blocking rules, run the same way everywhere.

The Dagster asset checks (`gate/adapter.py`) and `verilearn gate` both call `evaluate`, so
a verdict in the UI and a verdict on the command line come from the same code. Pure: no
Dagster here.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path

from verilearn_assets.core import lake
from verilearn_assets.core.contract import GateRule, PoolProvider, RuleContext, RuleOutcome
from verilearn_assets.core.family import Family, families


@dataclass(frozen=True)
class RegisteredRule:
    """One rule of one family, with the lake asset it guards."""

    family: Family
    rule: GateRule

    @property
    def asset(self) -> str:
        """The guarded asset as `<family>/<asset>` (its key path and its lake path)."""
        return self.family.asset_lake(self.rule.on)


def registered_rules(only: list[str] | None = None) -> list[RegisteredRule]:
    """Every blocking rule of every registered family (or of the families named)."""
    out = []
    for name, fam in families().items():
        if only is not None and name not in only:
            continue
        out.extend(RegisteredRule(fam, rule) for rule in fam.rules)
    return out


def evaluate(
    family: Family,
    rule: GateRule,
    source: str,
    split: str,
    home: Path,
    pool: PoolProvider | None = None,
) -> RuleOutcome:
    """Run one rule on one partition.

    A rule that raises (a record that breaks its contract, a sandbox that cannot start)
    fails with the error named instead of stopping the gate, so every other partition
    and rule is still evaluated and reported; the traceback's last frame is kept.
    """
    if rule.needs_pool and pool is None:
        raise ValueError(f"rule {rule.name!r} of family {family.name!r} needs the sandbox pool")
    ctx = RuleContext(family=family, source=source, split=split, home=Path(home), pool=pool)
    try:
        return rule.evaluate(ctx)
    except Exception as exc:  # reported as this rule's failure, with its origin
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return RuleOutcome(
            rule=rule.name,
            checked=0,
            failures=[f"{type(exc).__name__}: {exc} (raised at {where})"],
        )


def partition_present(family: Family, which: str, source: str, split: str, home: Path) -> bool:
    """Whether the lake holds a partition of the family's task or rollout asset."""
    asset = family.asset_lake(which)  # type: ignore[arg-type]
    return lake.partition_dir(asset, lake.lake_root(home), source=source, split=split).exists()
