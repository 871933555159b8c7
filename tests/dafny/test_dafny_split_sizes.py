"""Split sizes on the bundled corpus (`corpus.min_eval_tasks`, `dafny/corpus/splits.py`): dev and
test each hold at least the minimum, so pass@1 moves in steps of at most 1/min.

`verilearn eval --family dafny` scores one role over every source of a split
(`training/eval/single_turn.family_rows`) and the pass-rate mart breaks it down by source, so
the minimum holds per evaluated role (writer, annotator) and per source the demo builds
(template: writer and annotator; procedural: annotator only), counted on accepted tasks
built through `sources/build.build_tasks`, the code the `dafny/tasks` asset calls, with the real
verifier. The split itself stays grouped by program and stratified.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest

from verilearn_assets.dafny.config import load_dafny_config
from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.corpus.splits import program_features, split_examples
from verilearn_assets.dafny.sources.build import build_tasks
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

CONFIG = load_dafny_config(Path(__file__).resolve().parents[2] / "configs")
MIN = CONFIG.corpus.min_eval_tasks
EVAL_SPLITS = ("dev", "test")


def test_the_configured_minimum_gives_steps_of_at_most_ten_percent() -> None:
    assert MIN >= 10, f"configs/dafny.yaml corpus.min_eval_tasks={MIN}: pass@1 steps > 10%"


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_dev_and_test_hold_the_minimum_grouped_and_stratified(seed: int) -> None:
    examples = load_bundled()
    split = split_examples(examples, seed, min_eval_tasks=MIN)
    assert split == split_examples(examples, seed, min_eval_tasks=MIN)
    counts = Counter(split.values())
    hinted = Counter(split[e.id] for e in examples if e.n_hints > 0)
    assert all(counts[s] >= MIN and hinted[s] >= MIN for s in EVAL_SPLITS), (counts, hinted)
    assert split != split_examples(examples, seed)  # the minimum moved programs
    members: dict[str, list] = defaultdict(list)
    for ex in examples:
        members[ex.program].append(ex)
    assert all(len({split[e.id] for e in exs}) == 1 for exs in members.values())
    strata: dict[str, set[str]] = defaultdict(set)
    counted: Counter = Counter()
    for exs in members.values():
        for feature in program_features(exs):
            strata[feature].add(split[exs[0].id])
            counted[feature] += 1
    lumped = [f for f, n in counted.items() if n >= 3 and len(strata[f]) < 2]
    assert not lumped, lumped


def test_a_corpus_too_small_for_the_minimum_is_split_by_proportion() -> None:
    examples = load_bundled()
    programs = sorted({e.program for e in examples})
    small = [e for e in examples if e.program in programs[:12]]
    assert len(small) < 3 * MIN
    assert split_examples(small, 0, min_eval_tasks=MIN) == split_examples(small, 0)
    with pytest.raises(ValueError, match="min_eval_tasks must be >= 0"):
        split_examples(examples, 0, min_eval_tasks=-1)


def test_bundled_dev_and_test_hold_the_minimum_per_role_and_source(
    verifier: DafnyVerifier, tmp_path: Path
) -> None:
    per: Counter = Counter()
    for split in EVAL_SPLITS:
        for source in ("template", "procedural"):
            tasks, _ = build_tasks(source, split, CONFIG, verifier, home=tmp_path)
            assert {t.split for t in tasks} == {split}
            per.update((split, t.role, source) for t in tasks if t.status == "accepted")
    for split in EVAL_SPLITS:
        for role, source in (
            ("writer", "template"),
            ("annotator", "template"),
            ("annotator", "procedural"),
        ):
            assert per[split, role, source] >= MIN, (split, role, source, dict(per))
