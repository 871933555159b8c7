"""`verilearn inspect` and `verilearn report --format …` on the demo home, as a user runs them."""

from __future__ import annotations

import json

from demo_support import DemoHome

from verilearn_assets.analysis.records import Episode, QuestionRecord
from verilearn_assets.core import lake


def test_inspect_lists_and_filters_questions(demo: DemoHome) -> None:
    run = demo.run(
        "inspect",
        "questions",
        "--source",
        "template",
        "--status",
        "accepted",
        "--limit",
        "500",
        "--format",
        "json",
    )
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)
    assert rows and all(r["status"] == "accepted" and r["source"] == "template" for r in rows)
    template = rows[0]["template"]
    table = demo.run("inspect", "questions", "--template", template, "--limit", "3")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].startswith("analysis/questions (")
    assert "id | source | split | dataset | template | difficulty | answer | status" in lines[1]
    assert all(template in ln for ln in lines[2:5])


def test_inspect_shows_one_question_and_one_episode_whole(demo: DemoHome) -> None:
    with demo.environ():
        split = next(
            s
            for s in ("train", "dev", "test")
            if lake.partition_dir("analysis/episodes", source="template", split=s).exists()
        )
        ep = lake.read_records("analysis/episodes", Episode, source="template", split=split)[0]
        (q,) = [
            r
            for r in lake.read_records(
                "analysis/questions", QuestionRecord, source="template", split=split
            )
            if r.id == ep.question_id
        ]
    shown = demo.run("inspect", "questions", "--id", q.id)
    assert shown.returncode == 0, shown.stderr
    assert f"analysis record {q.id}" in shown.stdout
    assert q.question.splitlines()[0] in shown.stdout
    assert q.code.splitlines()[0] in shown.stdout
    assert "answer_schema:" in shown.stdout and "alternatives:" in shown.stdout

    episode = demo.run("inspect", "episodes", "--id", ep.id)
    assert episode.returncode == 0, episode.stderr
    assert f"messages ({len(ep.messages)} turns):" in episode.stdout
    assert "assistant" in episode.stdout and "tool" in episode.stdout
    assert "hooks:" in episode.stdout and "verified: True" in episode.stdout

    as_json = json.loads(demo.run("inspect", "episodes", "--id", ep.id, "--format", "json").stdout)
    assert as_json["question_id"] == q.id and isinstance(as_json["messages"], list)


def test_inspect_sft_and_bad_input(demo: DemoHome) -> None:
    sft = demo.run("inspect", "sft", "--family", "analysis", "--limit", "2")
    assert sft.returncode == 0, sft.stderr
    assert sft.stdout.startswith("sft_dataset (2 shown)")
    bad = demo.run("inspect", "nonsense")
    assert bad.returncode == 2 and "nothing called 'nonsense'" in bad.stderr
    bad_status = demo.run("inspect", "episodes", "--status", "accepted")
    assert bad_status.returncode == 2 and "verified or unverified" in bad_status.stderr
    none = demo.run("inspect", "questions", "--id", "no-such-id")
    assert none.returncode == 1 and "no questions records match" in none.stdout


def test_report_markdown_on_the_demo_home(demo: DemoHome) -> None:
    run = demo.run("report", "--format", "markdown")
    assert run.returncode == 0, run.stderr
    assert "## Tasks and rollouts by family × source × split" in run.stdout
    assert "| family | source | split | n_tasks | n_accepted | n_rollouts | n_verified |" in (
        run.stdout
    )
    assert "| analysis | template |" in run.stdout
    assert "## Episode pass rate by source × split × teacher" in run.stdout
