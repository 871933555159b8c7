"""The context budget against the real vLLM server (tiny model, max_model_len 2048).

The scripted policy stands in only for what the model says: every prompt still goes to
the server, so "it fits" is the server's verdict, and our token count is compared with
the server's `prompt_tokens` on every request.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from verilearn_assets.analysis.records import Message
from verilearn_assets.analysis.rollout.config import SamplingConfig, TeacherConfig
from verilearn_assets.analysis.rollout.loop import run_trace
from verilearn_assets.analysis.rollout.policy import PolicyReply, VllmPolicy, chat_messages
from verilearn_assets.analysis.rollout.prompts import question_prompt
from verilearn_assets.analysis.sources.llm import (
    Proposal,
    answer_proposal,
    proposal_policy_factory,
    rejected_record,
)
from verilearn_assets.core.ingest.profile import profile_frame
from verilearn_assets.core.llm.client import VllmClient, VllmContextOverflow
from verilearn_assets.core.llm.fit import FAILURE_CLASS, ContextBudget, ContextOverflow
from verilearn_assets.core.records import AnswerSchema, TableRecord
from verilearn_assets.core.sandbox.config import SandboxConfig
from verilearn_assets.core.sandbox.pool import SandboxPool

pytestmark = pytest.mark.vllm

WINDOW = 2048
ANSWER_TOKENS = 32
SCHEMA = AnswerSchema(kind="number")


def wide_table(tmp_path: Path, n_cols: int = 40) -> TableRecord:
    rng = np.random.default_rng(5)
    df = pd.DataFrame({f"m{i}": np.round(rng.normal(size=300), 4) for i in range(n_cols)})
    path = tmp_path / "wide.parquet"
    df.to_parquet(path)
    path.chmod(0o644)
    return TableRecord(
        id="wide",
        dataset="toy",
        name="wide",
        split="dev",
        path=str(path),
        n_rows=len(df),
        n_columns=n_cols,
        sha256="0" * 64,
        columns=profile_frame(df),
    )


def client_config(vllm_server: Any) -> Any:
    return vllm_server.config(max_concurrency=1)


class ScriptedOverServer:
    """Sends every (fitted) prompt to the real server, then says the scripted reply."""

    name = "scripted-over-server"

    def __init__(self, client: VllmClient, script: list[str], budgeted: bool = True) -> None:
        self.client = client
        self.script = script
        self.budgeted = budgeted
        self.requests: list[tuple[int, int]] = []  # (our count, the server's prompt_tokens)

    @property
    def budget(self) -> ContextBudget | None:
        return self.client.budget(ANSWER_TOKENS) if self.budgeted else None

    async def next_message(self, conversation: list[Message]) -> PolicyReply:
        messages = chat_messages(conversation)
        ours = self.client.budget(ANSWER_TOKENS).counter.count_chat(messages)
        result = await self.client.chat(messages, max_tokens=ANSWER_TOKENS, temperature=0.0)
        self.requests.append((ours, result.prompt_tokens))
        text = self.script[len(self.requests) - 1]
        return PolicyReply(text, result.prompt_tokens, result.completion_tokens)


def cell(code: str) -> str:
    return f"Next step.\n\n```python\n{code}\n```"


def thirty_cells() -> list[str]:
    """29 cells printing ~4,000+ characters each (one records a hook), then a submit."""
    cells = [cell(f"print(df.iloc[{i}:{i} + 60].to_string())") for i in range(28)]
    cells.insert(5, cell("s = float(df['m0'].sum())\nhook(s, \"s = float(df['m0'].sum())\")"))
    cells.append(cell("submit(float(df['m0'].sum()))"))
    return cells


def test_the_budget_reads_the_window_and_counts_like_the_server(vllm_server: Any) -> None:
    async def go() -> tuple[ContextBudget, int, int]:
        async with VllmClient(client_config(vllm_server)) as client:
            budget = client.budget(ANSWER_TOKENS)
            assert budget is not None
            frame = pd.DataFrame(np.random.default_rng(1).normal(size=(30, 5)))
            messages = [
                {"role": "system", "content": "Rules: be careful."},
                {"role": "user", "content": "[cell ok, 3 ms]\nstdout:\n" + frame.to_string()},
            ]
            result = await client.chat(messages, max_tokens=4)
            return budget, budget.counter.count_chat(messages), result.prompt_tokens

    budget, ours, server = asyncio.run(go())
    assert budget.window == WINDOW and budget.window_source == "server"
    assert budget.limit == WINDOW - ANSWER_TOKENS
    assert budget.counter.exact and budget.counter.name.startswith("tokenizer:")
    assert ours == server  # numeric output: where a bare tokenizer.json count drifts


def test_a_length_400_is_a_context_overflow_never_retried(vllm_server: Any) -> None:
    async def go() -> tuple[Exception, dict[str, Any], str]:
        async with VllmClient(client_config(vllm_server)) as client:
            too_long = [{"role": "user", "content": "word " * 3000}]
            with pytest.raises(VllmContextOverflow) as info:
                await client.chat(too_long, max_tokens=4)
            stats = client.stats()
            after = await client.chat([{"role": "user", "content": "hi"}], max_tokens=2)
            return info.value, stats, after.finish_reason or ""

    exc, stats, finish = asyncio.run(go())
    assert isinstance(exc, ContextOverflow) and exc.failure_class == FAILURE_CLASS
    assert "maximum context length" in str(exc) and vllm_server.base_url in str(exc)
    assert stats["retries"] == 0 and stats["failed_requests"] == 1
    server = stats["servers"][vllm_server.base_url]
    assert server["healthy"] and server["failures"] == 0  # the server was not blamed
    assert finish  # and it answers the next request


def test_a_thirty_turn_episode_fits_every_request(vllm_server: Any, tmp_path: Path) -> None:
    table = wide_table(tmp_path)
    cfg = TeacherConfig(
        teacher="vllm", max_turns=30, tool_output_chars=4000, sampling={"max_tokens": 32}
    )
    script = thirty_cells()
    prompt = question_prompt("What is the sum of 'm0'?", SCHEMA)

    async def go() -> tuple[Any, ScriptedOverServer, int]:
        async with (
            VllmClient(client_config(vllm_server)) as client,
            SandboxPool(SandboxConfig(backend="bwrap", slots=1)) as pool,
        ):
            policy = ScriptedOverServer(client, script)
            trace = await run_trace(prompt, table, policy, pool, cfg)
            full = chat_messages(trace.messages)
            return trace, policy, client.budget(ANSWER_TOKENS).counter.count_chat(full)

    trace, policy, unfitted = asyncio.run(go())
    assert trace.end == "submitted" and len(trace.cells) == 30
    assert all(c.status == "ok" for c in trace.cells), [c.stderr for c in trace.cells]
    assert len(policy.requests) == 30  # every turn reached the server and was answered
    for ours, server in policy.requests:
        assert ours == server and server + ANSWER_TOKENS <= WINDOW
    assert unfitted > 5 * WINDOW  # the whole transcript is far beyond the window...
    b = trace.budget
    assert b.requests == 30 and b.overflows == 0  # ...so compression did the fitting
    assert b.tokens_removed["tool_output"] > 0 and sum(b.messages_compressed.values()) > 0
    # the stored transcript is the full one; only what was sent was compressed
    assert all("chars of output cut" not in m.content for m in trace.messages)
    assert len(trace.hooks) == 1 and trace.answer is not None


def test_an_item_that_cannot_fit_ends_as_context_overflow(vllm_server: Any) -> None:
    """Budgeted: no request is sent. Unbudgeted: the server's 400 ends it the same way.
    Either way the item ends with its reason and nothing escapes."""
    huge = question_prompt("Why is " + "very " * 3000 + "long?", SCHEMA)
    table = TableRecord(
        id="t",
        dataset="toy",
        name="t",
        split="dev",
        path="/nonexistent.parquet",
        n_rows=1,
        n_columns=0,
        sha256="0" * 64,
        columns=[],
    )
    cfg = TeacherConfig(teacher="vllm", consistency_traces=2, sampling={"max_tokens": 32})

    async def go() -> tuple[Any, Any, Any, int]:
        async with VllmClient(client_config(vllm_server)) as client:
            budgeted = await run_trace(
                huge, table, VllmPolicy(client, SamplingConfig(max_tokens=32), 0), None, cfg
            )
            sent_before = client.stats()["requests"] + client.stats()["failed_requests"]
            server_says = await run_trace(
                huge, table, ScriptedOverServer(client, [], budgeted=False), None, cfg
            )
            proposal = Proposal("Why is " + "very " * 3000 + "long?", SCHEMA)
            outcome = await answer_proposal(
                proposal, table, proposal_policy_factory(cfg, client), None, cfg
            )
            return budgeted, server_says, outcome, sent_before

    budgeted, server_says, outcome, sent_before = asyncio.run(go())
    assert budgeted.end == FAILURE_CLASS and sent_before == 0
    assert budgeted.failure_without_answer() == FAILURE_CLASS
    assert budgeted.overflow_reason.startswith(f"{FAILURE_CLASS}: the prompt needs")
    assert budgeted.budget.overflows == 1 and budgeted.cells == []
    assert server_says.end == FAILURE_CLASS and "maximum context length" in (
        server_says.overflow_reason
    )
    assert server_says.budget.overflows == 1
    # an llm proposal that cannot fit is a rejected record with its class and reason
    assert outcome.record is None and outcome.failure_class == FAILURE_CLASS
    assert len(outcome.traces) == cfg.n_traces
    record = rejected_record(outcome, table)
    assert record.status == "rejected"
    assert record.rejection_reason.startswith(f"{FAILURE_CLASS}: triangulation")
    assert "overflowed: context_overflow: the prompt needs" in record.rejection_reason
