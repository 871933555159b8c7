"""Marts computed by real DuckDB over the small lake, checked against hand-worked figures."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from reports_lake import AMBIGUOUS, MISMATCH, write_small_lake

from verilearn_assets.analysis.records import Episode
from verilearn_assets.core import lake
from verilearn_assets.core.warehouse import (
    build_all,
    create_lake_views,
    duckdb_type,
    reader,
    warehouse_path,
    writer,
)


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    return con.execute(sql).fetchall()


@pytest.fixture
def con(small_lake: Path):
    db = warehouse_path(small_lake)
    with writer(db) as w:
        build_all(w, lake.lake_root(small_lake))
    with reader(db) as r:
        yield r


def test_staging_views_read_every_partition(con) -> None:
    assert rows(con, "SELECT count(*) FROM stg_questions") == [(8,)]
    assert rows(con, "SELECT count(*) FROM stg_episodes") == [(9,)]
    assert rows(con, "SELECT count(*) FROM stg_tables") == [(3,)]
    # source/split live both in the file and in the hive path: one column each, agreeing
    assert rows(
        con, "SELECT source, split, count(*) FROM stg_questions GROUP BY ALL ORDER BY ALL"
    ) == [("procedural", "train", 2), ("template", "test", 2), ("template", "train", 4)]
    assert rows(con, "SELECT template_family FROM stg_questions WHERE question_id = 'q6'") == [
        ("filter+groupby",)
    ]


def test_question_counts(con) -> None:
    assert rows(con, "SELECT * FROM mart_question_counts") == [
        ("procedural", "train", "filter+groupby", "iris", 2, 1, 1),
        ("template", "test", "count_rows", "wine", 2, 1, 1),
        ("template", "train", "count_rows", "iris", 1, 1, 0),
        ("template", "train", "mean_by_group", "iris", 3, 2, 1),
    ]


def test_rejection_reasons(con) -> None:
    assert rows(con, "SELECT * FROM mart_rejection_reasons") == [
        ("procedural", "train", AMBIGUOUS, 1, 1.0),
        ("template", "test", MISMATCH, 1, 1.0),
        ("template", "train", MISMATCH, 1, 1.0),
    ]


def test_alternatives_rate(con) -> None:
    got = {
        (s, f): (n, k, rate)
        for s, f, n, k, rate in rows(con, "SELECT * FROM mart_alternatives_rate")
    }
    assert got[("template", "count_rows")][:2] == (3, 2)
    assert got[("template", "count_rows")][2] == pytest.approx(2 / 3)
    assert got[("template", "mean_by_group")] == (3, 0, 0.0)
    assert got[("procedural", "filter+groupby")] == (2, 0, 0.0)


def test_episode_pass_rate(con) -> None:
    assert rows(con, "SELECT * FROM mart_episode_pass_rate") == [
        ("procedural", "train", "filter+groupby", "llm-a", 1, 0, 0.0),
        ("procedural", "train", "filter+groupby", "program", 1, 1, 1.0),
        ("template", "test", "count_rows", "llm-a", 1, 1, 1.0),
        ("template", "test", "count_rows", "program", 1, 1, 1.0),
        ("template", "train", "count_rows", "program", 1, 1, 1.0),
        ("template", "train", "mean_by_group", "llm-a", 2, 1, 0.5),
        ("template", "train", "mean_by_group", "program", 2, 1, 0.5),
    ]


def test_failure_classes(con) -> None:
    assert rows(con, "SELECT * FROM mart_failure_classes") == [
        ("procedural", "train", "llm-a", "wrong_answer", 1, 1.0),
        ("template", "train", "llm-a", "execution_failure", 1, 1.0),
        ("template", "train", "program", "wrong_answer", 1, 1.0),
    ]


def test_hook_grounding(con) -> None:
    got = {r[:3]: r[3:] for r in rows(con, "SELECT * FROM mart_hook_grounding")}
    n, total, grounded, malformed, rate, bad = got[("template", "train", "program")]
    assert (n, total, grounded, malformed) == (3, 7, 6, 0)
    assert rate == pytest.approx(6 / 7) and bad == 0.0
    n, total, grounded, malformed, rate, bad = got[("template", "train", "llm-a")]
    assert (n, total, grounded, malformed, rate, bad) == (2, 4, 3, 1, 0.75, 0.25)
    assert got[("procedural", "train", "llm-a")][4] == pytest.approx(1 / 3)
    assert got[("template", "test", "program")] == (1, 1, 1, 0, 1.0, 0.0)


def test_teacher_precision(con) -> None:
    assert rows(con, "SELECT * FROM mart_teacher_precision") == [
        ("llm-a", 4, 2, 0.5, 4),
        ("program", 5, 4, 0.8, 5),
    ]


def test_dataset_stats(con) -> None:
    got = rows(con, "SELECT * FROM mart_dataset_stats")
    assert got[0][:9] == ("iris", 2, 200, "train", 6, 4, 2, 7, 4)
    assert got[0][9] == pytest.approx(4 / 7)
    assert got[1] == ("wine", 1, 178, "test", 2, 1, 1, 2, 2, 1.0)


def test_missing_asset_gives_an_empty_typed_view(home: Path) -> None:
    """No episodes (and no tables) yet: the staging views exist, empty, with model types."""
    root = write_small_lake(home, with_episodes=False, with_tables=False)
    with writer(warehouse_path(home)) as con:
        views = create_lake_views(con, root)
        assert {"stg_questions", "stg_episodes", "stg_tables"} <= set(views)
        assert {"stg_family_tasks", "stg_family_rollouts"} <= set(views)  # generated
        build_all(con, root)
        assert rows(con, "SELECT count(*) FROM stg_episodes") == [(0,)]
        family_counts = "SELECT family, sum(n_tasks), sum(n_rollouts) FROM mart_family_counts"
        assert rows(con, family_counts + " GROUP BY family") == [("analysis", 8, 0)]
        assert rows(con, "SELECT count(*) FROM mart_episode_pass_rate") == [(0,)]
        assert rows(con, "SELECT count(*) FROM mart_question_counts") == [(4,)]
        assert rows(
            con,
            "SELECT dataset, n_tables, n_questions, n_episodes, pass_rate FROM mart_dataset_stats",
        ) == [("iris", 0, 6, 0, None), ("wine", 0, 2, 0, None)]
        empty_types = dict(
            rows(con, "SELECT column_name, column_type FROM (DESCRIBE stg_episodes)")
        )
    schema = Episode.polars_schema()
    assert empty_types["verified"] == duckdb_type(schema["verified"]) == "BOOLEAN"
    assert empty_types["hooks_total"] == "BIGINT"
    # the same view over a real episodes partition has the same column types
    write_small_lake(home)
    with writer(warehouse_path(home)) as con:
        create_lake_views(con, root)
        full_types = dict(rows(con, "SELECT column_name, column_type FROM (DESCRIBE stg_episodes)"))
    assert full_types == empty_types
