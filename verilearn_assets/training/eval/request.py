"""`EvalRequest`: one evaluation as the caller asks for it (the `model_eval` asset,
`verilearn eval`, an experiment arm, a test), validated once at the boundary.

Which family and role, which model, which tasks, how it is sampled and served; the
evaluator (`evaluator.evaluate_model`) resolves the rest: the family from the registry,
n-best from the request, else `settings`, else the family's default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verilearn_assets.core.evaluation import Progress
from verilearn_assets.core.llm.config import VllmConfig
from verilearn_assets.training.eval.config import EvalSettings
from verilearn_assets.training.families import default_family


class EvalRequest(BaseModel):
    """What to evaluate and how.

    - `model`: a model or LoRA adapter directory (launched on vLLM for the run) or a model
      name served by configs/vllm.yaml's base_urls;
    - `family` (None: `default_family()`) and `role` of the tasks, `split`, and optionally
      `task_ids` (only these, in this order) and `limit` (None: `settings.limit`);
    - `settings`: the `eval:` section of configs/training.yaml (None: its defaults);
      `n_best`/`n_best_temperature` override its pass@k knobs;
    - `vllm_cfg` (None: configs/vllm.yaml) launches or finds the model; `served` is a
      client config for a server already serving it under its name (the caller owns it);
    - `source`: a `CompletionSource` answering in place of a served model (single-turn
      families; tests use a scripted one);
    - `options`: the family's own evaluation overrides (analysis: `teacher`, `sandbox`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", frozen=True)

    model: str | Path
    split: str
    home: Path
    family: str | None = None
    role: str = "default"
    limit: int | None = None
    task_ids: list[str] | None = None
    progress: Progress | None = None
    settings: EvalSettings = Field(default_factory=EvalSettings)
    vllm_cfg: VllmConfig | None = None
    served: VllmConfig | None = None
    source: Any | None = None  # a single_turn.CompletionSource
    n_best: int | None = None
    n_best_temperature: float | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    def family_name(self) -> str:
        return self.family or default_family()
