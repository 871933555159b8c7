"""`verilearn experiment run` end to end on the tiny model: the shipped ORM-vs-PRM card,
two GRPO arms of one step each (rewards from the real bwrap sandbox), each model served
by a real vLLM server and evaluated as the student on one real question with 4 samples,
then the summary with pass@1..pass@4 per arm, intervals and the verdict.

Run in three calls to prove resumption: the first runs arm `orm` only (`--arms orm`), the
second `--resume`s the card and must train only `prm`, the third finds both complete and
trains and evaluates nothing. The gate is the real one: the SFT rows' trainability check
is `trainable_result`, the family's blocking checks are recorded as passed (what they
decide is tested with the family).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from eval_support import build_home, episodes
from gate_support import check_sft_rows, decide_family_gate, instance_with_sft_rows, tiny_config_dir

from verilearn_assets.analysis.family import FAMILY
from verilearn_assets.cli import main
from verilearn_assets.core import lake
from verilearn_assets.core.eval_records import EVAL_ASSET, ModelEvalRecord
from verilearn_assets.training.eval.pass_at_k import pass_at_k

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(900)]

TEMPLATES = ["top_category_share"]
RUN = ["experiment", "run", "orm_vs_prm", "--limit", "1", "--max-steps", "1", "--split", "train"]
GRPO = {
    "allow_base_fallback": True,  # no SFT run in this home: both arms start from the base
    "num_generations": 2,
    "per_device_train_batch_size": 2,
    "max_completion_length": 16,
    "cpu_threads": 1,
}


@dataclass
class Ran:
    home: Path
    outs: list[str]  # stdout of the three calls
    runs: list[set[str]]  # run dir names after each call
    exp_dir: Path


def _failure(stderr: str) -> str:
    """The command's error line, and the traceback it logged for an internal error."""
    logs = re.findall(r"traceback in (\S+)\)", stderr)
    return stderr + "".join(Path(p).read_text() for p in logs if Path(p).is_file())


def _runs(home: Path) -> set[str]:
    return {p.name for p in (home / "runs").glob("grpo-*")}


@pytest.fixture(scope="module")
def ran(
    tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path, vllm_python: Path
) -> Iterator[Ran]:
    root = tmp_path_factory.mktemp("experiment")
    home = root / "home"
    (home / "dagster").mkdir(parents=True)
    cfg = tiny_config_dir(
        root / "configs", tiny_model_dir, grpo=GRPO, eval={"max_tokens": 32, "max_turns": 1}
    )
    teacher = yaml.safe_load((cfg / "teacher.yaml").read_text())
    teacher |= {"max_turns": 1, "max_format_errors": 0}  # as the episodes were recorded
    (cfg / "teacher.yaml").write_text(yaml.safe_dump(teacher))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERILEARN_HOME", str(home))
        mp.setenv("DAGSTER_HOME", str(home / "dagster"))
        mp.setenv("VERILEARN_CONFIG_DIR", str(cfg))
        build_home(home, TEMPLATES, split="train")
        rows = FAMILY.sft_rows([e for e in episodes(home) if e.verified])
        instance = instance_with_sft_rows(home, rows)
        assert check_sft_rows(instance, home).passed
        decide_family_gate(instance, "analysis", "template", "train", passed=True)
        outs, runs = [], []
        for extra in (["--arms", "orm"], ["--resume"], ["--resume"]):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main([*RUN, *extra])
            assert code == 0, _failure(err.getvalue())
            outs.append(out.getvalue())
            runs.append(_runs(home))
        (exp_dir,) = (home / "runs" / "experiments").iterdir()
        yield Ran(home, outs, runs, exp_dir)


def test_two_arm_card_writes_summary_with_pass_at_k_and_a_verdict(ran: Ran) -> None:
    summary = json.loads((ran.exp_dir / "summary.json").read_text())
    assert summary["experiment"] == "orm_vs_prm" and set(summary["arms"]) == {"orm", "prm"}
    overall = {r["arm"]: r for r in summary["table"] if r["by"] == "all"}
    assert set(overall) == {"orm", "prm"}
    for arm, row in overall.items():
        assert row["split"] == "train" and row["tasks"] == 1 and row["n"] == 4
        assert set(row["pass_at_k"]) == {"1", "2", "3", "4"}  # JSON keys
        assert set(row["intervals"]) == {"pass@1", "pass@4"}
        # the figures are the records' counts, through the unbiased estimator
        (rec,) = [
            ModelEvalRecord.model_validate_json(x)
            for x in (ran.exp_dir / "arms" / arm / "eval-train.jsonl").read_text().splitlines()
        ]
        n, c = rec.extra["n_best"], rec.extra["n_best_passed"]
        assert n == 4 and row["pass_at_k"]["4"] == pytest.approx(pass_at_k(n, c, 4))
        # the arm's model is its own GRPO run (one step), named after it in the record
        info = summary["arms"][arm]
        assert info["train"] == ["grpo"] and info["steps"] == 1
        assert rec.model == info["run_id"] and info["run_id"].startswith(f"grpo-{arm}-")
        result = json.loads((Path(info["run_dir"]) / "result.json").read_text())
        assert result["kind"] == f"grpo-{arm}" and result["extra"]["start"] == "base"
        assert info["runs"]["grpo"]["outcome_curve"]  # the training curve is kept too
    v = summary["verdict"]
    assert v["verdict"] in {"met", "not met"} and isinstance(v["met"], bool)
    assert v["treatment"]["arm"] == "prm" and v["control"]["arm"] == "orm" and v["paired"]
    md = (ran.exp_dir / "summary.md").read_text()
    assert f"**Verdict: {v['verdict']}.**" in md and "| prm | train | (all) | 1 | 4 |" in md
    assert Path(summary["plot"]).is_file()
    # both models' records are in the lake beside every other evaluation
    stored = lake.read_records(EVAL_ASSET, ModelEvalRecord, lake.lake_root(ran.home), split="train")
    assert {r.model for r in stored} >= {summary["arms"][a]["run_id"] for a in ("orm", "prm")}
    print(f"\norm_vs_prm on the tiny model: {md}")


def test_resume_trains_only_what_is_missing(ran: Ran) -> None:
    first, second, third = ran.runs
    assert len(first) == 1 and next(iter(first)).startswith("grpo-orm-")
    assert first < second and len(second) == 2  # the resumed run trained prm only
    assert third == second  # nothing trained the third time
    assert "skipped (complete): orm" in ran.outs[1]
    assert "skipped (complete): orm, prm" in ran.outs[2]
    assert "[prm] training grpo" in ran.outs[1] and "training" not in ran.outs[2]


def test_list_and_show(ran: Ran, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.setenv("VERILEARN_HOME", str(ran.home))
    assert main(["experiment", "list"]) == 0
    out = capsys.readouterr().out
    assert ran.exp_dir.name in out and "arms orm,prm" in out
    assert main(["experiment", "show", "orm_vs_prm"]) == 0
    assert (ran.exp_dir / "summary.md").read_text() in capsys.readouterr().out
    assert main(["experiment", "show", "no_such_experiment"]) == 2
