"""Prompts the model reads, the tool-output cap, and the teacher config."""

from __future__ import annotations

from pathlib import Path

import pytest

from verilearn_assets.analysis.rollout.config import TeacherConfig, load_teacher_config
from verilearn_assets.analysis.rollout.prompts import (
    Observation,
    cap_text,
    describe_schema,
    system_prompt,
    tool_message,
)
from verilearn_assets.core.config import ConfigError
from verilearn_assets.core.records import AnswerSchema, ColumnProfile, TableRecord


def table() -> TableRecord:
    return TableRecord(
        id="t1",
        dataset="shop",
        name="orders",
        split="train",
        path="/x.parquet",
        n_rows=120,
        n_columns=2,
        sha256="0" * 64,
        columns=[
            ColumnProfile(
                name="price",
                kind="numeric",
                dtype="Float64",
                missing_pct=2.5,
                n_unique=90,
                mean=12.25,
                min=1.0,
                max=99.5,
            ),
            ColumnProfile(
                name="region",
                kind="categorical",
                dtype="String",
                missing_pct=0.0,
                n_unique=3,
                top_values=["north", "south"],
            ),
        ],
    )


def test_system_prompt_carries_the_profile() -> None:
    text = system_prompt(table(), max_turns=7)
    assert "'orders'" in text and "120 rows × 2 columns" in text
    assert "- 'price': numeric, Float64; 2.5% missing; 90 unique; min=1 mean=12.25 max=99.5" in text
    assert "top values: 'north', 'south'" in text
    assert "at most 7 cells" in text


def test_schema_descriptions() -> None:
    schema = AnswerSchema(
        kind="mapping",
        fields={
            "n": AnswerSchema(kind="integer"),
            "tags": AnswerSchema(kind="list", items=AnswerSchema(kind="string"), ordered=False),
        },
    )
    assert describe_schema(schema) == (
        "a dict with exactly these keys: 'n': an integer, "
        "'tags': a list of a string (order does not matter)"
    )


def test_cap_text_keeps_head_and_tail_and_says_how_much_was_cut() -> None:
    text = "".join(f"line {i}\n" for i in range(1000))
    capped = cap_text(text, 300)
    assert len(capped) <= 300 and capped.startswith("line 0\n") and capped.endswith("line 999\n")
    cut = int(capped.split("…[")[1].split(" characters")[0])
    head, tail = capped.split("…[")[0], capped.split("truncated]…")[1]
    assert len(head) + cut + len(tail) == len(text)
    assert cap_text("short", 300) == "short"


def test_tool_message_cap_never_cuts_status_or_submission_markers() -> None:
    obs = Observation(
        "ok", 12.3, "x" * 50_000, "warning " * 3000, "'big'" * 1000, ['{"answer":1.5}']
    )
    msg = tool_message(obs, 1000)
    assert msg.startswith("[cell ok]\n")
    assert msg.endswith('submitted: {"answer":1.5}')
    assert len(msg) <= 1100
    assert msg.count("characters truncated") == 3
    small = tool_message(Observation("error", 1.0, "", "Traceback: boom", None, []), 1000)
    assert small == "[cell error]\nstderr:\nTraceback: boom"
    assert tool_message(Observation("ok", 0.4, "", "", None, []), 1000) == "[cell ok]\n(no output)"


def test_repository_teacher_yaml_loads_with_program_default() -> None:
    cfg = load_teacher_config()
    assert cfg.teacher == "program" and cfg.required_votes == cfg.n_traces // 2 + 1


def test_unknown_key_and_unreachable_quorum_are_rejected(tmp_path: Path) -> None:
    (tmp_path / "teacher.yaml").write_text("max_turn: 3\n")
    with pytest.raises(ConfigError, match="field 'max_turn'"):
        load_teacher_config(tmp_path)
    (tmp_path / "teacher.yaml").write_text("consistency_traces: 2\nquorum: 4\n")
    with pytest.raises(ConfigError, match="quorum 4 exceeds the 3 traces"):
        load_teacher_config(tmp_path)


def test_sampling_key_tracks_what_decides_a_trace() -> None:
    base = TeacherConfig(teacher="vllm", model="m")
    assert base.sampling_key() == TeacherConfig(teacher="vllm", model="m").sampling_key()
    changed = [
        TeacherConfig(teacher="vllm", model="m2"),
        TeacherConfig(teacher="vllm", model="m", seed=1),
        TeacherConfig(teacher="vllm", model="m", sampling={"temperature": 0.1}),
    ]
    assert len({base.sampling_key(), *(c.sampling_key() for c in changed)}) == 4
    # the program replay is deterministic: sampling settings do not split its episodes
    assert TeacherConfig(seed=3).sampling_key() == TeacherConfig().sampling_key()
    assert TeacherConfig().sampling_key() != base.sampling_key()
