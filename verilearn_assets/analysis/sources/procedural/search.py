"""Bounded, seeded search: skeletons from the grammar, column bindings, reduction, de-dup.

Cost model: the grammar never looks at columns; column eligibility is one pass over the
profile; each skeleton gets at most `max_bindings_per_op` bindings chosen by arithmetic on
a seeded column order (never by enumerating column pairs). So the work grows linearly in
the number of columns, and `SearchStats` counts it so tests can check that.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import Field

from verilearn_assets.analysis.sources.procedural.chains import absorbed_step, chain_problem
from verilearn_assets.analysis.sources.procedural.grammar import ROOT_OPS, Expander, SkeletonFailed
from verilearn_assets.analysis.sources.procedural.operators import OpSpec
from verilearn_assets.analysis.sources.procedural.program import (
    Node,
    Program,
    ProgramError,
    linearize,
    validate,
)
from verilearn_assets.analysis.sources.procedural.reduce import reduce_node
from verilearn_assets.analysis.sources.procedural.types import ROLE_KEY, ROLE_NUMERIC, ROLES
from verilearn_assets.core.config import StrictConfig
from verilearn_assets.core.records import ColumnProfile, content_hash


class ProgramSearchConfig(StrictConfig):
    """Bounds of the procedural search (all deterministic given `seed`)."""

    seed: int = 0
    max_programs: int = Field(default=80, ge=1)
    min_ops: int = Field(default=2, ge=1)
    max_ops: int = Field(default=12, ge=8)
    max_skeletons: int = Field(default=800, ge=1)
    max_bindings_per_op: int = Field(default=2, ge=1)
    max_filters: int = Field(default=2, ge=0)
    max_groups: int = Field(default=12, ge=2)
    min_numeric_unique: int = Field(default=3, ge=2)
    max_missing_pct: float = Field(default=50.0, ge=0)
    digits: int = Field(default=4, ge=0, le=10)
    dry_run: bool = True  # execute on the table (when a path is given) and drop bad answers
    # reject meaningless chains and no-op steps; False only counts them (`would_<reason>`),
    # which is how the quality report measures what the rule removes
    reject_meaningless: bool = True


@dataclass
class SearchStats:
    """Work done, counted (not timed), and why programs were turned away."""

    columns_indexed: int = 0
    skeletons_tried: int = 0
    bindings_tried: int = 0
    accepted: int = 0
    rejected: Counter[str] = field(default_factory=Counter)

    @property
    def work(self) -> int:
        return self.columns_indexed + self.skeletons_tried + self.bindings_tried


def eligible_columns(
    columns: list[ColumnProfile], cfg: ProgramSearchConfig, stats: SearchStats
) -> dict[str, list[str]]:
    """Columns each slot role may bind to, decided from the profile alone."""
    out: dict[str, list[str]] = {r: [] for r in ROLES}
    for col in columns:
        stats.columns_indexed += 1
        if col.id_like or col.kind in ("text", "datetime", "empty"):
            continue
        if (
            col.kind in ("numeric", "integer")
            and col.n_unique >= cfg.min_numeric_unique
            and col.missing_pct <= cfg.max_missing_pct
        ):
            out[ROLE_NUMERIC].append(col.name)
        if (
            col.kind in ("categorical", "boolean", "integer", "numeric")
            and 2 <= col.n_unique <= cfg.max_groups
        ):
            out[ROLE_KEY].append(col.name)
    return out


def _slots(node: Node) -> dict[str, list[str]]:
    found: dict[str, set[str]] = {r: set() for r in ROLES}
    for n in node.walk():
        for s in n.cols:
            found[s.split("#")[0]].add(s)
    return {r: sorted(v, key=lambda s: int(s.split("#")[1])) for r, v in found.items()}


def _bind(node: Node, mapping: dict[str, str], memo: dict[str, Node]) -> Node:
    if node.key not in memo:
        args = tuple(None if a is None else _bind(a, mapping, memo) for a in node.args)
        memo[node.key] = Node(node.op, args, tuple(mapping[c] for c in node.cols))
    return memo[node.key]


def bindings(
    skeleton: Node, pools: dict[str, list[str]], limit: int, salt: int
) -> list[dict[str, str]]:
    """Up to `limit` slot->column assignments; distinct slots of a role get distinct columns.

    Assignment j puts slot i of a role at position (base_j + i*step) of that role's column
    order, with step = n // k: O(limit * slots) work whatever the number of columns.
    """
    slots = _slots(skeleton)
    out: list[dict[str, str]] = []
    for j in range(limit):
        mapping: dict[str, str] = {}
        for role, names in slots.items():
            pool = pools[role]
            n, k = len(pool), len(names)
            if k == 0:
                continue
            if n < k:
                return []
            step = n // k
            base = (salt + j * max(1, n // limit) + j) % n
            for i, slot in enumerate(names):
                mapping[slot] = pool[(base + i * step) % n]
        out.append(mapping)
    return out


def _root_rotation(rng: random.Random) -> list[OpSpec]:
    """Answer-producing operators, shuffled within family and interleaved across families,
    so every family (evidence->decision->test chains included) is tried early."""
    by_family: dict[str, list[OpSpec]] = {}
    for spec in ROOT_OPS:
        by_family.setdefault(spec.family, []).append(spec)
    queues = [by_family[f] for f in sorted(by_family)]
    for q in queues:
        rng.shuffle(q)
    out: list[OpSpec] = []
    for i in range(max(len(q) for q in queues)):
        out.extend(q[i % len(q)] for q in queues)
    return out


def _grow(
    root: OpSpec,
    budget: int,
    rng: random.Random,
    usage: Counter[str],
    cfg: ProgramSearchConfig,
    stats: SearchStats,
    tries: int = 3,
) -> Node | None:
    """Best of a few growths: the one closest to the budget without exceeding `max_ops`
    (a single growth often stops early when it picks a leaf-like operator)."""
    best: Node | None = None
    for _ in range(tries):
        stats.skeletons_tried += 1
        try:
            node = Expander(rng, usage, cfg.max_filters).grow(root, budget)
        except SkeletonFailed:
            stats.rejected["skeleton_failed"] += 1
            continue
        if node.size > cfg.max_ops:
            stats.rejected["too_many_ops"] += 1
            continue
        if best is None or abs(node.size - budget) < abs(best.size - budget):
            best = node
        if best.size == budget:
            break
    return best


def _has_same_column_twice(node: Node) -> bool:
    return any(len(set(n.cols)) != len(n.cols) for n in node.walk())


# Rejections worth a record in the lake (the diagnostics mart counts them by reason):
# the chain rules, the dry run's no-op steps and every reason of the pre-verification
# screen run inside the search (`analysis.screen.run`, `analysis.screen.metamorphic`); other
# reasons (duplicates, type errors, ...) are only counted in `SearchStats`.
KEPT_REASONS = (
    "meaningless_chain",
    "degenerate",
    "redundant_step",
    "tautology",
    "tie_unstated",
    "ambiguous_convention",
)


@dataclass
class SearchResult:
    programs: list[Program]
    stats: SearchStats
    kept_rejections: list[tuple[Program, str]] = field(default_factory=list)


def search_programs(
    columns: list[ColumnProfile],
    cfg: ProgramSearchConfig,
    accept: Callable[[Program], str | None] | None = None,
    pair_rules: bool = True,
) -> SearchResult:
    """Accepted canonical programs, in discovery order. `accept(program) -> str|None` may
    veto a program by returning a rejection reason (the dry run and the screen): the search
    goes on until `max_programs` are accepted or `max_skeletons` are spent. `pair_rules`
    False leaves out `chain_problem`'s absorbed-neighbour rule (step ablation replaces it)."""
    stats = SearchStats()
    pools = eligible_columns(columns, cfg, stats)
    if len(columns) < 2 or not pools[ROLE_NUMERIC]:
        return SearchResult([], stats)
    rng = random.Random(cfg.seed)
    for role in ROLES:
        pools[role] = sorted(pools[role])
        rng.shuffle(pools[role])
    roots = _root_rotation(rng)
    usage: Counter[str] = Counter()
    seen: set[str] = set()
    accepted: list[Program] = []
    kept: list[tuple[Program, str]] = []
    for attempt in range(cfg.max_skeletons):
        if len(accepted) >= cfg.max_programs:
            break
        root = roots[attempt % len(roots)]
        budget = rng.randint(cfg.min_ops, cfg.max_ops)
        skeleton = _grow(root, budget, rng, usage, cfg, stats)
        if skeleton is None:
            continue
        salt = int(content_hash(skeleton.key, cfg.seed, length=8), 16)
        maps = bindings(skeleton, pools, cfg.max_bindings_per_op, salt)
        if not maps:
            stats.rejected["no_columns_for_slots"] += 1
        for mapping in maps:
            stats.bindings_tried += 1
            bound = _bind(skeleton, mapping, {})
            if _has_same_column_twice(bound):
                stats.rejected["same_column_twice"] += 1
                continue
            try:
                program = linearize(reduce_node(bound))
                validate(program)
            except ProgramError as exc:
                stats.rejected[type(exc).__name__] += 1
                continue
            if len(program.steps) < cfg.min_ops:
                stats.rejected["too_few_ops"] += 1
                continue
            if program.key in seen:
                stats.rejected["duplicate"] += 1
                continue
            seen.add(program.key)
            reason = chain_problem(program, absorbed=pair_rules)
            if reason is None and not pair_rules:  # ablation's verdict, known without a run
                reason = absorbed_step(program)
            if reason is None and accept is not None:
                reason = accept(program)
            if reason and not cfg.reject_meaningless and reason.startswith(KEPT_REASONS):
                stats.rejected[f"would_{reason.split(':', 1)[0]}"] += 1
                reason = None
            if reason:
                key = reason.split(":", 1)[0]
                stats.rejected[key] += 1
                if key in KEPT_REASONS:
                    kept.append((program, reason))
                continue
            accepted.append(program)
            stats.accepted += 1
            if len(accepted) >= cfg.max_programs:
                break
    return SearchResult(accepted, stats, kept)
