"""The `llm` source partitions materialized through Dagster against the real vLLM server.

`questions[llm|dev]` and `episodes[llm|dev]` run with the real resources (the sandbox pool
and the vLLM client built from a private config dir) over a one-table catalog. A
CountingProxy in front of the server counts the chat requests independently of our client.

The tiny model's weights are random, so two runs cover the two paths:
* free sampling: gibberish never proposes a usable question; the partition is written
  (empty), the malformed proposals and the model usage are in the metadata, and episodes
  for the empty partition write an empty partition without asking the model;
* constrained decoding (vLLM `structured_outputs`, passed through `sampling.extra`): every
  reply is one fixed cell submitting a dict that is itself a well-formed proposal whose
  answer is that same dict, so the proposal is triangulated, re-executed, accepted, and
  its episodes verify — the accepted path end to end with a real server.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from dagster import AssetMaterialization, materialize
from llm_proxy import CountingProxy

from resources.container_pool import ContainerPoolResource
from resources.home import HomeResource
from resources.vllm import VllmResource
from verilearn_assets.analysis.assets import episodes, questions
from verilearn_assets.analysis.records import Episode, QuestionRecord
from verilearn_assets.core import lake
from verilearn_assets.core.ingest.tables import load_table_records
from verilearn_assets.core.llm.budget_records import ContextBudgetRecord
from verilearn_assets.core.llm.budget_records import lake_asset as budget_lake_asset
from verilearn_assets.ingest.assets import INGEST_ASSETS

pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parents[2]
PARTITION = "llm|dev"
# Every split share goes to dev, so the one dataset lands in the partition under test.
CATALOG = {
    "seed": 0,
    "splits": {"train": 0.0, "dev": 1.0, "test": 0.0},
    "limits": {"max_rows": 100},
    "datasets": [
        {"name": "longley", "kind": "bundled", "package": "statsmodels", "loader": "longley"}
    ],
}
TEACHER = {
    "max_turns": 2,
    "max_format_errors": 1,
    "consistency_traces": 2,
    "max_proposals": 2,
    "concurrency": 2,
}
REQUESTS_PER_TRACE = TEACHER["max_turns"] + TEACHER["max_format_errors"] + 1
PROPOSAL = {"question": "What does this cell submit?", "answer_schema": {"kind": "mapping"}}
CODE = f"submit({json.dumps(PROPOSAL)})"
FIXED_REPLY = f"ok\n```python\n{CODE}\n```"


def write_configs(conf: Path, base_url: str, model: str, *, constrained: bool) -> None:
    """The shipped configs, narrowed: one table, bwrap with 2 slots, small model budgets."""
    shutil.copytree(REPO / "configs", conf)
    (conf / "datasets.yaml").write_text(yaml.safe_dump(CATALOG))
    sandbox = yaml.safe_load((conf / "sandbox.yaml").read_text())
    (conf / "sandbox.yaml").write_text(yaml.safe_dump(sandbox | {"backend": "bwrap", "slots": 2}))
    extra = {"structured_outputs": {"choice": [FIXED_REPLY]}} if constrained else {}
    (conf / "vllm.yaml").write_text(
        yaml.safe_dump(
            {
                "base_urls": [base_url],
                "model": model,
                "launch": False,
                "sampling": {"temperature": 1.0, "top_p": 1.0, "max_tokens": 16, "extra": extra},
                "timeouts": {"connect_s": 2, "request_s": 60, "health_s": 2},
                "retry": {
                    "max_attempts": 2,
                    "initial_backoff_s": 0.05,
                    "max_backoff_s": 0.5,
                    "jitter_s": 0.05,
                },
            }
        )
    )
    # the fixed reply is ~75 tokens of the tiny byte-level vocabulary
    max_tokens = 128 if constrained else 16
    (conf / "teacher.yaml").write_text(
        yaml.safe_dump(
            TEACHER
            | {
                "teacher": "vllm",
                "model": model,
                "sampling": {"temperature": 1.0, "top_p": 1.0, "max_tokens": max_tokens},
            }
        )
    )


def resources() -> dict[str, Any]:
    """Built as definitions.py builds them: everything comes from VERILEARN_CONFIG_DIR."""
    return {
        "container_pool": ContainerPoolResource(),
        "vllm": VllmResource(),
        "home": HomeResource(),
    }


def materialized(asset: Any, proxy: CountingProxy) -> tuple[AssetMaterialization, int]:
    """Materialize `asset` for the partition; its materialization and the chats it sent."""
    before = proxy.chat_requests
    result = materialize(
        [asset], partition_key=PARTITION, resources=resources(), raise_on_error=False
    )
    assert result.success, [e.message for e in result.all_events if e.is_failure]
    (mat,) = result.asset_materializations_for_node("__".join(asset.key.path))
    return mat, proxy.chat_requests - before


def setup_home(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    vllm_server: Any,
    proxy: CountingProxy,
    *,
    constrained: bool,
) -> None:
    conf = tmp_path / "conf"
    write_configs(conf, proxy.url, vllm_server.model, constrained=constrained)
    monkeypatch.setenv("VERILEARN_CONFIG_DIR", str(conf))
    home_resource = {"home": HomeResource()}
    assert materialize(INGEST_ASSETS, partition_key="longley", resources=home_resource).success
    (table,) = load_table_records(lake.home())
    assert (table.dataset, table.split) == ("longley", "dev")


def partition_parts(asset: str) -> list[Path]:
    pdir = lake.partition_dir(f"analysis/{asset}", source="llm", split="dev")
    return sorted(pdir.glob("part-*.parquet"))


def meta(mat: AssetMaterialization) -> dict[str, Any]:
    return {k: v.value for k, v in mat.metadata.items()}


def test_random_model_writes_empty_llm_partitions(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vllm_server: Any
) -> None:
    with CountingProxy(vllm_server.base_url) as proxy:
        setup_home(tmp_path, monkeypatch, vllm_server, proxy, constrained=False)
        q_mat, q_chats = materialized(questions, proxy)
        e_mat, e_chats = materialized(episodes, proxy)

    q = meta(q_mat)
    records = lake.read_records("analysis/questions", QuestionRecord, source="llm", split="dev")
    assert len(partition_parts("questions")) == 1  # written even when nothing was accepted
    assert q["tables"] == 1
    assert q["accepted"] == len([r for r in records if r.status == "accepted"])
    # the one exploration yields well-formed candidates or at least one malformed entry
    assert q["candidates"] + q["proposals_malformed"] >= 1
    assert q["candidates"] == q["accepted"] + q["proposals_failed"]
    # a failed proposal is kept as a rejected record with its failure class
    assert q["rejected"] == q["proposals_failed"] == len(records) - q["accepted"]
    if q["candidates"] == 0:  # gibberish: the exploration never submitted a proposal
        assert records == []
        assert q["proposals_malformed"] == 1
        assert "the exploration trace submitted nothing" in q["malformed_reasons"]
    # the server really answered: the proxy saw every request the client accounted for
    assert q_chats == q["llm_requests"] >= 1
    assert q["llm_failed_requests"] == 0
    assert q["llm_prompt_tokens"] > 0 and q["llm_completion_tokens"] > 0
    # the budget bounds the run: one exploration, then 1 + K traces per candidate
    traces = 1 + q["candidates"] * (1 + TEACHER["consistency_traces"])
    assert q_chats <= traces * REQUESTS_PER_TRACE
    # every request was fitted to the window, counted with the served tokenizer, and the
    # partition's losses are in the lake for mart_context_budget
    assert q["context_requests"] == q["llm_requests"] and q["context_overflows"] == 0
    assert q["context_counter"] != "none (no budgeted request)"
    budget_rows = lake.read_records(
        budget_lake_asset("analysis", "questions"), ContextBudgetRecord, source="llm", split="dev"
    )
    assert budget_rows and {r.requests for r in budget_rows} == {q["context_requests"]}
    assert sum(r.tokens_removed for r in budget_rows) == q["context_tokens_removed"]

    e = meta(e_mat)
    assert e["questions"] == q["accepted"]
    assert e["episodes"] == e["written_this_run"] == 3 * q["accepted"]
    eps = lake.read_records("analysis/episodes", Episode, source="llm", split="dev")
    assert len(eps) == e["episodes"]
    assert len(partition_parts("episodes")) == 1  # an empty partition is still a partition
    if q["accepted"] == 0:
        assert e_chats == 0  # no question, no model call


def test_constrained_model_gets_a_question_accepted_and_verified(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vllm_server: Any
) -> None:
    with CountingProxy(vllm_server.base_url) as proxy:
        setup_home(tmp_path, monkeypatch, vllm_server, proxy, constrained=True)
        q_mat, q_chats = materialized(questions, proxy)
        e_mat, e_chats = materialized(episodes, proxy)

    q = meta(q_mat)
    assert (q["candidates"], q["accepted"], q["proposals_malformed"], q["proposals_failed"]) == (
        1,
        1,
        0,
        0,
    )
    # one exploration reply, then one reply per triangulation trace
    traces = 1 + TEACHER["consistency_traces"]
    assert q_chats == q["llm_requests"] == 1 + traces
    (record,) = lake.read_records("analysis/questions", QuestionRecord, source="llm", split="dev")
    assert (record.status, record.source, record.dataset) == ("accepted", "llm", "longley")
    assert record.question == PROPOSAL["question"]
    assert record.code == CODE
    assert json.loads(record.answer) == PROPOSAL  # the answer every trace agreed on

    e = meta(e_mat)
    assert e_chats == traces  # the gold trace and K consistency traces, one reply each
    assert (e["questions"], e["episodes"], e["verified"]) == (1, traces, traces)
    eps = lake.read_records("analysis/episodes", Episode, source="llm", split="dev")
    assert sorted(ep.role for ep in eps) == ["consistency", "consistency", "gold"]
    assert {ep.question_id for ep in eps} == {record.id}
    assert all(ep.verified and ep.answer == record.answer for ep in eps)
    assert sum(ep.completion_tokens for ep in eps) > 0
