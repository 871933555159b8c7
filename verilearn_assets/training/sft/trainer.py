"""Supervised fine-tuning on the gated rows: TRL `SFTTrainer`, with a PEFT LoRA adapter
(`sft.method: lora`) or on every weight (`sft.method: full`); no dagster.

The asset (`sft_model`) and the CLI (`verilearn train sft`) both call `train_sft`, so a model
trained from the command line is the one the UI would have produced. Loss is on assistant
tokens only (the chat template's `{% generation %}` spans, end-of-turn token included).
Device and precision come from training.yaml `device`/`dtype`/`device_map`
(`training/device.py`): on CPU bf16 stays off (TRL turns it on by default; this CPU has
none, a step gets ~7× slower) and `use_cpu` keeps accelerate from looking for a GPU; on a
GPU, bfloat16 where supported.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from verilearn_assets.core import lake
from verilearn_assets.core.family import SftRow, families
from verilearn_assets.training.config import TrainingConfig
from verilearn_assets.training.device import placement, trainer_placement
from verilearn_assets.training.run_dir import (
    GateEvidence,
    RunDir,
    RunResult,
    TrainRun,
    metrics_callback,
    tool_versions,
)
from verilearn_assets.training.sft.data import (
    WeightedSelection,
    apply_weights,
    load_sft_rows,
    select_mixture,
    sft_partition_dir,
    to_dataset,
)
from verilearn_assets.training.sft.trainability import (
    PreparedRows,
    apply_cpu_threads,
    has_generation_markers,
    load_tokenizer,
    lora_config,
    prepare_rows,
)

Progress = Callable[[int, int, dict[str, Any]], None]


class NothingToTrain(ValueError):
    """The mixture and the length rule left no row to train on."""


def sft_rows_and_evidence(
    config: TrainingConfig, rows_or_home: list[SftRow] | Path | str, evidence: GateEvidence | None
) -> tuple[list[SftRow], Path | None, GateEvidence | None]:
    """Step 1: the rows (given, or read from a home's `sft_dataset[split]`, which also gives
    the evidence when the caller passed none) and the home they came from."""
    split = config.split
    if not isinstance(rows_or_home, str | Path):
        return list(rows_or_home), None, evidence
    home = Path(rows_or_home)
    rows = load_sft_rows(home, split)
    if evidence is None:
        evidence = GateEvidence(
            split=split,
            partition_path=str(sft_partition_dir(home, split)),
            rows_in_partition=len(rows),
            rows_used=0,
        )
    return rows, home, evidence


def chat_tokenizer(base: Path) -> Any:
    """Step 2: the base model's tokenizer, whose chat template must mark the assistant's
    tokens (`{% generation %}`): the loss is on them only."""
    tokenizer = load_tokenizer(base)
    if not has_generation_markers(tokenizer.chat_template):
        raise ValueError(
            f"{base}: chat template has no {{% generation %}} markers; assistant-only loss "
            "needs them (rebuild the tiny model with `make tiny-model`)"
        )
    return tokenizer


def training_rows(
    config: TrainingConfig, tokenizer: Any, rows: list[SftRow]
) -> tuple[WeightedSelection, PreparedRows]:
    """Step 3: the mixture and `sft.roles` admit rows, weights draw them, the tokenizer
    renders and fits them to `max_seq_length`; raises `NothingToTrain` when none is left."""
    split, sft = config.split, config.sft
    selection = apply_weights(select_mixture(rows, config.mixture, split, sft.roles), sft)
    prep = prepare_rows(tokenizer, selection.rows, sft)
    if prep.errors:
        raise ValueError(f"sft_dataset [{split}]: rows do not render: {prep.errors[:3]}")
    if not prep.conversations:
        raise NothingToTrain(
            f"sft_dataset [{split}]: no row left to train on ({len(rows)} rows, "
            f"{selection.candidates} admitted by sft.roles and the mixture, "
            f"{len(selection.rows)} drawn, "
            f"{len(prep.dropped_too_long_ids)} too long, "
            f"{len(prep.dropped_no_assistant_ids)} without an assistant turn)"
        )
    return selection, prep


def open_run(config: TrainingConfig, home: Path, rows: list[SftRow]) -> RunDir:
    """Step 4: the run directory with its config, seeds and system (the tools the rows'
    families use, `Family.tool_versions`)."""
    sft = config.sft
    run = RunDir.create(config, home, "sft")
    run.write_config(config)
    seeds = {"lora_init_seed": sft.seed} if sft.method == "lora" else {}
    run.write_seeds(seed=sft.seed, data_seed=sft.seed, **seeds)
    known = families()
    run.write_system(
        tool_versions(known[n] for n in sorted({r.family for r in rows}) if n in known)
    )
    return run


def save_model(config: TrainingConfig, trainer: Any, tokenizer: Any, run: RunDir) -> Path:
    """Step 6: the trained weights (full), the merged model or the adapter, and the
    tokenizer with the base model's length; returns the directory written."""
    sft = config.sft
    if sft.method == "full":  # the trained weights are the model (config forbids merge: false)
        model_dir = run.model_dir
        trainer.model.save_pretrained(str(model_dir))
    elif sft.merge:
        model_dir = run.model_dir
        merged = trainer.model.merge_and_unload()
        merged.save_pretrained(str(model_dir))
    else:
        model_dir = run.adapter_dir
        trainer.model.save_pretrained(str(model_dir))
    tokenizer.model_max_length = _base_max_length(config.base_model_dir())
    tokenizer.save_pretrained(str(model_dir))
    return model_dir


def sft_plots(run: RunDir) -> list[Path]:
    return run.plots(
        [
            (["loss"], "loss", "SFT loss"),
            (["learning_rate"], "learning_rate", "SFT learning rate"),
        ]
    )


def sft_result(
    config: TrainingConfig,
    run: RunDir,
    model_dir: Path,
    rows: list[SftRow],
    selection: WeightedSelection,
    prep: PreparedRows,
    out: Any,
    final: float | None,
    seconds: float,
    placed: dict[str, Any],
    evidence: GateEvidence | None,
) -> RunResult:
    """Step 7: result.json's record of the run, the evidence counting the rows used."""
    sft = config.sft
    if evidence is not None:
        evidence = evidence.model_copy(
            update={
                "rows_used": len(prep.conversations),
                "rows_truncated": len(prep.truncated_ids),
                "rows_dropped": len(prep.dropped_too_long_ids) + len(prep.dropped_no_assistant_ids),
            }
        )
    return RunResult(
        run_id=run.run_id,
        kind="sft",
        model_dir=str(model_dir),
        merged=sft.merge,
        base_model=str(config.base_model_dir()),
        steps=int(out.global_step),
        final_loss=final,
        train_seconds=round(seconds, 3),
        evidence=evidence,
        extra={
            "rows_in_split": len(rows),
            "rows_admitted": selection.candidates,
            "tasks": selection.tasks,
            "rows_drawn": len(selection.rows),
            "rows_used": len(prep.conversations),
            "rows_truncated": len(prep.truncated_ids),
            "rows_compressed": len(prep.compressed_ids),
            "compressed_tokens_removed": prep.tokens_removed,
            "rows_dropped_too_long": len(prep.dropped_too_long_ids),
            "rows_dropped_no_assistant": len(prep.dropped_no_assistant_ids),
            "roles": sft.roles,  # None: every role
            "method": sft.method,
            "weighting": sft.weighting,
            "truncation": sft.truncation,
            "placement": placed,
        },
    )


def train_sft(
    config: TrainingConfig,
    rows_or_home: list[SftRow] | Path | str,
    *,
    home: Path | None = None,
    max_steps: int | None = None,
    progress: Progress | None = None,
    evidence: GateEvidence | None = None,
) -> TrainRun:
    """Train on `config.split`'s rows (a LoRA adapter, merged or kept, or all weights with
    `sft.method: full`, saved as a normal model dir); fill a RunDir:

    1. the rows and their gate evidence (`sft_rows_and_evidence`);
    2. the base model's tokenizer, checked for assistant markers (`chat_tokenizer`);
    3. the rows admitted, drawn and fitted to the window (`training_rows`);
    4. the run directory (`open_run`);
    5. TRL's SFTTrainer trains (`_trainer`);
    6. the model saved (`save_model`);
    7. plots and result.json with the evidence (`sft_result`).

    `rows_or_home` is either the rows themselves or a home whose `sft_dataset[split]` is read.
    Runs go under `config.runs_root(home)` (`home` defaults to the given home or
    `$VERILEARN_HOME`). `max_steps` overrides `sft.max_steps` (the CLI's `--max-steps`).
    """
    rows, rows_home, evidence = sft_rows_and_evidence(config, rows_or_home, evidence)
    home = rows_home or (Path(home) if home is not None else lake.home())
    tokenizer = chat_tokenizer(config.base_model_dir())
    selection, prep = training_rows(config, tokenizer, rows)
    run = open_run(config, home, rows)

    steps = max_steps if max_steps is not None else config.sft.max_steps
    trainer = _trainer(config, tokenizer, to_dataset(prep.conversations), run, steps, progress)
    placed = trainer_placement(trainer)
    started = time.monotonic()
    out = trainer.train()
    seconds = time.monotonic() - started

    model_dir = save_model(config, trainer, tokenizer, run)
    metrics = run.read_metrics()
    losses = [float(m["loss"]) for m in metrics if isinstance(m.get("loss"), int | float)]
    final = losses[-1] if losses else _finite(out.training_loss)
    plots = sft_plots(run)
    result = sft_result(
        config, run, model_dir, rows, selection, prep, out, final, seconds, placed, evidence
    )
    run.write_result(result)
    return TrainRun(
        run_id=run.run_id,
        run_dir=run.path,
        model_dir=model_dir,
        merged=config.sft.merge,
        steps=int(out.global_step),
        final_loss=final,
        losses=losses,
        rows_used=len(prep.conversations),
        rows_truncated=len(prep.truncated_ids),
        rows_dropped=len(prep.dropped_too_long_ids) + len(prep.dropped_no_assistant_ids),
        plots=plots,
        result=result,
    )


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def _base_max_length(base: Path) -> int:
    """The base tokenizer's own limit (load_tokenizer lifts it for counting)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(base)).model_max_length


def _trainer(
    config: TrainingConfig,
    tokenizer: Any,
    dataset: Any,
    run: RunDir,
    max_steps: int,
    progress: Progress | None,
) -> Any:
    import torch
    from transformers import AutoModelForCausalLM, PrinterCallback
    from trl import SFTConfig, SFTTrainer

    sft = config.sft
    torch.manual_seed(sft.seed)
    apply_cpu_threads(sft)
    where = placement(config)
    args = SFTConfig(
        output_dir=str(run.checkpoints),
        assistant_only_loss=True,
        max_length=sft.max_seq_length,
        packing=False,
        **where.trainer_args(),
        report_to=[],
        learning_rate=sft.learning_rate,
        lr_scheduler_type=sft.lr_scheduler_type,
        warmup_steps=sft.warmup_ratio,  # a float below 1 is a fraction of the steps
        weight_decay=sft.weight_decay,
        per_device_train_batch_size=sft.per_device_train_batch_size,
        gradient_accumulation_steps=sft.gradient_accumulation_steps,
        num_train_epochs=sft.num_train_epochs,
        max_steps=max_steps,
        logging_steps=sft.logging_steps,
        save_strategy="steps" if sft.save_steps else "no",
        save_steps=sft.save_steps or 500,
        seed=sft.seed,
        data_seed=sft.seed,
        gradient_checkpointing=sft.gradient_checkpointing,
        include_num_input_tokens_seen="non_padding",
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    model = AutoModelForCausalLM.from_pretrained(
        str(config.base_model_dir()), **where.load_kwargs()
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora_config(sft) if sft.method == "lora" else None,
        callbacks=[metrics_callback(run, progress)],
    )
    trainer.remove_callback(PrinterCallback)  # metrics go to metrics.jsonl / the progress bar
    return trainer
