"""Dafny prompts under the context budget, against the real vLLM server (tiny model,
`max_model_len` 2048): a prompt far over the window is fitted (examples dropped, context
declarations cut) and answered, our token count equal to the server's `prompt_tokens`;
one whose task alone cannot fit ends its cascade stage as `context_overflow`, and the
partition's other tasks go on. The model's answers are noise; the wiring is the point."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from verilearn_assets.core.llm.budget_records import write_counts
from verilearn_assets.core.llm.config import VllmConfig
from verilearn_assets.core.llm.fit import FAILURE_CLASS
from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.corpus.loader import load_bundled
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.rollout.build import build_trajectories
from verilearn_assets.dafny.rollout.vllm_teacher import VllmTeacher, task_messages
from verilearn_assets.dafny.sources.llm import llm_tasks
from verilearn_assets.dafny.sources.template import template_tasks
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parents[2]
WINDOW = 2048
ANSWER_TOKENS = 32
PROMPTS = prompts.PromptConfig(generation=prompts.Generation(temperature=0.0, max_tokens=32))


def writer_task(verifier: DafnyVerifier) -> DafnyTask:
    ex = [e for e in load_bundled() if e.name == "multiply.Multiply"]
    return next(t for t in template_tasks(ex, split_examples(ex), verifier) if t.role == "writer")


def helpers(n: int) -> str:
    return "".join(f"function Helper{i}(x: int): int {{ x * {i} + {i % 7} }}\n" for i in range(n))


def test_long_dafny_prompts_fit_and_an_overflow_fails_only_its_stage(
    vllm_server, verifier: DafnyVerifier, tmp_path: Path
) -> None:
    base = writer_task(verifier)
    long_task = base.model_copy(update={"id": "long-context", "prefix": helpers(150) + base.prefix})
    huge_spec = base.spec.replace(
        "ensures", "requires " + " && ".join(["x >= 0"] * 900) + "\n  ensures", 1
    )
    overflow = base.model_copy(update={"id": "huge-spec", "spec": huge_spec})
    shot = (prompts.user_prompt(base.model_copy(update={"prefix": helpers(30)}), "writer"),
            prompts.fenced(base.body))  # fmt: skip
    shots = {"writer": [shot] * 4, "annotator": [shot] * 4}
    config = vllm_server.config(max_concurrency=1)
    with VllmTeacher(config, PROMPTS, shots) as teacher:
        budget = teacher.client.budget(ANSWER_TOKENS)
        assert budget is not None and budget.window == WINDOW
        writer_chat = prompts.messages(long_task, "writer", shots=shots["writer"], config=PROMPTS)
        assert budget.counter.count_chat(writer_chat) > WINDOW  # far over the window unfitted
        records = build_trajectories([overflow, long_task], teacher, verifier)
        usage = list(teacher.usage)
        counts = teacher.budget_counts
        # what was sent, fitted again the same way: our count is the server's
        writer_fit = budget.fit(task_messages(writer_chat, long_task))
        body = records[1].stages[0]["output"]
        annotator_chat = prompts.messages(
            long_task, "annotator", body, shots=shots["annotator"], config=PROMPTS
        )
        annotator_fit = budget.fit(task_messages(annotator_chat, long_task))
    # the overflow sent nothing and is kept: a failed writer stage with its reason
    failed, fitted = records
    assert failed.task_id == "huge-spec" and failed.status == FAILURE_CLASS
    assert failed.failure_bucket == FAILURE_CLASS and not failed.verified
    assert [s["stage"] for s in failed.stages] == ["writer"]
    assert failed.stages[0]["status"] == FAILURE_CLASS
    assert failed.stages[0]["output"].startswith(f"{FAILURE_CLASS}: the prompt needs")
    # the next task went on: both its prompts were fitted and answered
    assert fitted.task_id == "long-context"
    assert [s["stage"] for s in fitted.stages] == ["writer", "annotator", "verifier"]
    assert len(usage) == 2
    assert [u["prompt_tokens"] for u in usage] == [
        writer_fit.prompt_tokens,
        annotator_fit.prompt_tokens,
    ]
    assert all(u["prompt_tokens"] + ANSWER_TOKENS <= WINDOW for u in usage)
    assert counts.requests == 3 and counts.overflows == 1
    assert counts.tokens_removed["fewshot"] > 0 and counts.tokens_removed["context"] > 0
    meta = counts.metadata()
    assert meta["context_overflows"] == 1 and meta["context_tokens_removed"] > 0
    # the rows the trajectories asset writes, as `mart_context_budget` reads them
    write_counts(counts, "dafny", "trajectories", tmp_path, "template", "dev")
    sql = (REPO / "dbt_like_sql/marts/mart_context_budget.sql").read_text()
    # an own connection, closed: duckdb's module-level default one lives until exit
    # and is reported as leaked then
    with duckdb.connect() as con:
        mart = con.sql(sql.replace("{{ lake }}", str(tmp_path))).fetchall()
    by_kind = {row[4]: row for row in mart}
    assert {row[0] for row in mart} == {"dafny"} and by_kind[FAILURE_CLASS][8] == 1
    assert by_kind["context"][7] == counts.tokens_removed["context"]


def test_a_proposal_that_cannot_fit_is_a_rejected_task(
    vllm_server, verifier: DafnyVerifier
) -> None:
    """A window (config) smaller than the proposal's instructions: each proposal is kept as
    a rejected task with class `context_overflow`; no request reaches the server."""
    data = vllm_server.config().model_dump()
    data["budget"] = {"max_model_len": 40}
    with VllmTeacher(VllmConfig.model_validate(data), PROMPTS) as model:
        tasks = llm_tasks(model.propose, 2, "test", verifier, shots=[base_program()])
        assert model.usage == [] and model.budget_counts.overflows == 2
    assert len(tasks) == 2 and all(t.status == "rejected" for t in tasks)
    assert all(t.rejection_reason.startswith(f"{FAILURE_CLASS}: the prompt needs") for t in tasks)


def base_program() -> str:
    return next(e for e in load_bundled() if e.name == "multiply.Multiply").gold_program
