"""`split_examples`: seeded, grouped by program, stratified by construct and length.

All methods of one program go to the same split (they share the header, so a model that
saw one in training would have seen the other's context), and so do all programs that hold
one identical method (same signature, spec and body once comments and layout are
normalized): corpora copy methods between files, and a method seen in training must not be
a test task elsewhere (`split_groups`). A program carries several
features at once (every construct tag it uses, or `straight-line`, plus its length
bucket), so the split is iterative stratification (Sechidis et al., 2011): the rarest
feature first, each of its programs goes to the split that still wants most of that
feature, ties broken by the split's overall deficit and then by the seed. A feature
with at least as many programs as there are splits' worth of proportion is thereby
spread over more than one split, where dealing one fixed pattern would let a small
stratum fall entirely into `train`.

`min_eval_tasks` (configs/dafny.yaml `corpus.min_eval_tasks`): every split but `train`
must hold at least that many tasks of each evaluated role, so that pass@1 on it moves in
steps of at most 1/min (10 → 10%). Counted before any verification (`eval_units`): every
example gives one writer task, and an example with hints (`n_hints`) an annotator task,
with procedural repairs on top (`tests/dafny/test_dafny_split_sizes.py` checks the
accepted tasks of the bundled corpus). The stratified deal runs with those splits' shares
raised to min / units, then whole programs move from the split with most to spare (the
smallest program first) until every split holds the minimum of every role. A corpus too
small to give every split the minimum (fewer than splits × min units of a role) is dealt
by proportion alone: a minimum it cannot meet would empty `train`.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Sequence

from verilearn_assets.core.records import content_hash
from verilearn_assets.dafny.lang.syntax import normalize
from verilearn_assets.dafny.records import DafnyExample

DEFAULT_PATTERN = ("train",) * 6 + ("dev", "test")  # 75 / 12.5 / 12.5


def length_bucket(n_lines: int) -> str:
    return "len:short" if n_lines <= 20 else "len:medium" if n_lines <= 40 else "len:long"


def program_features(examples: Sequence[DafnyExample]) -> frozenset[str]:
    """The strata one program belongs to: its construct tags and its length bucket."""
    tags = {f"tag:{t}" for e in examples for t in e.constructs} or {"tag:straight-line"}
    return frozenset(tags | {length_bucket(max(e.n_lines for e in examples))})


def split_examples(
    examples: Sequence[DafnyExample],
    seed: int = 0,
    pattern: Sequence[str] = DEFAULT_PATTERN,
    min_eval_tasks: int = 0,
) -> dict[str, str]:
    """Example id -> split; `pattern` gives the splits and their proportions, and every
    split but `train` gets at least `min_eval_tasks` examples when the corpus allows it."""
    if not pattern:
        raise ValueError("split_examples: pattern names no split")
    if min_eval_tasks < 0:
        raise ValueError(f"split_examples: min_eval_tasks must be >= 0, got {min_eval_tasks}")
    group_of = split_groups(examples)
    groups: dict[str, list[DafnyExample]] = defaultdict(list)
    for ex in examples:
        groups[group_of[ex.program]].append(ex)
    rng = random.Random(seed)
    programs = sorted(groups)
    rng.shuffle(programs)
    features = {p: program_features(groups[p]) for p in programs}
    share = {s: n / len(pattern) for s, n in Counter(pattern).items()}
    splits = list(share)
    size = {p: eval_units(groups[p]) for p in programs}
    total = sum(size.values(), Counter())
    minimum = eval_minimum(splits, total, min_eval_tasks)
    if minimum:
        need = max(min_eval_tasks / total[role] for role in total)
        raised = {s: max(share[s], need) for s in splits if s != "train"}
        rest = 1.0 - sum(raised.values())
        share = {
            s: raised.get(s, rest * share[s] / (1.0 - sum(share[r] for r in raised)))
            for s in splits
        }
    holders: dict[str, list[str]] = defaultdict(list)
    for p in programs:
        for f in features[p]:
            holders[f].append(p)
    wanted = {f: {s: share[s] * len(ps) for s in splits} for f, ps in holders.items()}
    overall = {s: share[s] * len(programs) for s in splits}
    placed: dict[str, str] = {}
    while len(placed) < len(programs):
        left = {f: [p for p in ps if p not in placed] for f, ps in holders.items()}
        rarest = min((f for f in left if left[f]), key=lambda f: (len(left[f]), f))
        for p in left[rarest]:
            tie = {s: rng.random() for s in splits}  # per program: the seed breaks every tie
            split = max(splits, key=lambda s: (wanted[rarest][s], overall[s], tie[s]))
            placed[p] = split
            overall[split] -= 1
            for f in features[p]:
                wanted[f][split] -= 1
    if minimum:
        top_up(placed, size, minimum, rng)
    return {ex.id: placed[group_of[ex.program]] for ex in examples}


def eval_units(examples: Sequence[DafnyExample]) -> Counter:
    """Role -> the tasks these examples give it, as far as known before verification: a
    writer task each, an annotator task each one with hints to remove."""
    return Counter({"writer": len(examples), "annotator": sum(e.n_hints > 0 for e in examples)})


def eval_minimum(splits: Sequence[str], total: Counter, min_eval_tasks: int) -> dict[str, int]:
    """Split -> the tasks of each role it must hold (every split but `train`:
    `min_eval_tasks`); empty when there is no minimum or a role has fewer than
    splits × min tasks in the whole corpus."""
    if not min_eval_tasks or min(total.values()) < len(splits) * min_eval_tasks:
        return {}
    return {s: min_eval_tasks for s in splits if s != "train"}


def top_up(
    placed: dict[str, str], size: dict[str, Counter], minimum: dict[str, int], rng: random.Random
) -> None:
    """Move whole programs into every split short of its minimum in a role, each from the
    split with most of that role to spare (no split is taken under the minimum in any
    role: `train`'s is the same), the smallest program that fits first, the seed breaking
    ties."""
    floor = max(minimum.values())
    order = {p: rng.random() for p in sorted(placed)}
    roles = sorted(set().union(*size.values()))
    for _ in range(len(placed)):
        count: dict[str, Counter] = defaultdict(Counter)
        for p, s in placed.items():
            count[s] += size[p]
        short = [(s, r) for s in sorted(minimum) for r in roles if count[s][r] < minimum[s]]
        if not short:
            return
        needy, role = short[0]

        donors = [
            p
            for p, s in placed.items()
            if s != needy
            and size[p][role]
            and all(count[s][r] - size[p][r] >= floor for r in roles)
        ]
        if not donors:
            break
        pick = min(
            donors,
            key=lambda p: (-count[placed[p]][role], sum(size[p].values()), order[p]),
        )
        placed[pick] = needy
    raise ValueError(
        f"split_examples: cannot give {', '.join(sorted(minimum))} {floor} tasks of each role "
        f"by moving whole programs (tasks per program {sorted(size.values(), key=str)})"
    )


def method_key(ex: DafnyExample) -> str:
    """One method, comments and layout aside: its signature, spec and annotated body."""
    return content_hash("dafny-method", normalize(ex.spec + ex.annotated_body))


def split_groups(examples: Sequence[DafnyExample]) -> dict[str, str]:
    """Program -> its group (the smallest program name of the group): programs that share
    an identical method are one group (union-find over shared method keys)."""
    parent: dict[str, str] = {ex.program: ex.program for ex in examples}

    def root(p: str) -> str:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    first: dict[str, str] = {}
    for ex in examples:
        other = first.setdefault(method_key(ex), ex.program)
        a, b = root(ex.program), root(other)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return {p: root(p) for p in parent}
