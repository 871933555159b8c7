"""A small lake with known contents, written through the real lake and record models.

The expected figures in the tests are worked out by hand from these lists."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from verilearn_assets.analysis.records import Alternative, Episode, Message, QuestionRecord
from verilearn_assets.core import lake
from verilearn_assets.core.records import AnswerSchema, ColumnProfile, HookRecord, TableRecord


@dataclass(frozen=True)
class Q:
    key: str
    source: str
    split: str
    dataset: str
    table: str
    template: str | None
    op_families: tuple[str, ...]
    status: str
    reason: str | None
    n_alternatives: int


@dataclass(frozen=True)
class E:
    question: str
    teacher: str
    verified: bool
    failure_class: str | None
    hooks_total: int
    hooks_grounded: int
    hooks_malformed: int


MISMATCH = "answer mismatch on re-execution"
AMBIGUOUS = "ambiguous: 2 readings"

TABLES = {  # table id -> (dataset, split, n_rows)
    "t_iris1": ("iris", "train", 150),
    "t_iris2": ("iris", "train", 50),
    "t_wine": ("wine", "test", 178),
}

QUESTIONS = [
    Q("q1", "template", "train", "iris", "t_iris1", "mean_by_group", (), "accepted", None, 0),
    Q("q2", "template", "train", "iris", "t_iris1", "mean_by_group", (), "accepted", None, 0),
    Q("q3", "template", "train", "iris", "t_iris2", "mean_by_group", (), "rejected", MISMATCH, 0),
    Q("q4", "template", "train", "iris", "t_iris2", "count_rows", (), "accepted", None, 1),
    Q(
        "q5",
        "procedural",
        "train",
        "iris",
        "t_iris1",
        None,
        ("filter", "groupby"),
        "accepted",
        None,
        0,
    ),
    Q(
        "q6",
        "procedural",
        "train",
        "iris",
        "t_iris2",
        None,
        ("groupby", "filter"),
        "rejected",
        AMBIGUOUS,
        0,
    ),
    Q("q7", "template", "test", "wine", "t_wine", "count_rows", (), "accepted", None, 2),
    Q("q8", "template", "test", "wine", "t_wine", "count_rows", (), "rejected", MISMATCH, 0),
]

EPISODES = [
    E("q1", "program", True, None, 3, 3, 0),
    E("q1", "llm-a", True, None, 4, 3, 1),
    E("q2", "program", False, "wrong_answer", 2, 1, 0),
    E("q2", "llm-a", False, "execution_failure", 0, 0, 0),
    E("q4", "program", True, None, 2, 2, 0),
    E("q5", "program", True, None, 5, 4, 0),
    E("q5", "llm-a", False, "wrong_answer", 3, 1, 2),
    E("q7", "program", True, None, 1, 1, 0),
    E("q7", "llm-a", True, None, 2, 2, 0),
]


def table_record(tid: str) -> TableRecord:
    dataset, split, n_rows = TABLES[tid]
    return TableRecord(
        id=tid,
        dataset=dataset,
        name=f"{tid}.csv",
        split=split,
        path=f"/data/{tid}.parquet",
        n_rows=n_rows,
        n_columns=1,
        sha256="0" * 64,
        columns=[
            ColumnProfile(
                name="x", kind="numeric", dtype="Float64", missing_pct=0.0, n_unique=n_rows
            )
        ],
    )


def question_record(q: Q) -> QuestionRecord:
    alternatives = [
        Alternative(
            description=f"reading {i}", code=f"answer = {i}", answer=str(i), answer_hash=f"h{i}"
        )
        for i in range(q.n_alternatives)
    ]
    return QuestionRecord(
        id=q.key,
        source=q.source,
        split=q.split,
        dataset=q.dataset,
        table=q.table,
        question=f"question {q.key}?",
        question_mechanical=f"mechanical {q.key}",
        answer_schema=AnswerSchema(kind="number"),
        answer="1.0",
        answer_hashes=["h"],
        code="answer = 1.0",
        alternatives=alternatives,
        n_steps=2,
        difficulty="easy",
        template=q.template,
        op_families=list(q.op_families),
        hooks=[HookRecord(name="n", code_line="n = len(df)", value_hash="v")],
        status=q.status,
        rejection_reason=q.reason,
    )


def episode_record(i: int, e: E) -> Episode:
    q = next(q for q in QUESTIONS if q.key == e.question)
    return Episode(
        id=f"e{i}",
        question_id=q.key,
        source=q.source,
        split=q.split,
        dataset=q.dataset,
        template=q.template,
        teacher=e.teacher,
        sampling_key="k0",
        messages=[Message(turn=0, role="user", kind="prompt", content=f"question {q.key}?")],
        cells=[],
        submissions=["1.0"],
        answer="1.0" if e.verified else "2.0",
        hooks=[],
        hooks_total=e.hooks_total,
        hooks_grounded=e.hooks_grounded,
        hooks_malformed=e.hooks_malformed,
        verified=e.verified,
        failure_class=e.failure_class,
        n_turns=2,
    )


def write_small_lake(home: Path, *, with_episodes: bool = True, with_tables: bool = True) -> Path:
    """Write TABLES / QUESTIONS / EPISODES into `<home>/lake`, one part per partition."""
    root = lake.lake_root(home)
    if with_tables:
        for split in sorted({s for _, s, _ in TABLES.values()}):
            recs = [table_record(t) for t, (_, s, _) in TABLES.items() if s == split]
            lake.write_records("tables", recs, TableRecord, root, split=split)
    for source, split in sorted({(q.source, q.split) for q in QUESTIONS}):
        recs = [question_record(q) for q in QUESTIONS if (q.source, q.split) == (source, split)]
        lake.write_records(
            "analysis/questions", recs, QuestionRecord, root, source=source, split=split
        )
    if with_episodes:
        eps = [episode_record(i, e) for i, e in enumerate(EPISODES, start=1)]
        for source, split in sorted({(e.source, e.split) for e in eps}):
            recs = [e for e in eps if (e.source, e.split) == (source, split)]
            lake.write_records("analysis/episodes", recs, Episode, root, source=source, split=split)
    return root
