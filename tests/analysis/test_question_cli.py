"""`verilearn questions generate|verify` end to end on a tab-separated file."""

from __future__ import annotations

import argparse
import shutil

import numpy as np
import pandas as pd
import polars as pl
import pytest

from verilearn_assets.analysis import cli as questions
from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.core.config import config_dir


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="verilearn")
    questions.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.handler(args) or 0)


@pytest.fixture
def configs(tmp_path, monkeypatch):
    """The repository's configs, with only two templates enabled to keep the test short."""
    conf = tmp_path / "configs"
    shutil.copytree(config_dir(), conf)
    if not (conf / "sandbox.yaml").exists():
        (conf / "sandbox.yaml").write_text("backend: auto\n")
    text = (conf / "questions.yaml").read_text()
    (conf / "questions.yaml").write_text(
        text.replace("enabled: null", "enabled: [mean_median_gap, ttest_discovered_groups]")
    )
    monkeypatch.setenv("VERILEARN_CONFIG_DIR", str(conf))
    return conf


def test_generate_then_verify_then_detect_tampering(tmp_path, configs, capsys):
    rng = np.random.default_rng(7)
    frame = pd.DataFrame(
        {"group": rng.choice(["ctl", "trt"], 40), "score": rng.normal(50, 10, 40).round(2)}
    )
    csv = tmp_path / "trial.tsv"
    frame.to_csv(csv, sep="\t", index=False)
    out = tmp_path / "q.parquet"
    assert (
        run_cli(
            ["questions", "generate", "--csv", str(csv), "--source", "template", "--out", str(out)]
        )
        == 0
    )
    records = [QuestionRecord.from_row(r) for r in pl.read_parquet(out).to_dicts()]
    assert {r.template for r in records} == {"mean_median_gap", "ttest_discovered_groups"}
    assert all(
        r.status == "accepted" and r.split == "train" and r.dataset == "trial" for r in records
    )
    assert run_cli(["questions", "verify", str(out)]) == 0
    assert "2/2 accepted questions reproduced" in capsys.readouterr().out

    # tamper with one stored answer: verify must exit 1 and name that question
    bad = records[0].model_copy(update={"answer_hashes": ["0" * 16]})
    QuestionRecord.to_frame([bad, records[1]]).write_parquet(out)
    assert run_cli(["questions", "verify", str(out)]) == 1
    printed = capsys.readouterr().out
    assert f"MISMATCH {bad.id}" in printed and records[1].id not in printed


def test_missing_csv_is_a_clear_error(tmp_path, configs):
    with pytest.raises(ValueError, match="no such file"):
        run_cli(
            [
                "questions",
                "generate",
                "--csv",
                str(tmp_path / "nope.csv"),
                "--source",
                "template",
                "--out",
                str(tmp_path / "q.parquet"),
            ]
        )
