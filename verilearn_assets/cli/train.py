"""`verilearn train sft|grpo`: train on the gated data, through the same code as the assets.

`train sft` asks the Dagster instance the same question `sft_model` asks (was
`sft_dataset[split]` materialized, and did every blocking check on it pass on its latest
materialization?) and exits 2 naming the reason when not; then it calls `train_sft`, the
function the asset calls, with a progress bar. `train grpo` asks `training_data_gate` on
`grpo_tasks` (the `grpo_model` asset's question) and calls `train_grpo` likewise.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from verilearn_assets.core.records import SPLITS

EXAMPLES = {
    "train sft": "verilearn train sft --max-steps 20",
    "train grpo": "verilearn train grpo --family dafny --role writer --max-steps 10",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train a model on the gated data (SFT, GRPO)",
        description="Train on the gated data (configs/training.yaml): refused, naming the "
        "reason, unless sft_dataset's blocking checks passed. Each run writes "
        "$VERILEARN_HOME/runs/<stage>-<time>-<id>/ (config, metrics, plots, model).",
    )
    stages = p.add_subparsers(dest="stage", required=True)
    for stage, helptext in (
        (
            "sft",
            "SFT (TRL SFTTrainer; sft.method lora or full) on sft_dataset[split]; "
            "merged model dir by default",
        ),
        ("grpo", "GRPO (TRL GRPOTrainer) from the latest SFT model, with verifier rewards"),
    ):
        s = stages.add_parser(stage, help=helptext)
        s.add_argument(
            "--config",
            type=Path,
            default=None,
            help="training YAML (default: configs/training.yaml)",
        )
        s.add_argument("--max-steps", type=int, default=None, help="override the step count")
        s.add_argument(
            "--split",
            default=None,
            choices=list(SPLITS),
            help="split to train on (default: the config's, normally train)",
        )
        if stage == "sft":
            s.add_argument(
                "--roles",
                default=None,
                metavar="ROLE[,ROLE]",
                help="train only rows of these roles, comma-separated (e.g. dafny's writer); "
                "overrides sft.roles (default: the config's, null = every role)",
            )
        if stage == "grpo":
            s.add_argument("--family", default=None, help="family to train (default: config)")
            s.add_argument(
                "--role",
                default=None,
                help="role to train, e.g. dafny's writer or annotator (default: config, "
                "else the family's first GRPO role)",
            )
            s.add_argument(
                "--resume",
                default=None,
                metavar="RUN_ID|latest",
                help="continue an interrupted run from its latest checkpoint (its own "
                "config.yaml; needs grpo.save_steps), in its own run directory",
            )
        s.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from verilearn_assets.cli import CliError
    from verilearn_assets.core import lake
    from verilearn_assets.core.config import ConfigError
    from verilearn_assets.training.config import load_training_config

    console = Console()
    try:
        config = load_training_config(args.config)
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    if args.split:
        config = config.model_copy(update={"split": args.split})
    if getattr(args, "roles", None) is not None:
        config = _with_roles(config, args.roles)
    if args.max_steps is not None and args.max_steps < 1:
        raise CliError(f"--max-steps must be >= 1, got {args.max_steps}")
    home = lake.home()
    if args.stage == "sft":
        run_ = _sft(config, home, args, console)
    else:
        run_ = _grpo(config, home, args, console)
    loss = f"{run_.final_loss:.4f}" if run_.final_loss is not None else "n/a"
    console.print(
        f"{args.stage} run {run_.run_id}: {run_.steps} steps, final loss {loss}, "
        f"{run_.rows_used} rows used ({run_.rows_truncated} truncated, "
        f"{run_.rows_dropped} dropped)",
        markup=False,
    )
    console.print(f"run dir: {run_.run_dir}", markup=False)
    kind = "model" if run_.merged else "adapter (serve the base with --enable-lora)"
    console.print(f"{kind}: {run_.model_dir}", markup=False)
    return 0


def _with_roles(config: Any, roles: str) -> Any:
    """`config` with `sft.roles` from `--roles a,b`, validated as the YAML field is."""
    from pydantic import ValidationError

    from verilearn_assets.cli import CliError

    names = [r.strip() for r in roles.split(",")]
    try:
        sft = type(config.sft).model_validate({**config.sft.model_dump(), "roles": names})
    except ValidationError as exc:
        msg = "; ".join(e["msg"] for e in exc.errors())
        raise CliError(f"--roles {roles!r}: {msg}") from exc
    return config.model_copy(update={"sft": sft})


def _sft(config: Any, home: Path, args: argparse.Namespace, console: Any) -> Any:
    from verilearn_assets.cli import CliError
    from verilearn_assets.cli.orchestrate import instance_for_home
    from verilearn_assets.training.sft.assets import gate_evidence, training_data_gate
    from verilearn_assets.training.sft.trainer import train_sft

    instance = instance_for_home(home)
    reasons = training_data_gate(instance, home, config.split, config).reasons
    if reasons:
        raise CliError(
            f"sft_dataset [{config.split}] is not trainable: the gate did not pass: "
            + " | ".join(reasons)
        )
    evidence = gate_evidence(instance, home, config.split)
    with _bar(console, f"sft [{config.split}]") as progress:
        return train_sft(
            config, home, max_steps=args.max_steps, progress=progress, evidence=evidence
        )


def _grpo(config: Any, home: Path, args: argparse.Namespace, console: Any) -> Any:
    from verilearn_assets.cli import CliError
    from verilearn_assets.cli.orchestrate import instance_for_home
    from verilearn_assets.training.grpo.assets import grpo_tasks
    from verilearn_assets.training.grpo.trainer import train_grpo
    from verilearn_assets.training.sft.assets import gate_evidence, training_data_gate

    instance = instance_for_home(home)
    tasks = grpo_tasks(config, args.family)
    reasons = training_data_gate(instance, home, config.split, config, tasks).reasons
    if reasons:
        raise CliError(
            f"GRPO on split {config.split!r} refused: the gate did not pass: " + " | ".join(reasons)
        )
    evidence = gate_evidence(instance, home, config.split)  # used when starting from base
    with _bar(console, f"grpo [{config.split}]") as progress:
        return train_grpo(
            config,
            home,
            family=args.family,
            role=args.role,
            max_steps=args.max_steps,
            progress=progress,
            evidence=evidence,
            resume=args.resume,
        )


class _bar:
    """A rich progress bar fed by the trainers' `progress(step, total, logs)` callback."""

    def __init__(self, console: Any, label: str) -> None:
        from verilearn_assets.cli.progress import progress_bar

        self.label = label
        self.progress = progress_bar(console)
        self.task: Any = None

    def __enter__(self) -> _bar:
        self.progress.__enter__()
        self.task = self.progress.add_task(self.label, total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)

    def __call__(self, step: int, total: int, logs: dict[str, Any]) -> None:
        loss = logs.get("loss")
        text = f"{self.label} loss {loss:.4f}" if isinstance(loss, int | float) else self.label
        self.progress.update(
            self.task,
            completed=step,
            total=total if total and total > 0 else None,
            description=text,
        )
