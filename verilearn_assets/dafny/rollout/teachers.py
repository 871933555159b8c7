"""Which teacher drives the cascade: `program` replays the gold answers, `vllm` asks a
served model (the trajectories asset and the GRPO frozen partners both pick one here)."""

from __future__ import annotations

from collections.abc import Sequence

from verilearn_assets.core.llm.config import VllmConfig
from verilearn_assets.dafny.prompts import few_shot_pairs, load_prompt_config
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.rollout.cascade import ProgramTeacher, Teacher
from verilearn_assets.dafny.rollout.vllm_teacher import VllmTeacher


def teacher_for(
    name: str,
    vllm_config: VllmConfig | None = None,
    train_tasks: Sequence[DafnyTask] = (),
) -> Teacher:
    """`program` (replays gold) or `vllm` (the served model of configs/vllm.yaml, prompted
    per configs/dafny_prompts.yaml with few-shot pairs from `train_tasks`)."""
    if name == "program":
        return ProgramTeacher()
    if name == "vllm":
        if vllm_config is None or not vllm_config.has_server:
            raise ValueError(
                "configs/dafny.yaml: teacher 'vllm' needs a server (configs/vllm.yaml base_urls)"
            )
        cfg = load_prompt_config()
        shots = {
            role: few_shot_pairs(
                [t for t in train_tasks if t.role == role], role, cfg.few_shot, cfg.few_shot_seed
            )
            for role in ("writer", "annotator")
        }
        return VllmTeacher(vllm_config, cfg, shots)
    raise ValueError(f"configs/dafny.yaml: unknown teacher {name!r} (program or vllm)")
