"""Meaningless chains: programs whose steps a careful analyst would never write together.

The reducer already rewrites chains that are *equal* to a shorter one (an idempotent step
repeated, a shift before a z-score, ...). What it cannot rewrite away is rejected here with
reason `meaningless_chain`, so it never becomes a question:
- a one-input step applied twice in a row (cube root of a cube root, shares of shares),
- a step that undoes or is absorbed by its neighbour (centring a z-score; percentile ranks
  of a monotone rescaling; counting the values of a length-preserving transform),
- an order-dependent step (table-order differences, running totals) after an
  order-destroying one (a sort).
Data-dependent no-ops (a clip that clips nothing, a filter that keeps every row) are found
by the dry run on the table (`programs.dryrun.noop_steps`). When the metamorphic screen runs
(`analysis.screen.metamorphic`, the default), its step ablation replaces the absorbed-neighbour
rule: it drops each step in turn and finds redundant steps wherever they sit in the chain.
"""

from __future__ import annotations

from verilearn_assets.analysis.sources.procedural.operators import BY_NAME
from verilearn_assets.analysis.sources.procedural.program import SOURCE, Program

ORDER_DEPENDENT = frozenset({"first_difference", "running_total"})
ORDER_DESTROYING = frozenset({"sort_ascending"})
# strictly increasing maps: ranks, orderings and distinct counts ignore them
MONOTONE = frozenset(
    {"cube_root", "zscore", "minmax_scale", "center", "signed_log", "sort_ascending"}
)
# length-preserving transforms: a plain count of their output counts their input
SAME_LENGTH = frozenset(
    {
        "absolute",
        "signed_log",
        "square",
        "cube_root",
        "zscore",
        "minmax_scale",
        "percent_rank",
        "center",
        "clip_tukey",
        "sort_ascending",
        "running_total",
    }
)
# consumer -> producers it makes pointless (its result equals the result without them)
ABSORBED_BY: dict[str, frozenset[str]] = {
    "center": frozenset({"zscore"}),  # a z-score already has mean 0
    "percent_rank": MONOTONE | {"percent_rank"},
    "count_values": SAME_LENGTH,
    "count_distinct": MONOTONE,
}


def _series_input(program: Program, i: int) -> int | None:
    """The step whose output is step `i`'s first series input (None: a filter, or a step
    reading only the table)."""
    step = program.steps[i]
    series_inputs = [r for r in step.inputs if r != SOURCE]
    if not series_inputs or BY_NAME[step.op].family == "filter":
        return None
    return series_inputs[0]


# consumers that are themselves the step to drop (centring a z-score changes nothing); for
# the other absorbed pairs the producer is (ranks, counts and distinct counts ignore it)
CONSUMER_REDUNDANT = frozenset({"center"})


def absorbed_step(program: Program) -> str | None:
    """`redundant_step: step N (op) ...` for a step an identity makes pointless (the
    absorbed-neighbour rule), or None. With the metamorphic screen on, the search asks this
    before the dry run: step ablation would find the same step on the table and on every
    perturbed table, after a dozen runs of the program (a third of the procedural screen's
    time on the demo catalog); ablation still judges every other program, where a
    redundant step sits anywhere in the chain."""
    steps = program.steps
    for i, step in enumerate(steps):
        j = _series_input(program, i)
        if j is None or steps[j].op not in ABSORBED_BY.get(step.op, frozenset()):
            continue
        drop = i if step.op in CONSUMER_REDUNDANT else j
        other = j if drop == i else i
        return (
            f"redundant_step: step {drop + 1} ({steps[drop].op}) can be dropped: step "
            f"{other + 1} ({steps[other].op}) gives the same result without it (an identity)"
        )
    return None


def chain_problem(program: Program, absorbed: bool = True) -> str | None:
    """`meaningless_chain: ...` naming the offending steps, or None. `absorbed` False
    leaves out the neighbour-absorbs-neighbour rule: the metamorphic step ablation
    (`analysis.screen.metamorphic`) finds those, and non-adjacent ones, on the data."""
    steps = program.steps
    for i, step in enumerate(steps):
        first = _series_input(program, i)
        if first is None:
            continue
        prev = steps[first]
        if step.op == prev.op and step.cols == prev.cols and len(step.inputs) == 1:
            return f"meaningless_chain: step {i + 1} applies {step.op} twice in a row"
        if absorbed and prev.op in ABSORBED_BY.get(step.op, frozenset()):
            return (
                f"meaningless_chain: step {i + 1} ({step.op}) makes step "
                f"{first + 1} ({prev.op}) pointless"
            )
        if step.op in ORDER_DEPENDENT:
            upstream = _lineage(program, first)
            destroyed = [j for j in upstream if steps[j].op in ORDER_DESTROYING]
            if destroyed:
                return (
                    f"meaningless_chain: step {i + 1} ({step.op}) needs table order, but step "
                    f"{destroyed[0] + 1} ({steps[destroyed[0]].op}) has reordered the values"
                )
    return None


def _lineage(program: Program, start: int) -> list[int]:
    """`start` and the transform steps feeding it, following first inputs."""
    out = []
    j = start
    while j != SOURCE and BY_NAME[program.steps[j].op].family == "transform":
        out.append(j)
        j = program.steps[j].inputs[0]
    return out
