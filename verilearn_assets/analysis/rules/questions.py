"""Gate rules over question partitions: the contract, split hygiene, hashes, floors."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import polars as pl

from verilearn_assets.analysis.config import QuestionFloors, load_questions_config
from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.analysis.screen.conventions import check_conventions
from verilearn_assets.analysis.sources.candidate import AlternativeCode, Candidate
from verilearn_assets.analysis.sources.procedural.dryrun import load_table
from verilearn_assets.core.answers import answer_hash, parse_answer
from verilearn_assets.core.contract import RuleContext, RuleOutcome
from verilearn_assets.core.ingest.tables import load_table_records


def schema_contract(frame: pl.DataFrame, source: str, split: str) -> RuleOutcome:
    """Each row loads as a QuestionRecord (no legacy keys), sits in its own partition,
    and carries the content-hash id its content implies."""
    failures: list[str] = []
    expected = set(QuestionRecord.model_fields)
    extra = [c for c in frame.columns if c not in expected and c not in ("source", "split")]
    if extra:
        failures.append(f"unexpected column(s) {extra}")
    for i, row in enumerate(frame.iter_rows(named=True)):
        rid = row.get("id")
        try:
            q = QuestionRecord.from_row(row)
        except Exception as exc:
            failures.append(f"row {i} ({rid!r}): {exc}".replace("\n", " "))
            continue
        if (q.source, q.split) != (source, split):
            failures.append(
                f"question {q.id}: source/split {q.source}/{q.split} in partition {source}/{split}"
            )
        want = QuestionRecord.make_id(q.source, q.dataset, q.table, q.code)
        if q.id != want:
            failures.append(f"question {q.id}: id is not the content hash ({want})")
    return RuleOutcome(rule="schema_contract", checked=frame.height, failures=failures)


def answer_hash_present(questions: Iterable[QuestionRecord]) -> RuleOutcome:
    qs = [q for q in questions if q.status == "accepted"]
    failures = []
    for q in qs:
        if answer_hash(q.answer, q.answer_schema) not in q.answer_hashes:
            failures.append(f"question {q.id}: primary answer hash not in answer_hashes")
        for alt in q.alternatives:
            if alt.answer_hash not in q.answer_hashes:
                failures.append(
                    f"question {q.id}: alternative '{alt.description}' hash not in answer_hashes"
                )
    return RuleOutcome(rule="answer_hash_present", checked=len(qs), failures=failures)


def datasets_in_one_split(dataset_splits: Iterable[tuple[str, str]]) -> RuleOutcome:
    """No dataset may feed two splits (pairs of (dataset, split) from every partition)."""
    seen: dict[str, set[str]] = {}
    n = 0
    for dataset, split in dataset_splits:
        n += 1
        seen.setdefault(dataset, set()).add(split)
    failures = [
        f"dataset {d!r} appears in splits {sorted(s)}"
        for d, s in sorted(seen.items())
        if len(s) > 1
    ]
    return RuleOutcome(rule="datasets_in_one_split", checked=n, failures=failures)


def floors(
    questions: Iterable[QuestionRecord],
    template_floor: Mapping[str, int],
    family_floor: Mapping[str, int],
    total_floor: int,
    *,
    template_family_floor: Mapping[str, int] | None = None,
    dataset_floor: int = 0,
    datasets: Iterable[str] | None = None,
    dataset_exempt: Mapping[str, str] | None = None,
) -> RuleOutcome:
    """Accepted questions in total, per template, per template family (templates only),
    per operator family and per dataset must reach the configured floors.

    `datasets` are the split's datasets (default: every dataset with a record, accepted or
    not), so a dataset that yields too few accepted questions is named, even with none;
    `dataset_exempt` datasets (name -> why) are left out of the per-dataset floor.
    """
    records = list(questions)
    qs = [q for q in records if q.status == "accepted"]
    by_template = Counter(q.template for q in qs if q.template)
    by_tpl_family = Counter(f for q in qs if q.template for f in set(q.op_families))
    by_family = Counter(f for q in qs for f in set(q.op_families))
    by_dataset = Counter(q.dataset for q in qs)
    names = sorted(set(datasets) if datasets is not None else {q.dataset for q in records})
    exempt = dataset_exempt or {}
    failures = []
    if len(qs) < total_floor:
        failures.append(f"{len(qs)} accepted question(s), floor is {total_floor}")
    for name, floor in sorted(template_floor.items()):
        if by_template[name] < floor:
            failures.append(f"template {name}: {by_template[name]} < floor {floor}")
    for name, floor in sorted((template_family_floor or {}).items()):
        if by_tpl_family[name] < floor:
            failures.append(f"template family {name}: {by_tpl_family[name]} < floor {floor}")
    for name, floor in sorted(family_floor.items()):
        if by_family[name] < floor:
            failures.append(f"operator family {name}: {by_family[name]} < floor {floor}")
    if dataset_floor:
        for name in names:
            if by_dataset[name] < dataset_floor and name not in exempt:
                failures.append(
                    f"dataset {name}: {by_dataset[name]} accepted < floor {dataset_floor}"
                )
    return RuleOutcome(
        rule="floors",
        checked=len(qs),
        failures=failures,
        stats={
            "accepted": len(qs),
            "templates": len(by_template),
            "families": len(by_family),
            "datasets": len(names),
            "datasets_exempt": ", ".join(sorted(set(names) & set(exempt))) or "none",
        },
    )


def floors_for(
    questions: Iterable[QuestionRecord], cfg: QuestionFloors, datasets: Iterable[str] | None
) -> RuleOutcome:
    """`floors` with every floor of one source's `configs/questions.yaml` entry."""
    return floors(
        questions,
        cfg.per_template,
        cfg.per_operator_family,
        max(1, cfg.total),
        template_family_floor=cfg.per_template_family,
        dataset_floor=cfg.per_dataset,
        datasets=datasets,
        dataset_exempt=cfg.per_dataset_exempt,
    )


IN_PROCESS_SOURCES = ("template", "procedural")


def conventions_stated(
    questions: Iterable[QuestionRecord], table_paths: Mapping[str, str], sample: int
) -> RuleOutcome:
    """Re-run every named convention variant on a sample of accepted questions (spread by
    id): an answer that moves beyond tolerance must be stated in the wording or be one of
    the recorded alternatives' answers. Each failure names the question and variant.
    Questions of other sources (LLM-written code) are not run here: they pass through."""
    # only our own generated code runs in-process; model-written code runs in the sandbox only
    accepted = sorted(
        (q for q in questions if q.status == "accepted" and q.source in IN_PROCESS_SOURCES),
        key=lambda q: q.id,
    )
    step = max(1, len(accepted) // sample) if accepted else 1
    picked = accepted[::step][:sample]
    frames: dict[str, object] = {}
    failures: list[str] = []
    tried = 0
    for q in picked:
        path = table_paths.get(q.table)
        if path is None:
            failures.append(f"question {q.id}: table {q.table!r} is not in the split")
            continue
        if path not in frames:
            frames[path] = load_table(path)
        cand = Candidate(
            source=q.source,
            template=q.template,
            question=q.question,
            question_mechanical=q.question_mechanical,
            answer_schema=q.answer_schema,
            code=q.code,
            alternatives=[
                AlternativeCode(description=a.description, code=a.code) for a in q.alternatives
            ],
            n_steps=q.n_steps,
            difficulty=q.difficulty,
        )
        report = check_conventions(
            cand,
            frames[path],  # type: ignore[arg-type]
            parse_answer(q.answer),
            alternative_answers=[parse_answer(a.answer) for a in q.alternatives],
        )
        tried += len(report.tried)
        if report.rejection:
            failures.append(f"question {q.id} ({q.dataset}): {report.rejection}")
    return RuleOutcome(
        rule="conventions_stated",
        checked=len(picked),
        failures=failures,
        stats={"variants_tried": tried, "accepted": len(accepted)},
    )


def conventions_stated_rule(ctx: RuleContext) -> RuleOutcome:
    """`conventions_stated` over one partition (the gate rule's entry point)."""
    paths = {t.id: t.path for t in load_table_records(ctx.home, ctx.split)}
    questions = [q for q in ctx.tasks() if isinstance(q, QuestionRecord)]
    return conventions_stated(questions, paths, load_questions_config().rules.conventions_sample)
