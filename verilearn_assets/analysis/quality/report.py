"""Measure question quality classes over the bundled catalog, without Dagster or a sandbox.

    .venv/bin/python -m verilearn_assets.analysis.quality.report --home /tmp/q-home [--audit]

Builds the catalog's tables under `--home`, generates template and procedural candidates
for each, and prints counts per class: alternatives gaps of template variants, tie and
convention rejections, meaningless chains, degenerate answers, candidates passing the
screen per partition and per dataset, the readability distribution, and the tables the
procedural search left short of `generation.target_per_table` (with why). With `--audit`
nothing is rejected: every class is counted on what the generator proposes, which is
the "before" column of issue 10. Passing the screen is not yet acceptance: the sandbox
verification (`question_build.build_generated`) may still reject a candidate.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from verilearn_assets.analysis.config import QuestionsConfig, load_questions_config
from verilearn_assets.analysis.quality.readability import distribution, readability
from verilearn_assets.analysis.screen.run import screen_one
from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.generate import generate
from verilearn_assets.analysis.sources.generation_stats import SHORT
from verilearn_assets.analysis.sources.procedural.dryrun import load_table
from verilearn_assets.analysis.sources.template import REGISTRY
from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.splits import catalog_splits
from verilearn_assets.core.ingest.tables import build_tables


def alternatives_gaps(candidates: list[Candidate]) -> int:
    """Variant candidates missing an alternative their parent has (and do not rule out)."""
    by: dict[str, list[Candidate]] = {}
    for c in candidates:
        by.setdefault(c.template or "", []).append(c)
    gaps = 0
    for name, cands in by.items():
        tpl = REGISTRY.get(name)
        if tpl is None or not tpl.variant_of:
            continue
        for cv, cp in zip(cands, by.get(tpl.variant_of, []), strict=False):
            have = {a.description for a in cv.alternatives}
            ruled = [p for p, w in tpl.excludes if w in cv.question]
            gaps += any(
                a.description not in have and not any(a.description.startswith(p) for p in ruled)
                for a in cp.alternatives
            )
    return gaps


def measure(home: Path, cfg: QuestionsConfig, audit: bool) -> dict:
    if audit:
        cfg = cfg.model_copy(deep=True)
        cfg.screen.enabled = False
        cfg.procedural.reject_meaningless = False
    datasets = load_datasets_config()
    splits = catalog_splits(datasets, home)
    tables = sorted(build_tables(datasets, home), key=lambda t: t.id)
    classes: Counter[str] = Counter()
    partitions: Counter[str] = Counter()
    per_dataset: Counter[str] = Counter()
    per_family: Counter[str] = Counter()
    scores: dict[str, list[float]] = {"template": [], "procedural": []}
    gaps = 0
    short: list[str] = []
    for table in tables:
        split = splits.get(table.dataset, table.split)
        for source in ("template", "procedural"):
            gen = generate(table, source, cfg)
            passed = gen.candidates
            for key, n in gen.search_rejected.items():
                if key.startswith("would_"):  # audit: counted, not rejected (no record)
                    classes[key.removeprefix("would_")] += n
                elif key.startswith(SHORT):  # below generation.target_per_table, and why
                    short.append(key)
            for c in gen.rejected:
                classes[(c.rejection_reason or "").split(":", 1)[0]] += 1
            if audit and passed:
                df = load_table(table.path)
                judged = [
                    screen_one(c, df, cfg.screen.model_copy(update={"enabled": True}))
                    for c in passed
                ]
                for c in judged:
                    if c.rejection_reason:
                        classes[c.rejection_reason.split(":", 1)[0]] += 1
                passed = [c for c, j in zip(passed, judged, strict=True) if not j.rejection_reason]
            if source == "template":
                gaps += alternatives_gaps(gen.candidates)
            partitions[f"{source}/{split}"] += len(passed)
            per_dataset[f"{source}/{table.dataset}"] += len(passed)
            for c in passed:
                for fam in set(c.op_families):
                    per_family[f"{source}/{fam}/{split}"] += 1
            scores[source].extend(readability(c.question) for c in passed)
    return {
        "mode": "audit (before)" if audit else "enforced (after)",
        "alternatives_gaps": gaps,
        "rejected_by_class": dict(sorted(classes.items())),
        "passing_per_partition": dict(sorted(partitions.items())),
        "passing_per_dataset_min": {
            s: min((n for k, n in per_dataset.items() if k.startswith(s)), default=0)
            for s in ("template", "procedural")
        },
        "passing_per_dataset": dict(sorted(per_dataset.items())),
        "passing_per_family_split": dict(sorted(per_family.items())),
        "readability": {s: distribution(v) for s, v in scores.items()},
        "short_of_target": short,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, required=True, help="scratch home for the tables")
    ap.add_argument("--audit", action="store_true", help="count classes, reject nothing")
    args = ap.parse_args(argv)
    args.home.mkdir(parents=True, exist_ok=True)
    print(json.dumps(measure(args.home, load_questions_config(), args.audit), indent=1))


if __name__ == "__main__":
    main()
