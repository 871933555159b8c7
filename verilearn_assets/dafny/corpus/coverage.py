"""Corpus coverage as numbers: per corpus, programs found, loaded, rewritten from Dafny 4,
skipped per reason, and reference (ground-truth) programs the verifier proves.

The reference of a program is its whole comment-free text after the dialect rewrite (the
`gold_program` every one of its examples reassembles to): one verification per program,
through the pool and the verdict cache, so a second partition's build pays cache hits only.
Rows go to the lake (`dafny/coverage/source=/split=/`, written by the partition that loaded
the corpora) and `mart_dafny_coverage` shows the latest load of each corpus. With
`corpus.limit` (smoke runs) `loaded` and the reference counts are of the programs kept.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Literal

from verilearn_assets.core.records import Record, Source, Split, content_hash
from verilearn_assets.dafny.corpus.catalog import CorpusSet
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

LAKE = "dafny/coverage"

Measure = Literal[
    "files", "loaded", "rewritten", "skipped", "reference_verified", "reference_failed"
]


class DafnyCoverageRow(Record):
    """One count of one corpus: `measure` (and for skips and failed references, `reason`)."""

    id: str
    source: Source
    split: Split
    corpus: str
    origin: str
    layout: str
    measure: Measure
    reason: str = ""
    n: int
    loaded_at: str  # when the load was made (UTC, ISO): the mart keeps each corpus's latest


def reference_verdicts(loaded: CorpusSet, verifier: DafnyVerifier) -> dict[str, str]:
    """Program -> the verifier's status on its reference (one verify per program)."""
    refs: dict[str, str] = {}
    for ex in loaded.examples:
        refs.setdefault(ex.program, ex.gold_program)
    results = verifier.verify_many(list(refs.values()))
    return {p: r.status for p, r in zip(refs, results, strict=True)}


def coverage_rows(
    loaded: CorpusSet, verdicts: dict[str, str], source: Source, split: Split
) -> list[DafnyCoverageRow]:
    """The counts of every corpus of `loaded`, as lake rows."""
    at = datetime.now(UTC).isoformat(timespec="seconds")
    rows = []
    for report in loaded.reports:
        corpus = report.corpus or report.origin
        programs = sorted({e.program for e in report.examples})
        failed = Counter(verdicts[p] for p in programs if verdicts.get(p) != "verified")
        counts: list[tuple[Measure, str, int]] = [
            ("files", "", report.files),
            ("loaded", "", len(programs)),
            ("rewritten", "", report.rewritten),
            ("reference_verified", "", sum(verdicts.get(p) == "verified" for p in programs)),
            *(("skipped", reason, n) for reason, n in sorted(report.skipped.items())),
            *(("reference_failed", status, n) for status, n in sorted(failed.items())),
        ]
        rows += [
            DafnyCoverageRow(
                id=content_hash("dafny-coverage", source, split, corpus, measure, reason),
                source=source,
                split=split,
                corpus=corpus,
                origin=report.origin,
                layout=report.layout,
                measure=measure,
                reason=reason,
                n=n,
                loaded_at=at,
            )
            for measure, reason, n in counts
        ]
    return rows
