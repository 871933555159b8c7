"""Issues 10 and 24 before/after: the question-quality classes on the bundled catalog, one
measure applied to the output of two generators.

`compare` (issue 24) generates twice in one run with the code of this tree, the metamorphic
screens off (`screen.metamorphic: false`, the "before") and on, and judges both with the
same rules: answers that do not depend on the data (same-shape perturbed tables),
procedural steps whose removal changes nothing, tautologies, answers moved by an unstated
convention, duplicate-row answers of 0, options a question offers that its rule can never
choose, grammar (stacked parentheticals, "What is how many", not exactly one question
mark), and the candidates per source/split and per table (tables under
`generation.target_per_table`). Wrong-for-words answers (a template narrowing its
candidates) are measured by the templates' faithfulness tests, not here.

    .venv/bin/python benchmarks/question_quality.py compare --home /tmp/qq/home [--json OUT]

`dump`/`measure` compare two trees (issue 10):

`dump` runs with the code of whichever tree is first on `PYTHONPATH` (the old generator in
a `git worktree`, or HEAD) and writes every candidate it lets through to verification, per
table and source, with the program of each procedural candidate. `measure` then judges
every dump with HEAD's rules, so both columns are counted the same way:

1. template variants missing a reading (alternative code) their parent accepts, unless the
   variant's wording rules it out (`Template.excludes`);
2. questions whose answer moves beyond tolerance under a named convention variant
   (`conventions.check_conventions`: tied modes/argmax, ddof, Mann-Whitney, t-test,
   Yates, complete-rows median, ID columns) with neither wording nor alternative covering it;
3. procedural chains with an idempotent / cancelling / order-after-sort step (`chain_problem`);
4. degenerate answers: exactly 0 or a zero no-op count (`zero_reason`), a no-op step in the
   dry run (`noop_steps`), constant on 3 perturbed tables (`constant_reason`);
5. readability (rule-based score) distribution per source;
6. counts per source, split and dataset.

"Accepted" here is a candidate the tree sends to verification whose reference runs
in-process to a usable answer (the sandbox re-execution is not repeated: generated code
that runs in-process verifies in the sandbox, and this keeps the measure to minutes).

    git worktree add /tmp/before 049f7ca       # the last commit before the issue-10 work
    cd /tmp/before && PYTHONPATH=/tmp/before /work/main/.venv/bin/python \\
        /work/main/benchmarks/question_quality.py dump --home /tmp/qq/home-before \\
        --out /tmp/qq/before.jsonl
    cd /work/main && .venv/bin/python benchmarks/question_quality.py dump \\
        --home /tmp/qq/home-after --out /tmp/qq/after.jsonl
    .venv/bin/python benchmarks/question_quality.py measure \\
        before=/tmp/qq/before.jsonl after=/tmp/qq/after.jsonl [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

SOURCES = ("template", "procedural")


# --- dump: only APIs both trees have (generate, to_candidate, build_tables, catalog_splits)
def dump(home: Path, out: Path, metamorphic: bool | None = None) -> None:
    import verilearn_assets.analysis.sources.procedural as programs
    from verilearn_assets.analysis.config import load_questions_config
    from verilearn_assets.analysis.sources.generate import generate
    from verilearn_assets.core.ingest.catalog import load_datasets_config
    from verilearn_assets.core.ingest.splits import catalog_splits
    from verilearn_assets.core.ingest.tables import build_tables

    steps_by_code: dict[str, list] = {}
    to_candidate = programs.to_candidate

    def recording(program, digits: int = 4):  # keeps each candidate's program
        cand = to_candidate(program, digits)
        steps_by_code[cand.code] = [[s.op, list(s.inputs), list(s.cols)] for s in program.steps]
        return cand

    programs.to_candidate = recording  # looked up as a module global at call time
    cfg = load_questions_config()
    if metamorphic is not None:  # issue 24's before (False) and after (True) in one tree
        cfg = cfg.model_copy(
            update={"screen": cfg.screen.model_copy(update={"metamorphic": metamorphic})}
        )
    datasets = load_datasets_config()
    home.mkdir(parents=True, exist_ok=True)
    splits = catalog_splits(datasets, home)
    tables = sorted(build_tables(datasets, home), key=lambda t: t.id)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with out.open("w") as fh:
        for table in tables:
            split = splits.get(table.dataset, table.split)
            for source in SOURCES:
                gen = generate(table, source, cfg)
                turned_away = Counter(
                    (c.rejection_reason or "").split(":", 1)[0]
                    for c in getattr(gen, "rejected", [])
                )
                for cand in gen.candidates:
                    row = {
                        "kind": "candidate",
                        "dataset": table.dataset,
                        "table": table.id,
                        "path": str(table.path),
                        "split": split,
                        "candidate": cand.model_dump(
                            exclude={"conventions", "rejection_reason"}, mode="json"
                        ),
                        "steps": steps_by_code.get(cand.code),
                    }
                    fh.write(json.dumps(row) + "\n")
                fh.write(
                    json.dumps(
                        {
                            "kind": "table",
                            "dataset": table.dataset,
                            "table": table.id,
                            "source": source,
                            "split": split,
                            "turned_away": dict(turned_away),
                        }
                    )
                    + "\n"
                )
    print(f"dumped {len(tables)} tables to {out} in {time.perf_counter() - t0:.0f}s")


# --- measure: HEAD's rules on any dump ------------------------------------------------------
def _variant_gaps(cands: list[dict]) -> tuple[int, Counter[str]]:
    """Variant candidates missing a parent's alternative (same table, same computation)."""
    from verilearn_assets.analysis.screen.conventions import _body
    from verilearn_assets.analysis.sources.template import REGISTRY

    parents = {(c["table"], c["cand"].template, _body(c["cand"].code)): c["cand"] for c in cands}
    gaps = 0
    by_template: Counter[str] = Counter()
    for c in cands:
        cv = c["cand"]
        tpl = REGISTRY.get(cv.template or "")
        if tpl is None or not tpl.variant_of:
            continue
        cp = parents.get((c["table"], tpl.variant_of, _body(cv.code)))
        if cp is None:
            continue
        have = {_body(a.code) for a in cv.alternatives}
        ruled = [p for p, words in tpl.excludes if words in cv.question]
        missing = [
            a
            for a in cp.alternatives
            if _body(a.code) not in have and not any(a.description.startswith(p) for p in ruled)
        ]
        if missing:
            gaps += 1
            by_template[cv.template or ""] += 1
    return gaps, by_template


GRAMMAR = {
    "7_grammar_stacked_parentheticals": re.compile(r"\)\s*\("),
    "7_grammar_what_is_how_many": re.compile(r"\bwhat is how many\b", re.IGNORECASE),
}
QUOTED = re.compile(r"'([^']+)'")
ISSUE24_CLASSES = (
    "2_tie_unstated",
    "2_ambiguous_convention",
    "5_data_independent",
    "5_redundant_step",
    "5_tautology",
    "6_duplicate_rows_answer_0",
    "6_offers_never_chosen_option",
    *GRAMMAR,
    "7_grammar_not_one_question_mark",
)


def _offered_never_chosen(cand: Any, program: Any) -> list[str]:
    """Options the answer sentence offers that the program's decision step cannot return."""
    from verilearn_assets.analysis.sources.procedural.operators import BY_NAME

    if program is None:
        return []
    deciders = [s.op for s in program.steps if BY_NAME[s.op].family == "decision"]
    if not deciders:
        return []
    choosable = {v for op in deciders for v in QUOTED.findall(BY_NAME[op].code)}
    sentence = next((x for x in re.split(r"(?<=[?.])\s+", cand.question) if "Answer" in x), "")
    return [o for o in QUOTED.findall(sentence) if o not in choosable]


def issue24_classes(cand: Any, answer: Any, trials: Any, program: Any) -> list[str]:
    """The issue-24 classes one accepted candidate falls in (judged with this tree's rules)."""
    from verilearn_assets.analysis.screen.metamorphic import (
        data_independent_reason,
        perturbed_answers,
        redundant_step_reason,
        tautology_reason,
    )
    from verilearn_assets.analysis.screen.run import shape_only

    out = []
    perturbed = perturbed_answers(cand.code, trials.tables)
    if data_independent_reason(answer, perturbed, cand.answer_schema.kind, shape_only(cand)):
        out.append("5_data_independent")
    if program is not None and redundant_step_reason(
        program, trials.df, answer, trials.tables, perturbed
    ):
        out.append("5_redundant_step")
    if tautology_reason(cand, answer, trials.df, program):
        out.append("5_tautology")
    if "duplicate" in (cand.template or "") + " ".join(cand.program_ops):
        out.append("6_duplicate_rows_answer_0" if answer == 0 else "6_duplicate_rows_answer_other")
    never = _offered_never_chosen(cand, program)
    out += ["6_offers_never_chosen_option"] if never else []
    out += [f"6_offers_never_chosen:{o}" for o in never]
    out += [name for name, rx in GRAMMAR.items() if rx.search(cand.question)]
    if cand.question.count("?") != 1:
        out.append("7_grammar_not_one_question_mark")
    return out


def _under_target(rows: list[dict], per_table: Counter[str]) -> dict[str, int]:
    """Procedural candidates per table below `generation.target_per_table` (10)."""
    from verilearn_assets.analysis.config import load_questions_config

    target = load_questions_config().generation.target_per_table
    tables = {r["table"] for r in rows if r["kind"] == "table" and r["source"] == "procedural"}
    return {
        t: per_table[f"procedural/{t}"]
        for t in sorted(tables)
        if per_table[f"procedural/{t}"] < target
    }


def measure_dump(path: Path) -> dict[str, Any]:
    from verilearn_assets.analysis.quality.readability import distribution, readability
    from verilearn_assets.analysis.screen.conventions import (
        RunCache,
        check_conventions,
        probed_reference,
    )
    from verilearn_assets.analysis.screen.degenerate import constant_reason, zero_reason
    from verilearn_assets.analysis.screen.metamorphic import TableTrials
    from verilearn_assets.analysis.sources.candidate import Candidate
    from verilearn_assets.analysis.sources.id_columns import numeric_id_columns
    from verilearn_assets.analysis.sources.procedural import _dry_run
    from verilearn_assets.analysis.sources.procedural.chains import chain_problem
    from verilearn_assets.analysis.sources.procedural.dryrun import load_table
    from verilearn_assets.analysis.sources.procedural.program import Program, Step

    rows = [json.loads(line) for line in path.read_text().splitlines()]
    turned_away: Counter[str] = Counter()
    for r in rows:
        if r["kind"] == "table":
            for k, n in r["turned_away"].items():
                turned_away[f"{r['source']}/{k}"] += n
    cands = [r for r in rows if r["kind"] == "candidate"]
    classes: Counter[str] = Counter()
    moved_by_convention: Counter[str] = Counter()
    accepted: Counter[str] = Counter()
    per_dataset: Counter[str] = Counter()
    per_table: Counter[str] = Counter()
    scores: dict[str, list[float]] = {s: [] for s in SOURCES}
    ok_template: list[dict] = []
    by_table: dict[str, list[dict]] = {}
    for r in cands:
        r["cand"] = Candidate.model_validate(r["candidate"])
        by_table.setdefault(r["path"], []).append(r)
    for tpath, group in by_table.items():
        df = load_table(tpath)
        ids, cache = numeric_id_columns(df), RunCache()
        trials = TableTrials(df, 3, 0)
        for r in group:
            cand: Candidate = r["cand"]
            src = cand.source
            try:
                answer, ties = probed_reference(cand.code, df, cache)
            except Exception:
                classes[f"{src}/not_accepted:reference_failed"] += 1
                continue
            accepted[f"{src}/{r['split']}"] += 1
            per_dataset[f"{src}/{r['dataset']}"] += 1
            per_table[f"{src}/{r['table']}"] += 1
            scores[src].append(readability(cand.question))
            if src == "template":
                ok_template.append(r)
            report = check_conventions(cand, df, answer, id_columns=ids, ties=ties, cache=cache)
            if report.rejection:
                classes[f"{src}/2_{report.rejection.split(':', 1)[0]}"] += 1
                for t in report.tried:
                    name, _, outcome = t.rpartition(":")
                    if outcome == "moved":
                        moved_by_convention[f"{src}/{name}"] += 1
            program = None
            if r["steps"] is not None:
                program = Program(tuple(Step(op, tuple(i), tuple(c)) for op, i, c in r["steps"]))
                if chain_problem(program):
                    classes[f"{src}/3_meaningless_chain"] += 1
                if _dry_run(df, 4, program):
                    classes[f"{src}/4_noop_step"] += 1
            if zero_reason(answer):
                classes[f"{src}/4_zero_or_noop_count"] += 1
            if constant_reason(cand, df, answer, 3, 0.8, 0):
                classes[f"{src}/4_constant_under_perturbation"] += 1
            for name in issue24_classes(cand, answer, trials, program):
                classes[f"{src}/{name}"] += 1
    for src in SOURCES:  # every class of issue 24 gets a row, a zero included
        for name in ISSUE24_CLASSES:
            if src == "procedural" or name != "5_redundant_step":
                classes.setdefault(f"{src}/{name}", 0)
    gaps, gap_templates = _variant_gaps(ok_template)
    classes["template/1_variant_missing_parent_alternative"] = gaps
    return {
        "candidates_sent_to_verification": len(cands),
        "accepted_per_source_split": dict(sorted(accepted.items())),
        "accepted_per_source": {
            s: sum(n for k, n in accepted.items() if k.startswith(s)) for s in SOURCES
        },
        "accepted_per_dataset": dict(sorted(per_dataset.items())),
        "tables_under_target": _under_target(rows, per_table),
        "classes": dict(sorted(classes.items())),
        "moved_by_convention": dict(sorted(moved_by_convention.items())),
        "variant_gaps_by_template": dict(sorted(gap_templates.items())),
        "readability": {s: distribution(v) for s, v in scores.items()},
        "readability_histogram": {s: dict(sorted(Counter(v).items())) for s, v in scores.items()},
        "turned_away_by_generator": dict(sorted(turned_away.items())),
    }


def _table(results: dict[str, dict]) -> str:
    """One markdown row per figure, one column per dump."""
    names = list(results)
    keys: dict[str, None] = {}
    flat: dict[str, dict[str, Any]] = {}
    for name, res in results.items():
        f: dict[str, Any] = {
            "candidates_sent_to_verification": res["candidates_sent_to_verification"]
        }
        for k, v in res["accepted_per_source"].items():
            f[f"accepted/{k}"] = v
        for k, v in res["accepted_per_source_split"].items():
            f[f"accepted/{k}"] = v
        f.update({f"class/{k}": v for k, v in res["classes"].items()})
        f.update({f"moved/{k}": v for k, v in res["moved_by_convention"].items()})
        for s, d in res["readability"].items():
            f.update({f"readability/{s}/{k}": v for k, v in d.items()})
        for s in SOURCES:  # every bin any dump has, in order, so the rows line up
            bins = sorted(
                {float(k) for r in results.values() for k in r["readability_histogram"][s]}
            )
            h = {float(k): v for k, v in res["readability_histogram"][s].items()}
            f.update({f"readability/{s}/hist={b}": h.get(b, 0) for b in bins})
        f["procedural_tables_under_target"] = len(res.get("tables_under_target", {}))
        for s in SOURCES:
            per = [v for k, v in res["accepted_per_dataset"].items() if k.startswith(s)]
            f[f"accepted_per_dataset/{s}/min"] = min(per, default=0)
            f[f"accepted_per_dataset/{s}/datasets"] = len(per)
        flat[name] = f
        keys.update(dict.fromkeys(f))
    head = f"| figure | {' | '.join(names)} |\n|---|{'---|' * len(names)}\n"
    return head + "\n".join(
        f"| {k} | {' | '.join(str(flat[n].get(k, 0)) for n in names)} |" for k in keys
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="generate with the tree on PYTHONPATH, write JSONL")
    d.add_argument("--home", type=Path, required=True, help="scratch home for the tables")
    d.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("compare", help="issue 24: metamorphic screens off vs on, this tree")
    c.add_argument("--home", type=Path, required=True, help="scratch home for the tables")
    c.add_argument("--json", type=Path, help="also write the full figures here")
    m = sub.add_parser("measure", help="judge dumps with HEAD's rules: NAME=FILE ...")
    m.add_argument("dumps", nargs="+")
    m.add_argument("--json", type=Path, help="also write the full figures here")
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        dump(args.home, args.out)
        return
    results = {}
    if args.cmd == "compare":
        work = Path(tempfile.mkdtemp(prefix="qq-"))
        for name, on in (("before(screens off)", False), ("after(screens on)", True)):
            out = work / f"{on}.jsonl"
            dump(args.home, out, metamorphic=on)
            t0 = time.perf_counter()
            results[name] = measure_dump(out)
            print(f"measured {name} in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
        print(_table(results))
        return
    for spec in args.dumps:
        name, sep, file = spec.partition("=")
        if not sep or not Path(file).is_file():
            sys.exit(f"measure: expected NAME=FILE with an existing file, got {spec!r}")
        t0 = time.perf_counter()
        results[name] = measure_dump(Path(file))
        print(f"measured {name} in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(_table(results))


if __name__ == "__main__":
    main()
