"""`split_examples`: seeded, grouped by program, stratified by construct and length.

All methods of one program go to the same split (they share the header, so a model that
saw one in training would have seen the other's context). Programs are ordered by stratum
(main construct tag, length bucket), shuffled within it by the seed, then dealt out in a
repeating train/dev/test pattern, so every stratum is spread over the splits in
proportion.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from verilearn_assets.dafny.records import CONSTRUCTS, DafnyExample

DEFAULT_PATTERN = ("train",) * 6 + ("dev", "test")  # 75 / 12.5 / 12.5


def _stratum(examples: list[DafnyExample]) -> tuple[str, int]:
    tags = {t for e in examples for t in e.constructs}
    main = next((c for c in CONSTRUCTS if c in tags), "straight-line")
    lines = max(e.n_lines for e in examples)
    return main, 0 if lines <= 20 else 1 if lines <= 40 else 2


def split_examples(
    examples: Sequence[DafnyExample], seed: int = 0, pattern: Sequence[str] = DEFAULT_PATTERN
) -> dict[str, str]:
    """Example id -> split."""
    groups: dict[str, list[DafnyExample]] = defaultdict(list)
    for ex in examples:
        groups[ex.program].append(ex)
    strata: dict[tuple[str, int], list[str]] = defaultdict(list)
    for program, members in groups.items():
        strata[_stratum(members)].append(program)
    rng = random.Random(seed)
    ordered: list[str] = []
    for key in sorted(strata):
        programs = sorted(strata[key])
        rng.shuffle(programs)
        ordered.extend(programs)
    offset = rng.randrange(len(pattern))
    out: dict[str, str] = {}
    for i, program in enumerate(ordered):
        split = pattern[(i + offset) % len(pattern)]
        for ex in groups[program]:
            out[ex.id] = split
    return out
