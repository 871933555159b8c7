"""Dependencies come from the SQL text; broken SQL fails naming the file and the line."""

import shutil
from pathlib import Path

import duckdb
import pytest

from verilearn_assets.core import warehouse
from verilearn_assets.core.warehouse import (
    SQL_DIR,
    SqlModelError,
    build_model,
    discover_sql_models,
    family_sql_dirs,
)
from verilearn_assets.reports.assets import REPORT_ASSET, build_report_assets


@pytest.fixture
def sql_dir(tmp_path: Path) -> Path:
    """A copy of the project's SQL files that a test may extend or break."""
    return Path(shutil.copytree(SQL_DIR, tmp_path / "dbt_like_sql"))


def deps_by_asset(sql_dir: Path) -> dict[str, set[str]]:
    out = {}
    for a in build_report_assets(sql_dir):
        out[a.key.to_user_string()] = {k.to_user_string() for k in a.asset_deps[a.key]}
    return out


def test_project_deps_are_parsed_from_the_sql() -> None:
    deps = deps_by_asset(SQL_DIR)
    # a '{{ lake }}/<asset>/' path is a dependency on the lake asset of that name
    assert deps["stg_questions"] == {"analysis/questions"}
    assert deps["stg_episodes"] == {"analysis/episodes"}
    assert deps["stg_tables"] == {"tables"}
    # marts read staging views by name; the join in the pass-rate mart gives two edges
    assert deps["mart_episode_pass_rate"] == {"stg_episodes", "stg_questions"}
    assert deps["mart_dataset_stats"] == {"stg_tables", "stg_questions", "stg_episodes"}
    assert deps["mart_teacher_precision"] == {"stg_episodes"}
    # CTE names inside a mart are not dependencies
    assert "question_family" not in deps["mart_episode_pass_rate"]
    # the report sits on every mart
    marts = {name for name in deps if name.startswith("mart_")}
    assert len(marts) >= 8 and deps[REPORT_ASSET] == marts


def test_a_new_sql_file_brings_its_own_asset_and_edges(sql_dir: Path) -> None:
    (sql_dir / "marts" / "mart_teacher_gap.sql").write_text(
        "-- Gap between the best and the worst teacher.\n"
        "WITH p AS (SELECT precision FROM mart_teacher_precision)\n"
        "SELECT max(precision) - min(precision) AS gap FROM p\n"
    )
    (sql_dir / "staging" / "stg_trajectories.sql").write_text(
        "SELECT id FROM read_parquet('{{ lake }}/trajectories/*/*/part-*.parquet')\n"
    )
    deps = deps_by_asset(sql_dir)
    assert deps["mart_teacher_gap"] == {"mart_teacher_precision"}
    assert deps["stg_trajectories"] == {"trajectories"}
    assert "mart_teacher_gap" in deps[REPORT_ASSET]
    assert "mart_teacher_gap" not in deps_by_asset(SQL_DIR)


def test_syntax_error_names_file_and_line(sql_dir: Path) -> None:
    broken = sql_dir / "marts" / "mart_broken.sql"
    broken.write_text("SELECT\n    teacher,\n    count(* AS n\nFROM stg_episodes\n")
    with pytest.raises(SqlModelError) as err:
        build_report_assets(sql_dir)
    assert str(err.value).startswith(f"{broken}:3: ")
    assert err.value.line == 3


def test_unknown_table_names_file_and_line(sql_dir: Path) -> None:
    bad = sql_dir / "marts" / "mart_typo.sql"
    bad.write_text("SELECT teacher\nFROM\n    stg_episodez\n")
    with pytest.raises(SqlModelError, match=r"mart_typo\.sql:3: unknown table 'stg_episodez'"):
        discover_sql_models(sql_dir)


def test_more_than_one_statement_or_not_a_select_is_refused(sql_dir: Path) -> None:
    two = sql_dir / "marts" / "mart_two.sql"
    two.write_text("SELECT 1 AS a;\nSELECT 2 AS b;\n")
    with pytest.raises(SqlModelError, match=r"mart_two\.sql: expected exactly one SELECT"):
        discover_sql_models(sql_dir)
    two.write_text("DELETE FROM stg_episodes\n")
    with pytest.raises(SqlModelError, match=r"mart_two\.sql:1: expected one SELECT"):
        discover_sql_models(sql_dir)


def test_cycle_and_unknown_placeholder_are_refused(sql_dir: Path) -> None:
    (sql_dir / "marts" / "mart_a.sql").write_text("SELECT * FROM mart_b\n")
    (sql_dir / "marts" / "mart_b.sql").write_text("SELECT * FROM mart_a\n")
    with pytest.raises(SqlModelError, match="dependency cycle"):
        discover_sql_models(sql_dir)
    (sql_dir / "marts" / "mart_b.sql").write_text("SELECT 1 AS x\n")
    (sql_dir / "staging" / "stg_x.sql").write_text(
        "SELECT *\nFROM read_parquet('{{ lakes }}/questions/*.parquet')\n"
    )
    with pytest.raises(SqlModelError, match=r"stg_x\.sql:2: unknown placeholder"):
        discover_sql_models(sql_dir)


def test_error_at_build_time_names_file_and_line(sql_dir: Path, tmp_path: Path) -> None:
    """SQL that parses but does not bind (a misspelt column) fails when built, with its line."""
    bad = sql_dir / "marts" / "mart_badcol.sql"
    bad.write_text(
        "SELECT\n    teacher,\n    count(*) FILTER (WHERE verifed) AS n\n"
        "FROM stg_episodes\nGROUP BY teacher\n"
    )
    models = {m.name: m for m in discover_sql_models(sql_dir)}
    with duckdb.connect() as con:
        build_model(con, models["stg_episodes"], tmp_path / "empty-lake")
        with pytest.raises(SqlModelError) as err:
            build_model(con, models["mart_badcol"], tmp_path / "empty-lake")
    assert str(err.value).startswith(f"{bad}:3: DuckDB could not build table 'mart_badcol'")
    assert "verifed" in str(err.value)


def test_family_staging_views_live_with_the_family_and_read_its_lake() -> None:
    """A family's `sql/stg_*.sql` is a staging view over that family's own lake assets;
    the shared `dbt_like_sql/staging/` keeps the platform's (tables, model_eval, ...)."""
    models = {m.name: m for m in discover_sql_models()}
    for name in ("stg_questions", "stg_episodes", "stg_dafny_tasks", "stg_refactor_tasks"):
        assert models[name].kind == "staging" and models[name].relation == "VIEW"
    for fam_dir in family_sql_dirs():
        family = fam_dir.parent.name
        staged = [m for m in models.values() if m.path.parent == fam_dir and m.kind == "staging"]
        assert staged, f"{fam_dir}: no staging view"
        for m in staged:
            assert m.lake_deps and all(d.startswith(f"{family}/") for d in m.lake_deps), m.path
    shared = {m.name for m in models.values() if m.path.parent == SQL_DIR / "staging"}
    assert {"stg_tables", "stg_model_eval"} <= shared
    assert not any(n.startswith(("stg_dafny", "stg_refactor", "stg_questions")) for n in shared)


def test_a_family_sql_file_must_say_its_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a family's flat `sql/` the name's prefix is the kind: anything else is refused,
    naming the file (a misnamed view would otherwise be built as a table, or not at all)."""
    fam_sql = tmp_path / "toy" / "sql"
    fam_sql.mkdir(parents=True)
    (fam_sql / "stg_toy.sql").write_text(
        "SELECT id FROM read_parquet('{{ lake }}/toy/tasks/*/*/part-*.parquet')\n"
    )
    real = warehouse.family_sql_dirs()
    monkeypatch.setattr(warehouse, "family_sql_dirs", lambda: [*real, fam_sql])
    models = {m.name: m for m in discover_sql_models()}
    assert models["stg_toy"].kind == "staging"
    bad = fam_sql / "toy_counts.sql"
    bad.write_text("SELECT count(*) AS n FROM stg_toy\n")
    with pytest.raises(SqlModelError, match=rf"{bad}: a family's SQL file is named stg_"):
        discover_sql_models()
