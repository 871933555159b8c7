"""`VllmTeacher`: writer and annotator answers from any model served by vLLM.

The cascade is synchronous (the verifier pool is thread-based), so the teacher owns one
event loop and runs the async client on it. Prompts are the family's (`prompts.py`) with
its stop sequences; what the model says is cut to its last fenced block by the cascade.
"""

from __future__ import annotations

import asyncio
from typing import Any

from verilearn_assets.core.llm.client import VllmClient
from verilearn_assets.core.llm.config import VllmConfig
from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.records import DafnyTask


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
        self.loop = asyncio.new_event_loop()
        self.client = VllmClient(config)
        self.loop.run_until_complete(self.client.start())
        self.usage: list[dict[str, Any]] = []

    def _chat(self, messages: list[dict[str, str]]) -> str:
        result = self.loop.run_until_complete(
            self.client.chat(messages, seed=self.seed, stop=self.prompts.stop, **self.sampling)
        )
        self.usage.append(
            {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens}
        )
        return result.text

    def propose(self, messages: list[dict[str, str]]) -> str:
        """One free-form answer (the llm source's program proposals)."""
        return self._chat(messages)

    def write(self, task: DafnyTask) -> str:
        shots = self.shots.get("writer")
        return self._chat(prompts.messages(task, "writer", shots=shots, config=self.prompts))

    def annotate(self, task: DafnyTask, body: str) -> str:
        shots = self.shots.get("annotator")
        return self._chat(
            prompts.messages(task, "annotator", body, shots=shots, config=self.prompts)
        )

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())
        self.loop.close()

    def __enter__(self) -> VllmTeacher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
