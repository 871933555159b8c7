"""The base tiny model as the student, through the real vLLM server and the real sandbox.

A random-weight model cannot solve a question, so every record must say so — pass=False
with a failure class — and the records must reach the lake, `mart_model_pass_rate` and
`verilearn report --models`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from eval_support import SANDBOX, TEACHER, build_home

from verilearn_assets.cli import main
from verilearn_assets.core import lake
from verilearn_assets.core.eval_records import EVAL_ASSET, ModelEvalRecord
from verilearn_assets.core.warehouse import build_all, reader, warehouse_path, writer
from verilearn_assets.training.eval.config import EvalSettings
from verilearn_assets.training.eval.evaluator import evaluate_model
from verilearn_assets.training.eval.request import EvalRequest

pytestmark = pytest.mark.vllm

TEMPLATES = ["mean_median_gap", "top_category_share"]


def test_base_model_fails_every_question_and_the_mart_shows_it(
    home: Path, vllm_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = build_home(home, TEMPLATES, split="dev")
    assert len(questions) == len(TEMPLATES)
    seen: list[tuple[int, int]] = []
    result = evaluate_model(
        EvalRequest(
            model=vllm_server.model,  # a served name: the session's server
            split="dev",
            home=home,
            settings=EvalSettings(max_tokens=48),
            vllm_cfg=vllm_server.config(max_concurrency=1),
            options={"teacher": TEACHER.model_copy(update={"teacher": "vllm"}), "sandbox": SANDBOX},
            progress=lambda done, total: seen.append((done, total)),
        )
    )
    assert seen[-1] == (2, 2)
    assert result.n == 2 and result.n_passed == 0 and result.pass_rate == 0.0
    for r in result.records:
        assert r.model == vllm_server.model and r.run_id is None
        assert (r.family, r.role) == ("analysis", "default")
        assert not r.passed and r.failure_class in {
            "format_error",
            "wrong_answer",
            "execution_failure",
            "no_submission",
            "max_turns",
        }
        assert r.n_turns >= 1 and r.prompt_tokens > 0 and r.completion_tokens > 0
        assert r.latency_ms > 0 and r.template_family in TEMPLATES and r.dataset == "toy"

    stored = lake.read_records(EVAL_ASSET, ModelEvalRecord, lake.lake_root(home), split="dev")
    assert {r.question_id for r in stored} == {q.id for q in questions}

    db = warehouse_path(home)
    with writer(db, 60) as con:
        build_all(con, lake.lake_root(home))
    with reader(db, 60) as con:
        rows = con.execute(
            "SELECT template_family, n_questions, n_passed, pass_rate, format_error_rate, "
            "is_base FROM mart_model_pass_rate WHERE model = ? AND family = 'analysis' "
            "AND role = 'default' ORDER BY template_family",
            [vllm_server.model],
        ).fetchall()
    assert rows[0][:4] == ("(all)", 2, 0, 0.0) and rows[0][5] is True
    assert [r[0] for r in rows[1:]] == sorted(TEMPLATES)
    fmt = sum(r.format_errors > 0 for r in result.records) / 2
    assert rows[0][4] == pytest.approx(fmt)

    assert main(["report", "--models", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# mart_model_pass_rate") and vllm_server.model in out
    print("base model on dev:", result.summary())
