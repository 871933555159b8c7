"""Evaluation's success paths, end to end: `verilearn eval` with `--limit` (the base model's
directory, launched on vLLM by the command) and with `--questions` (the session's vLLM
server, by name), and the `model_eval` asset materialized through Dagster — every one
running the student loop in the real bwrap sandbox. The base model is a configured
baseline (training.yaml's base_model; its served name listed in eval.baselines).

Short by design: one question per run, one turn, 32 tokens per reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from dagster import materialize
from eval_support import build_home
from gate_support import tiny_config_dir

from resources.home import HomeResource
from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.cli import main
from verilearn_assets.core import lake
from verilearn_assets.core.eval_records import EVAL_ASSET, ModelEvalRecord
from verilearn_assets.training.eval.assets import model_eval

pytestmark = pytest.mark.vllm

TEMPLATES = ["mean_median_gap", "top_category_share"]


@pytest.fixture(scope="module")
def eval_home(
    tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path, vllm_server: Any
) -> Iterator[tuple[Path, list[QuestionRecord]]]:
    root = tmp_path_factory.mktemp("eval-cli")
    home = root / "home"
    (home / "dagster").mkdir(parents=True)
    cfg = tiny_config_dir(
        root / "configs",
        tiny_model_dir,
        eval={"max_tokens": 32, "max_turns": 1, "baselines": [vllm_server.model]},
    )
    teacher = yaml.safe_load((cfg / "teacher.yaml").read_text())
    teacher |= {"max_turns": 1, "max_format_errors": 0}  # as the episodes were recorded
    (cfg / "teacher.yaml").write_text(yaml.safe_dump(teacher))
    vllm = yaml.safe_load((cfg / "vllm.yaml").read_text())
    vllm |= {"base_urls": [vllm_server.base_url], "model": vllm_server.model}
    (cfg / "vllm.yaml").write_text(yaml.safe_dump(vllm))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERILEARN_HOME", str(home))
        mp.setenv("DAGSTER_HOME", str(home / "dagster"))
        mp.setenv("VERILEARN_CONFIG_DIR", str(cfg))
        questions = sorted(build_home(home, TEMPLATES, split="dev"), key=lambda q: q.id)
        assert len(questions) == 2
        yield home, questions


def _records(home: Path) -> dict[str, ModelEvalRecord]:
    stored = lake.read_records(EVAL_ASSET, ModelEvalRecord, lake.lake_root(home), split="dev")
    return {r.question_id: r for r in stored}  # type: ignore[attr-defined]


def test_cli_eval_model_dir_with_limit(
    eval_home: tuple[Path, list[QuestionRecord]],
    tiny_model_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, questions = eval_home
    assert main(["eval", "--model", str(tiny_model_dir), "--split", "dev", "--limit", "1"]) == 0
    out = capsys.readouterr().out
    name = tiny_model_dir.name
    assert f"evaluating {name} — baseline (no training run)" in out
    assert f"{name} on analysis [dev]: 0/1 passed" in out  # random weights solve nothing
    records = _records(home)
    assert list(records) == [questions[0].id]  # --limit 1: the first question by id
    r = records[questions[0].id]
    assert r.model == name and r.model_path == str(tiny_model_dir.resolve())
    assert r.run_id is None and not r.passed and r.failure_class
    assert r.n_turns == 1 and 0 < r.completion_tokens <= 32 and r.latency_ms > 0
    assert str(lake.lake_root(home) / EVAL_ASSET) in out


def test_cli_eval_named_questions_on_a_served_model(
    eval_home: tuple[Path, list[QuestionRecord]],
    vllm_server: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, questions = eval_home
    wanted = questions[1].id
    args = ["eval", "--model", vllm_server.model, "--split", "dev", "--questions", wanted]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"{vllm_server.model} on analysis [dev]: 0/1 passed" in out
    r = _records(home)[wanted]
    assert r.model == vllm_server.model and r.model_path is None  # served by name
    assert r.template_family == questions[1].template and r.n_turns == 1
    # an id that is not an accepted dev question is named, and nothing is served
    assert main(["eval", "--model", vllm_server.model, "--split", "dev", "--questions", "nope"])
    assert "['nope']" in capsys.readouterr().err


def test_model_eval_asset_materializes(
    eval_home: tuple[Path, list[QuestionRecord]], vllm_server: Any
) -> None:
    home, questions = eval_home
    result = materialize(
        [model_eval],
        partition_key="dev",
        resources={"home": HomeResource(path=str(home))},
        run_config={
            "ops": {
                "model_eval": {
                    "config": {"model": vllm_server.model, "question_ids": [questions[0].id]}
                }
            }
        },
    )
    assert result.success
    (mat,) = result.asset_materializations_for_node("model_eval")
    meta = {k: v.value for k, v in mat.metadata.items()}
    assert meta["model"] == vllm_server.model and meta["baseline"] is True
    assert (meta["questions"], meta["passed"], meta["pass_rate"]) == (1, 0, 0.0)
    assert questions[0].template in meta["by_template"]
    assert meta["pass_k"]["n_samples"] == 1 and len(meta["pass_k"]["pass_at_k"]) == 1
    r = _records(home)[questions[0].id]
    assert r.model == vllm_server.model and r.model_path is None


def test_cli_eval_n_samples_prints_pass_at_k(
    eval_home: tuple[Path, list[QuestionRecord]],
    vllm_server: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--n 4 --temperature 1`: four sampled student runs per question, the counts in the
    record, pass@k/pass^k printed for k = 1..4 and the same figures in the mart."""
    from verilearn_assets.core.warehouse import build_all, reader, warehouse_path, writer

    home, questions = eval_home
    wanted = questions[0].id
    args = ["eval", "--model", vllm_server.model, "--split", "dev", "--questions", wanted]
    assert main([*args, "--n", "4", "--temperature", "1.0"]) == 0
    out = capsys.readouterr().out
    r = _records(home)[wanted]
    n, c = r.extra["n_best"], r.extra["n_best_passed"]
    assert (n, r.extra["n_best_temperature"]) == (4, 1.0) and 0 <= c <= 4
    assert r.extra["pass_at_n"] == (c > 0) and (c >= 1 or not r.passed)
    assert "n=4 samples per task: pass@1 " in out and "pass@4 " in out and "pass^4 " in out
    db = warehouse_path(home)
    with writer(db, 60) as con:
        build_all(con, lake.lake_root(home))
    with reader(db, 60) as con:
        (row,) = con.execute(
            "SELECT n_samples, n_samples_passed, pass_at_k FROM mart_model_pass_rate "
            "WHERE model = ? AND split = 'dev' AND template_family = ?",
            [vllm_server.model, questions[0].template],
        ).fetchall()
    assert row[0] == 4 and row[1] == c and len(row[2]) == 4
    assert f"pass@1 {row[2][0]:.3f}" in out and f"pass@4 {row[2][3]:.3f}" in out
    assert main([*args, "--n", "0"]) == 2 and "--n must be >= 1" in capsys.readouterr().err
