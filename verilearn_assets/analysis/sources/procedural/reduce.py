"""Canonical reduction: rewrite a program to one normal form so equivalent programs collide.

Rules (each preserves the computed answer):
- filters commute and repeat harmlessly (thresholds come from the full table), so a chain
  of filters becomes the sorted set of its distinct conditions;
- an idempotent operator applied twice in a row is applied once;
- a sort feeding an order-insensitive consumer is dropped;
- a transform whose effect the next one undoes is dropped (z-score/min-max ignore a prior
  shift or rescale; absolute value after squaring changes nothing);
- commutative inputs are put in a fixed order;
- a pair whose every consumer is symmetric lists its two columns in sorted order.
Shared sub-expressions are merged by `linearize` (equal nodes are one value).
"""

from __future__ import annotations

from verilearn_assets.analysis.sources.procedural.operators import BY_NAME
from verilearn_assets.analysis.sources.procedural.program import (
    Node,
    Program,
    linearize,
    to_tree,
    validate,
)

# consumer -> producers whose effect the consumer makes irrelevant
_ABSORBS: dict[str, frozenset[str]] = {
    "zscore": frozenset({"center", "zscore", "minmax_scale"}),
    "minmax_scale": frozenset({"center", "zscore", "minmax_scale"}),
    "center": frozenset({"center"}),
}
_NON_NEGATIVE = frozenset({"square", "absolute", "minmax_scale", "percent_rank"})


def reduce_node(root: Node) -> Node:
    """Normal form of an expression DAG."""
    consumers: dict[str, list[str]] = {}
    for node in root.walk():
        for arg in node.args:
            if arg is not None:
                consumers.setdefault(arg.key, []).append(node.op)
    memo: dict[str, Node] = {}

    def r(node: Node | None) -> Node | None:
        if node is None:
            return None
        if node.key in memo:
            return memo[node.key]
        spec = BY_NAME[node.op]
        args = [r(a) for a in node.args]
        if spec.order_insensitive:
            args = [a.args[0] if a is not None and a.op == "sort_ascending" else a for a in args]
        if spec.commutative:
            pos = list(spec.commutative)
            ordered = sorted((args[i] for i in pos), key=lambda a: a.key if a else "df")
            for i, a in zip(pos, ordered, strict=True):
                args[i] = a
        absorbed = _ABSORBS.get(node.op, frozenset())
        while args and args[0] is not None and args[0].op in absorbed:
            args[0] = args[0].args[0]
        if node.op == "absolute" and args[0] is not None and args[0].op in _NON_NEGATIVE:
            memo[node.key] = args[0]
            return args[0]
        cols = node.cols
        if node.op == "pair_columns" and all(
            BY_NAME[c].symmetric_pair for c in consumers.get(node.key, [])
        ):
            cols = tuple(sorted(cols))
        out = Node(node.op, tuple(args), cols)
        if (
            spec.idempotent
            and args
            and args[0] is not None
            and args[0].op == node.op
            and args[0].cols == cols
        ):
            out = args[0]
        if spec.family == "filter":
            out = _canonical_filters(out)
        memo[node.key] = out
        return out

    reduced = r(root)
    assert reduced is not None
    return reduced


def _canonical_filters(node: Node) -> Node:
    conditions: set[tuple[str, tuple[str, ...]]] = set()
    base: Node | None = node
    while base is not None and BY_NAME[base.op].family == "filter":
        conditions.add((base.op, base.cols))
        base = base.args[0]
    for op, cols in sorted(conditions):
        base = Node(op, (base,), cols)
    assert base is not None
    return base


def reduce_program(program: Program) -> Program:
    """Validate, then return the canonical form of a step program."""
    validate(program)
    reduced = linearize(reduce_node(to_tree(program)))
    validate(reduced)
    return reduced


def dedupe(programs: list[Program]) -> list[Program]:
    """Canonical forms, first occurrence kept, in input order."""
    seen: set[str] = set()
    out: list[Program] = []
    for p in programs:
        c = reduce_program(p)
        if c.key not in seen:
            seen.add(c.key)
            out.append(c)
    return out
