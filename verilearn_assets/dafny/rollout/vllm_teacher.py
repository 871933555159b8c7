"""`VllmTeacher`: writer and annotator answers from any model served by vLLM.

The cascade is synchronous (the verifier pool is thread-based), so the teacher owns one
event loop and runs the async client on it. Prompts are the family's (`prompts.py`) with
its stop sequences; what the model says is cut to its last fenced block by the cascade.

Every prompt goes through the context budget (`VllmClient.chat_budgeted`): few-shot pairs
are dropped first, then the context declarations are middle-truncated; the system
prompt, the signature and specification and the body to annotate are never cut. A prompt
that still does not fit raises `ContextOverflow`: the cascade records that stage as failed
with class `context_overflow`, the llm source a rejected proposal. Losses are summed in
`budget_counts` for the asset's metadata and `mart_context_budget`. Per task it keeps
the replies without a fenced block and the tokens, which `write_metrics` joins with the
cascades' verdicts into the run's `teacher_metrics.jsonl`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verilearn_assets.core.llm.budget_records import BudgetCounts
from verilearn_assets.core.llm.client import VllmClient
from verilearn_assets.core.llm.config import VllmConfig
from verilearn_assets.core.llm.segments import (
    BudgetMessage,
    TextSegment,
    fewshot_chat,
    split_around,
)
from verilearn_assets.core.llm.teacher_metrics import Attempt, TeacherMetrics
from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.records import DafnyTask, DafnyTrajectory


def task_messages(
    messages: list[dict[str, str]], task: prompts.PromptSource
) -> list[BudgetMessage]:
    """A writer/annotator chat as budget segments: examples droppable, the task message's
    context declarations truncatable, everything else kept."""
    context = (task.prefix + task.suffix).strip()
    last = messages[-1]["content"]
    segments = split_around(last, context, TextSegment(context, "context"))
    return fewshot_chat(messages, segments)


class VllmTeacher:
    name = "vllm"

    def __init__(
        self,
        config: VllmConfig,
        prompt_config: prompts.PromptConfig | None = None,
        shots: dict[str, list[tuple[str, str]]] | None = None,
        seed: int = 0,
    ) -> None:
        """`prompt_config` (configs/dafny_prompts.yaml) sets the variant, stop sequences and
        sampling; without it the client's own sampling defaults apply. `shots` per role come
        from `prompts.few_shot_pairs` (train split only)."""
        if not config.has_server:
            raise ValueError("vllm teacher: no server configured (configs/vllm.yaml base_urls)")
        self.config = config
        self.prompts = prompt_config or prompts.PromptConfig()
        self.sampling = prompt_config.generation.as_request() if prompt_config else {}
        self.shots = shots or {}
        self.seed = seed
        self.budget_counts = BudgetCounts()  # what fitting every prompt cost
        self.loop = asyncio.new_event_loop()
        self.client = VllmClient(config)
        self.loop.run_until_complete(self.client.start())
        self.usage: list[dict[str, Any]] = []
        # task id -> [replies without a fenced block, prompt tokens, completion tokens]
        self.asked: dict[str, list[int]] = {}

    def _chat(self, messages: list[BudgetMessage], task_id: str | None = None) -> str:
        """One budgeted request; `ContextOverflow` when the prompt cannot fit."""
        counts = self.asked.setdefault(task_id, [0, 0, 0]) if task_id else [0, 0, 0]
        result = self.loop.run_until_complete(
            self.client.chat_budgeted(
                messages,
                self.budget_counts,
                seed=self.seed,
                stop=self.prompts.stop,
                **self.sampling,
            )
        )
        self.usage.append(
            {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens}
        )
        counts[0] += "```" not in result.text  # the cascade then takes the raw text
        counts[1] += int(result.prompt_tokens or 0)
        counts[2] += int(result.completion_tokens or 0)
        return result.text

    def propose(self, messages: list[dict[str, str]]) -> str:
        """One free-form answer (the llm source's program proposals: system, example
        programs, request — the examples go first when the window is short)."""
        return self._chat(fewshot_chat(messages))

    def write(self, task: DafnyTask) -> str:
        shots = self.shots.get("writer")
        msgs = prompts.messages(task, "writer", shots=shots, config=self.prompts)
        return self._chat(task_messages(msgs, task), task.id)

    def annotate(self, task: DafnyTask, body: str) -> str:
        shots = self.shots.get("annotator")
        msgs = prompts.messages(task, "annotator", body, shots=shots, config=self.prompts)
        return self._chat(task_messages(msgs, task), task.id)

    def write_metrics(self, trajectories: Sequence[DafnyTrajectory], home: Path) -> Path:
        """This run's `teacher_metrics.jsonl`: one attempt per cascade the model was asked
        for (trajectories resumed from an earlier run are not this run's)."""
        metrics = TeacherMetrics("dafny", self.name, self.config.model)
        for t in trajectories:
            if t.task_id in self.asked:
                blockless, prompt_tokens, completion_tokens = self.asked[t.task_id]
                metrics.add(
                    Attempt(
                        t.source,
                        t.split,
                        t.verified,
                        t.latency_ms,
                        blockless,
                        prompt_tokens,
                        completion_tokens,
                    )
                )
        return metrics.write(home)

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())
        self.loop.close()

    def __enter__(self) -> VllmTeacher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
