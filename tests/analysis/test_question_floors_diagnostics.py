"""Floors per dataset / template family, the `questions_conventions_stated` rule on stored
records, and the generation diagnostics mart over a real lake (DuckDB)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from verilearn_assets.analysis.config import QuestionFloors, load_questions_config
from verilearn_assets.analysis.records import Alternative, QuestionRecord
from verilearn_assets.analysis.rules.questions import conventions_stated, floors, floors_for
from verilearn_assets.analysis.sources.build import readability_markdown, summarize
from verilearn_assets.analysis.sources.generation_stats import LAKE as GENERATION_STATS
from verilearn_assets.analysis.sources.generation_stats import (
    SearchRejectionRecord,
    search_rejection_records,
)
from verilearn_assets.analysis.sources.template.base import NUMBER
from verilearn_assets.core import lake
from verilearn_assets.core.answers import answer_hash
from verilearn_assets.core.config import ConfigError
from verilearn_assets.core.warehouse import build_all, reader, warehouse_path, writer

MODE_MEAN = (
    "m = df['g'].mode().iloc[0]\n"
    "hook(m, \"m = df['g'].mode().iloc[0]\", name='m')\n"
    "v = float(df.loc[df['g'] == m, 'x'].mean())\n"
    "hook(v, \"v = float(df.loc[df['g'] == m, 'x'].mean())\", name='v')\n"
    "submit(v)\n"
)


def record(
    dataset: str,
    *,
    status: str = "accepted",
    reason: str | None = None,
    question: str = "Mean of x in the most frequent g?",
    code: str = MODE_MEAN,
    answer: float = 7.0,
    alternatives: list[Alternative] | None = None,
    template: str | None = "hand",
    families: tuple[str, ...] = ("descriptive",),
    ops: tuple[str, ...] = (),
    source: str = "template",
    table: str = "t1",
    readability: float = 0.0,
) -> QuestionRecord:
    code = f"# {dataset} {reason or ''} {question}\n{code}"
    alts = alternatives or []
    return QuestionRecord(
        id=QuestionRecord.make_id(source, dataset, table, code),
        source=source,
        split="train",
        dataset=dataset,
        table=table,
        question=question,
        question_mechanical=question,
        answer_schema=NUMBER,
        answer=json.dumps(answer) if status == "accepted" else "null",
        answer_hashes=[answer_hash(json.dumps(answer), NUMBER), *(a.answer_hash for a in alts)]
        if status == "accepted"
        else [],
        code=code,
        alternatives=alts,
        n_steps=2,
        difficulty="easy",
        template=template,
        op_families=list(families),
        program_ops=list(ops),
        status=status,
        rejection_reason=reason,
        readability=readability,
    )


def test_floors_name_each_dataset_and_template_family_below_its_floor():
    qs = [record("iris"), record("iris", question="q2"), record("wine")]
    qs.append(record("nile", status="rejected", reason="degenerate: zero"))
    cfg = QuestionFloors(total=3, per_dataset=2, per_template_family={"descriptive": 4})
    out = floors_for(qs, cfg, datasets=None)
    assert out.failures == [
        "template family descriptive: 3 < floor 4",
        "dataset nile: 0 accepted < floor 2",
        "dataset wine: 1 accepted < floor 2",
    ]
    # the split's datasets come from the tables when given: one with no record is named too
    out = floors(qs, {}, {}, 1, dataset_floor=1, datasets=["iris", "wine", "longley"])
    assert out.failures == ["dataset longley: 0 accepted < floor 1"]
    assert floors_for(qs, QuestionFloors(total=3, per_dataset=1), ["iris", "wine"]).passed


def test_conventions_stated_rule_fails_an_unstated_tie_and_passes_when_covered(tmp_path):
    path = tmp_path / "t1.parquet"
    pd.DataFrame(
        {"g": ["a", "b", "a", "b", "a", "b", "c"], "x": [1.0, 2, 4, 8, 16, 32, 64]}
    ).to_parquet(path, index=False)
    paths = {"t1": str(path)}
    bad = record("toy")
    out = conventions_stated([bad], paths, sample=5)
    assert out.checked == 1 and len(out.failures) == 1
    assert out.failures[0].startswith(f"question {bad.id} (toy): tie_unstated: under mode_")
    other = MODE_MEAN.replace("iloc[0]", "iloc[1]")
    alt = Alternative(
        description="the other tied mode",
        code=other,
        answer="14.0",
        answer_hash=answer_hash("14.0", NUMBER),
    )
    covered = record("toy", alternatives=[alt], question="Mean of x in a most frequent g?")
    stated = record("toy", question="Mean of x in the most frequent g (the smallest if tied)?")
    out = conventions_stated([covered, stated], paths, sample=5)
    assert out.passed and out.checked == 2 and out.stats["variants_tried"] == 2


def test_generation_diagnostics_mart(tmp_path):
    recs = [
        record("iris", ops=("select_numeric", "mean"), families=("select", "aggregate")),
        record("iris", question="q2", ops=("select_numeric", "std"), families=("select",)),
        record("iris", status="rejected", reason="tie_unstated: under mode_largest_tied ..."),
        record("iris", status="rejected", reason="degenerate: the answer is exactly 0"),
        record("iris", status="rejected", reason="reference_failed: run 1: boom"),
        record("wine", status="rejected", reason="meaningless_chain: step 3 ..."),
    ]
    root = lake.lake_root(tmp_path)
    lake.write_records(
        "analysis/questions", recs, QuestionRecord, root, source="template", split="train"
    )
    db = warehouse_path(tmp_path)
    with writer(db) as w:
        build_all(w, root)
    with reader(db) as r:
        cols = [d[0] for d in r.execute("SELECT * FROM mart_generation_diagnostics").description]
        got = r.execute("SELECT * FROM mart_generation_diagnostics").fetchall()
    rows = [dict(zip(cols, row, strict=True)) for row in got]
    iris, wine = rows
    assert (iris["dataset"], iris["candidates_tried"], iris["accepted"], iris["rejected"]) == (
        "iris",
        5,
        2,
        3,
    )
    assert (iris["rejected_tie_unstated"], iris["rejected_degenerate"]) == (1, 1)
    assert iris["rejected_meaningless_chain"] == 0 and iris["rejected_ambiguous_convention"] == 0
    assert iris["operator_families_covered"] == ["aggregate", "select"]
    assert iris["operators_covered"] == 3
    assert iris["rejected_by_reason"] == "degenerate=1, reference_failed=1, tie_unstated=1"
    assert wine["operator_families_covered"] == []
    assert (wine["accepted"], wine["rejected_meaningless_chain"], wine["operators_covered"]) == (
        0,
        1,
        0,
    )


def test_conventions_stated_never_runs_llm_written_code_in_process(tmp_path):
    rec = record("toy", source="llm", code="raise SystemExit('must not run here')\n")
    out = conventions_stated([rec], {"t1": str(tmp_path / "absent.parquet")}, sample=5)
    assert out.passed and out.checked == 0


def _mart(tmp_path, name: str) -> list[dict]:
    db = warehouse_path(tmp_path)
    with writer(db) as w:
        build_all(w, lake.lake_root(tmp_path))
    with reader(db) as r:
        cur = r.execute(f"SELECT * FROM {name}")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def test_diagnostics_count_search_stage_rejections_and_readability(tmp_path):
    root = lake.lake_root(tmp_path)
    scores = [2.0, 3.0, 4.0, 5.0, 5.0]
    recs = [
        record("iris", source="procedural", question=f"q{i}", readability=s)
        for i, s in enumerate(scores)
    ]
    recs.append(record("iris", source="procedural", question="unscored"))  # readability 0
    recs.append(record("iris", source="procedural", status="rejected", reason="degenerate: 0"))
    lake.write_records(
        "analysis/questions", recs, QuestionRecord, root, source="procedural", split="train"
    )
    # the search's own counts: kept-record reasons and audit tallies are not repeated here
    train = search_rejection_records(
        {
            "iris": Counter(duplicate=4, too_few_ops=2, meaningless_chain=3, would_degenerate=1),
            "nile": Counter(skeleton_failed=5),
        },
        "procedural",
        "train",
    )
    assert sorted((r.dataset, r.reason, r.n) for r in train) == [
        ("iris", "duplicate", 4),
        ("iris", "too_few_ops", 2),
        ("nile", "skeleton_failed", 5),
    ]
    dev = search_rejection_records({"iris": Counter(duplicate=1)}, "procedural", "dev")
    for split, rows in (("train", train), ("dev", dev)):
        lake.write_records(
            GENERATION_STATS, rows, SearchRejectionRecord, root, source="procedural", split=split
        )
    iris, nile = _mart(tmp_path, "mart_generation_diagnostics")
    # 7 records + 7 search-stage rejections (4 + 2 in train, 1 in dev)
    assert (iris["candidates_tried"], iris["accepted"], iris["rejected"]) == (14, 6, 8)
    assert iris["rejected_search_stage"] == 7 and iris["rejected_degenerate"] == 1
    assert iris["rejected_by_reason"] == "degenerate=1, duplicate=5, too_few_ops=2"
    # scored accepted questions only: 2 3 4 5 5
    assert iris["readability_mean"] == 3.8
    assert (iris["readability_p25"], iris["readability_median"], iris["readability_p75"]) == (
        3.0,
        4.0,
        5.0,
    )
    assert iris["readability_histogram"] == "2.00=1, 3.00=1, 4.00=1, 5.00=2"
    # a dataset whose every program died in the search still has its row
    assert (nile["dataset"], nile["candidates_tried"], nile["accepted"], nile["rejected"]) == (
        "nile",
        5,
        0,
        5,
    )
    assert nile["readability_mean"] is None and nile["readability_histogram"] == ""
    hist = _mart(tmp_path, "mart_question_readability")
    assert [(h["score"], h["questions"], h["share"]) for h in hist] == [
        (2.0, 1, 0.2),
        (3.0, 1, 0.2),
        (4.0, 1, 0.2),
        (5.0, 2, 0.4),
    ]
    assert {(h["source"], h["split"]) for h in hist} == {("procedural", "train")}


def test_questions_metadata_readability_distribution():
    recs = [record("iris", question=f"q{i}", readability=s) for i, s in enumerate([2.0, 5.0, 5.0])]
    recs.append(record("iris", question="unscored"))
    summary = summarize(recs)
    assert summary["readability"]["count"] == 3 and summary["readability"]["median"] == 5.0
    assert summary["readability_histogram"] == {2.0: 1, 5.0: 2}
    md = readability_markdown(summary)
    assert "| 2.00 | 1 |" in md and "| 5.00 | 2 |" in md and "median 5.0" in md
    assert readability_markdown(summarize([])) == "_no scored question_"


def test_floors_live_in_the_analysis_config_and_a_typo_names_file_and_field(
    repo_root: Path, tmp_path: Path
) -> None:
    shipped = load_questions_config(repo_root / "configs").floors
    assert {"template", "procedural"} <= set(shipped) and shipped["template"].total > 0
    (tmp_path / "questions.yaml").write_text("floors:\n  template:\n    totl: 3\n")
    with pytest.raises(ConfigError) as err:
        load_questions_config(tmp_path)
    assert str(tmp_path / "questions.yaml") in str(err.value)
    assert "field 'floors.template.totl'" in str(err.value) and "Extra inputs" in str(err.value)
