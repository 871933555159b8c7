"""Typed grammar: grow program skeletons top-down from an answer-producing operator.

A skeleton is a `Node` DAG whose columns are still symbolic slots (`num#0`, `key#1`);
binding real columns happens later, so the cost of this search does not depend on how
many columns the table has. Every value is created because a consumer asked for it, so
skeletons never contain dead code; split/pair values are shared by all their consumers.
"""

from __future__ import annotations

import random
from collections import Counter

from verilearn_assets.analysis.sources.procedural.operators import OPERATORS, OpSpec
from verilearn_assets.analysis.sources.procedural.program import Node
from verilearn_assets.analysis.sources.procedural.types import (
    ALL_TYPES,
    ANSWER_TYPES,
    SHARED_TYPES,
    TABLE,
    VType,
)

PRODUCERS: dict[VType, list[OpSpec]] = {t: [] for t in ALL_TYPES}
for _spec in OPERATORS:
    PRODUCERS[_spec.output].append(_spec)


def _min_costs() -> dict[VType, int]:
    """Fewest operators needed to produce each type (the table itself is free)."""
    inf = 10**6
    cost = {t: inf for t in ALL_TYPES}
    cost[TABLE] = 0
    changed = True
    while changed:
        changed = False
        for spec in OPERATORS:
            c = 1 + sum(cost[t] for t in spec.inputs)
            if c < cost[spec.output]:
                cost[spec.output] = c
                changed = True
    missing = [str(t) for t, c in cost.items() if c >= inf]
    if missing:
        raise ValueError(f"grammar cannot produce types: {missing}")
    return cost


MIN_COST = _min_costs()
OP_COST: dict[str, int] = {s.name: 1 + sum(MIN_COST[t] for t in s.inputs) for s in OPERATORS}
ROOT_OPS: list[OpSpec] = [s for s in OPERATORS if s.output in ANSWER_TYPES]


class SkeletonFailed(Exception):
    """This attempt painted itself into a corner (e.g. could not make inputs distinct)."""


class Expander:
    """Grows one skeleton; `usage` is shared across attempts to spread operator coverage."""

    def __init__(self, rng: random.Random, usage: Counter[str], max_filters: int) -> None:
        self.rng = rng
        self.usage = usage
        self.max_filters = max_filters
        self.filters = 0
        self.shared: dict[VType, Node] = {}
        self.tables: list[Node] = []
        self.slots: Counter[str] = Counter()

    def grow(self, root: OpSpec, budget: int) -> Node:
        node = self._apply(root, max(budget, OP_COST[root.name]))
        if node is None:
            raise SkeletonFailed("root produced no node")
        return node

    # -- expansion ---------------------------------------------------------------------
    def _expand(self, t: VType, budget: int) -> Node | None:
        if t == TABLE:
            return self._table(budget)
        if t in SHARED_TYPES and t in self.shared:
            return self.shared[t]
        options = [s for s in PRODUCERS[t] if OP_COST[s.name] <= max(budget, MIN_COST[t])]
        weights = [self._weight(s, budget) for s in options]
        spec = self.rng.choices(options, weights)[0]
        node = self._apply(spec, budget)
        if t in SHARED_TYPES:
            self.shared[t] = node  # type: ignore[assignment]
        return node

    def _table(self, budget: int) -> Node | None:
        if self.tables and self.rng.random() < 0.3:
            return self.rng.choice(self.tables)
        if budget <= 0 or self.filters >= self.max_filters:
            return None
        self.filters += 1
        spec = self.rng.choices(
            PRODUCERS[TABLE], [self._weight(s, budget) for s in PRODUCERS[TABLE]]
        )[0]
        node = self._apply(spec, budget)
        self.tables.append(node)
        return node

    def _weight(self, spec: OpSpec, budget: int) -> float:
        w = 1.0 / (1 + self.usage[spec.name])
        spare = budget - OP_COST[spec.name]
        if spare >= 1:
            # inputs that can absorb more operators: anything but the table (whose growth is
            # capped by max_filters) and shared values (built once)
            deep = [t for t in spec.inputs if t != TABLE and t not in SHARED_TYPES]
            w *= (1 + 3 * len(deep)) if deep else 1.0
        else:
            w *= 2.0 if OP_COST[spec.name] == budget else 1.0
        return w

    def _apply(self, spec: OpSpec, budget: int) -> Node:
        self.usage[spec.name] += 1
        shares = [MIN_COST[t] for t in spec.inputs]
        spare = budget - OP_COST[spec.name]
        deep = [i for i, t in enumerate(spec.inputs) if t != TABLE and t not in SHARED_TYPES]
        tables = [i for i, t in enumerate(spec.inputs) if t == TABLE]
        for _ in range(max(spare, 0)):
            if tables and (not deep or self.rng.random() < 0.25):
                shares[self.rng.choice(tables)] += 1
            elif deep:
                shares[self.rng.choice(deep)] += 1
        args: list[Node | None] = []
        for i, t in enumerate(spec.inputs):
            arg = self._expand(t, shares[i])
            tries = 0
            while spec.distinct_inputs and _key(arg) in {_key(a) for a in args}:
                tries += 1
                if tries > 4:
                    raise SkeletonFailed(f"{spec.name}: could not make inputs distinct")
                arg = self._expand(t, shares[i])
            args.append(arg)
        return Node(spec.name, tuple(args), self._slots(spec))

    def _slots(self, spec: OpSpec) -> tuple[str, ...]:
        chosen: list[str] = []
        for role in spec.slots:
            existing = [
                f"{role}#{k}" for k in range(self.slots[role]) if f"{role}#{k}" not in chosen
            ]
            if existing and self.rng.random() < 0.25:
                chosen.append(self.rng.choice(existing))
            else:
                chosen.append(f"{role}#{self.slots[role]}")
                self.slots[role] += 1
        return tuple(chosen)


def _key(node: Node | None) -> str:
    return node.key if node is not None else "df"
