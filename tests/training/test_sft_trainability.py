"""The trainability check: passes on real rows, cuts by the documented rule (counted), and
fails on a row that cannot fit, on a template without generation markers, on a bad row."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from verilearn_assets.core.family import SftRow
from verilearn_assets.core.llm.tiny_model import CHAT_TEMPLATE
from verilearn_assets.training.config import TrainingConfig
from verilearn_assets.training.sft.data import chat_messages
from verilearn_assets.training.sft.trainability import (
    check_trainability,
    load_tokenizer,
    prepare_rows,
)


def _config(model: Path, **sft: object) -> TrainingConfig:
    settings = {"cpu_threads": 1} | sft
    return TrainingConfig.model_validate({"base_model": str(model), "sft": settings})


def _length(model: Path, msgs: list[dict[str, str]]) -> int:
    out = load_tokenizer(model).apply_chat_template(msgs, tokenize=True, return_dict=True)
    return len(out["input_ids"])


def test_real_rows_are_trainable(tiny_model_dir: Path, sft_rows_real: list[SftRow]) -> None:
    report = check_trainability(_config(tiny_model_dir), sft_rows_real)
    assert report.passed, report.reasons
    assert report.fit == len(sft_rows_real) and report.truncated == 0
    assert report.sample_rows == 2
    assert report.loss_before is not None and math.isfinite(report.loss_before)
    assert report.loss_after is not None and math.isfinite(report.loss_after)


def test_truncation_keeps_whole_turns_and_is_counted(
    tiny_model_dir: Path, sft_rows_real: list[SftRow]
) -> None:
    row = sft_rows_real[0]
    msgs = chat_messages(row)
    first = next(i for i, m in enumerate(msgs) if m["role"] == "assistant") + 1
    limit = _length(tiny_model_dir, msgs[:first]) + 2  # the first turn fits, the row does not
    assert limit < _length(tiny_model_dir, msgs)
    report = check_trainability(
        _config(tiny_model_dir, max_seq_length=limit, truncation="drop_last_turns"),
        [row],
        step=False,
    )
    assert report.passed, report.reasons
    assert (report.fit, report.truncated, report.truncated_ids) == (0, 1, [row.id])

    dropped = check_trainability(
        _config(tiny_model_dir, max_seq_length=limit, truncation="drop_row"), [row], step=False
    )
    assert (dropped.dropped_too_long, dropped.kept) == (1, 0)
    assert not dropped.passed


def test_a_row_that_cannot_fit_fails_the_check(
    tiny_model_dir: Path, sft_rows_real: list[SftRow]
) -> None:
    msgs = chat_messages(sft_rows_real[0])
    first = next(i for i, m in enumerate(msgs) if m["role"] == "assistant") + 1
    limit = _length(tiny_model_dir, msgs[:first]) - 1  # not even the first turn fits
    report = check_trainability(
        _config(tiny_model_dir, max_seq_length=limit), sft_rows_real[:1], step=False
    )
    assert not report.passed
    assert report.dropped_too_long == 1 and report.dropped_ids == [sft_rows_real[0].id]
    assert any("cannot fit" in r for r in report.reasons)
    # the other rows fit, but a strict config refuses any row that cannot
    huge = [*msgs[:2], {"role": "assistant", "content": "x " * 4000}]
    short = sft_rows_real[0].model_copy(update={"id": "too-long", "messages": huge})
    strict = check_trainability(
        _config(tiny_model_dir, max_dropped_fraction=0.0), [*sft_rows_real, short], step=False
    )
    assert not strict.passed and strict.dropped_ids == ["too-long"]
    loose = check_trainability(
        _config(tiny_model_dir, max_dropped_fraction=0.5), [*sft_rows_real, short], step=False
    )
    assert loose.passed and loose.dropped_too_long == 1  # counted even when allowed


def test_a_template_without_generation_markers_fails(
    tiny_model_dir: Path, sft_rows_real: list[SftRow], tmp_path: Path
) -> None:
    model = Path(shutil.copytree(tiny_model_dir, tmp_path / "plain"))
    plain = CHAT_TEMPLATE.replace("{% generation %}", "").replace("{% endgeneration %}", "")
    (model / "chat_template.jinja").write_text(plain)
    report = check_trainability(_config(model), sft_rows_real)
    assert not report.passed and not report.generation_markers
    assert "generation" in report.reasons[0]


def test_a_row_that_does_not_render_is_named(
    tiny_model_dir: Path, sft_rows_real: list[SftRow]
) -> None:
    bad = sft_rows_real[0].model_copy(
        update={"id": "bad-row", "messages": [{"role": "user", "content": {"x": 1}}]}
    )
    report = check_trainability(_config(tiny_model_dir), [*sft_rows_real, bad], step=False)
    assert not report.passed and report.render_errors == 1
    assert report.errors[0].startswith("bad-row:") and "content" in report.errors[0]


def test_missing_base_model_is_a_clear_error(sft_rows_real: list[SftRow], tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no config.json"):
        check_trainability(_config(tmp_path / "nowhere"), sft_rows_real)


def _with_long_outputs(row: SftRow) -> SftRow:
    """`row` with every tool output replaced by ~9,000 characters of numeric stdout."""
    table = "\n".join(f"{i:5d}  {i * 0.37:9.4f}  {i % 7}" for i in range(400))
    msgs = [
        {**m, "content": f"[cell ok, 4 ms]\nstdout:\n{table}"} if m["role"] == "tool" else m
        for m in chat_messages(row)
    ]
    return row.model_copy(update={"id": "long-outputs", "messages": msgs})


def test_compress_shrinks_tool_outputs_never_an_assistant_turn(
    tiny_model_dir: Path, sft_rows_real: list[SftRow]
) -> None:
    row = next(r for r in sft_rows_real if any(m["role"] == "tool" for m in chat_messages(r)))
    long_row = _with_long_outputs(row)
    msgs = chat_messages(long_row)
    full = _length(tiny_model_dir, msgs)
    limit = _length(tiny_model_dir, chat_messages(row)) + 200
    assert limit < full  # the row must be compressed to fit
    config = _config(tiny_model_dir, max_seq_length=limit)
    assert config.sft.truncation == "compress"  # the documented default
    report = check_trainability(config, [long_row], step=False)
    assert report.passed, report.reasons
    assert (report.compressed, report.compressed_ids, report.dropped_too_long) == (
        1,
        ["long-outputs"],
        0,
    )
    assert report.compressed_tokens_removed >= full - limit

    prep = prepare_rows(load_tokenizer(tiny_model_dir), [long_row], config.sft)
    (fitted,) = prep.conversations
    assert _length(tiny_model_dir, fitted) <= limit
    assert prep.tokens_removed == full - _length(tiny_model_dir, fitted)
    assert [m["role"] for m in fitted] == [m["role"] for m in msgs]  # no turn dropped
    for before, after in zip(msgs, fitted, strict=True):
        if before["role"] != "tool":  # system, task, assistant turns: byte for byte
            assert after == before
        else:  # the status line stays; the body says what was cut
            assert after["content"].startswith("[cell ok, 4")
            assert "truncated]" in after["content"] or "chars of output cut" in after["content"]
    assert any("chars of output cut" in m["content"] for m in fitted[:-2])  # older: summarized


def test_compress_drops_a_row_whose_kept_turns_alone_do_not_fit(
    tiny_model_dir: Path, sft_rows_real: list[SftRow]
) -> None:
    row = next(r for r in sft_rows_real if any(m["role"] == "tool" for m in chat_messages(r)))
    long_row = _with_long_outputs(row)
    kept = [m for m in chat_messages(long_row) if m["role"] != "tool"]
    limit = _length(tiny_model_dir, kept) - 1  # even with every tool output gone it overflows
    report = check_trainability(
        _config(tiny_model_dir, max_seq_length=limit), [long_row], step=False
    )
    assert (report.compressed, report.dropped_too_long) == (0, 1)
    assert report.dropped_ids == ["long-outputs"] and not report.passed


def test_rows_too_long_are_counted_per_family(
    tiny_model_dir: Path, sft_rows_real: list[SftRow]
) -> None:
    """Under the global fraction, a family whose rows almost never fit is still named."""
    row = sft_rows_real[0]
    long_msgs = [*chat_messages(row)[:2], {"role": "assistant", "content": "x " * 4000}]
    long_row = row.model_copy(update={"id": "long", "family": "refactor", "messages": long_msgs})
    rows = [r.model_copy(update={"family": "analysis"}) for r in sft_rows_real[:3]]
    report = check_trainability(_config(tiny_model_dir), [*rows, long_row], step=False)
    assert report.passed, report.reasons  # 1 of 4 dropped: under the fraction
    assert report.rows_by_family == {"analysis": 3, "refactor": 1}
    assert report.dropped_by_family == {"refactor": 1}
    assert report.summary().endswith("too long by family: refactor 1/1")
