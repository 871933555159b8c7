"""`verilearn eval`: a model as the student on a split's questions (the `model_eval` code).

Serves the model (a model or adapter directory is launched on vLLM; a name is looked up on
the servers of configs/vllm.yaml), runs the teacher loop on each question in the sandbox,
writes the records to the lake and prints the pass rate and the per-template table. A
trained model whose run shows no gated training data is refused, as the asset refuses it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from verilearn_assets.core.records import SPLITS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="evaluate a model (dir or served name) as the student on a split's questions",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("--model", required=True, help="model or LoRA adapter dir, or a served name")
    p.add_argument("--split", required=True, choices=list(SPLITS), help="split to evaluate on")
    p.add_argument("--limit", type=int, default=None, help="at most N questions")
    p.add_argument("--questions", default=None, help="comma-separated question ids (only these)")
    p.add_argument(
        "--config", type=Path, default=None, help="training YAML (default: configs/training.yaml)"
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from verilearn_assets.cli import CliError
    from verilearn_assets.cli.progress import progress_bar
    from verilearn_assets.core import lake
    from verilearn_assets.core.config import ConfigError
    from verilearn_assets.training.config import load_training_config
    from verilearn_assets.training.evaluate import (
        UngatedModel,
        evaluate_model,
        gate_evidence,
        resolve_model,
    )

    if args.limit is not None and args.limit < 1:
        raise CliError(f"--limit must be >= 1, got {args.limit}")
    ids = [q.strip() for q in args.questions.split(",") if q.strip()] if args.questions else None
    if args.questions is not None and not ids:
        raise CliError("--questions names no question id")
    try:
        config = load_training_config(args.config)
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    mut = resolve_model(args.model)
    try:
        evidence = gate_evidence(mut)
    except UngatedModel as exc:
        raise CliError(f"refusing {mut.name}: {exc}") from exc
    console = Console()
    kind = "baseline (no training run)" if evidence is None else f"trained (run {mut.name})"
    console.print(f"evaluating {mut.name} — {kind} — on {args.split}", markup=False)
    bar = progress_bar(console)
    with bar:
        task = bar.add_task(f"eval [{args.split}] (serving {mut.name})", total=None)
        result = evaluate_model(
            args.model,
            args.split,
            lake.home(),
            limit=args.limit,
            question_ids=ids,
            settings=config.eval,
            progress=lambda done, total: bar.update(
                task, completed=done, total=total, description=f"eval [{args.split}]"
            ),
        )
    s = result.summary()
    console.print(
        f"{s['model']} on {s['split']}: {s['passed']}/{s['questions']} passed "
        f"(pass rate {s['pass_rate']:.1%}), format-error rate {s['format_error_rate']:.1%}, "
        f"mean turns {s['mean_turns']}, mean completion tokens {s['mean_completion_tokens']}, "
        f"mean latency {s['mean_latency_ms']:.0f} ms; failures {s['failures']}",
        markup=False,
    )
    console.print(result.template_markdown(), markup=False)
    console.print(f"records: {result.lake_path}", markup=False)
    return 0
