"""`verilearn eval`: a model on a split's tasks of one family and role (the `model_eval` code).

Serves the model (a model or adapter directory is launched on vLLM; a name is looked up on
the servers of configs/vllm.yaml). A family with its own evaluation (analysis, the default:
the teacher loop on each question in the sandbox) runs it; any other family gets one greedy
completion per task, judged by its verifier (`--family dafny --role writer|annotator`,
`--family refactor`). Writes the records to the lake and prints the pass rate and the
per-template (group) table. A trained
model whose run shows no gated training data, or whose data does not pass the gate in this
home's Dagster instance now, is refused as the asset refuses it (`training_data_gate`); so is
a model outside any run that is not the base model or listed in eval.baselines.
`--n N [--temperature T]` answers each task N times and prints pass@k and pass^k for every
k <= N (`training/eval/pass_at_k.py`; the counts go to the lake and `mart_model_pass_rate`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from verilearn_assets.core.records import SPLITS

EXAMPLES = {"eval": "verilearn eval --model .verilearn/runs/sft-<id>/model --split test --limit 20"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="evaluate a model (dir or served name) as the student on a split's questions",
        description="Evaluate a model on a split's tasks of one family and role (the "
        "model_eval asset's code): serve it on vLLM, run each task as the student, and write "
        "one record per task to the lake (mart_model_pass_rate; `verilearn report --models`).",
    )
    p.add_argument("--model", required=True, help="model or LoRA adapter dir, or a served name")
    p.add_argument("--split", required=True, choices=list(SPLITS), help="split to evaluate on")
    p.add_argument(
        "--family",
        default=None,
        help="task family to evaluate on (default: the first registered family, analysis)",
    )
    p.add_argument(
        "--role",
        default=None,
        help="the family's role (dafny: writer|annotator|cascade; default: the first)",
    )
    p.add_argument("--limit", type=int, default=None, help="at most N questions (tasks)")
    p.add_argument(
        "--questions", default=None, help="comma-separated question (task) ids (only these)"
    )
    p.add_argument(
        "--n",
        type=int,
        default=None,
        help="completions per task, for pass@k and pass^k (default: eval.n_best, else the "
        "family's; the first one is the verdict)",
    )
    p.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="sampling temperature of all n completions (i.i.d. samples; default: the "
        "verdict greedy, the others at eval.n_best_temperature)",
    )
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
    from verilearn_assets.training.eval.evaluator import evaluate_model
    from verilearn_assets.training.eval.evidence import UngatedModel, gate_evidence
    from verilearn_assets.training.eval.request import EvalRequest
    from verilearn_assets.training.eval.serving import resolve_model

    if args.limit is not None and args.limit < 1:
        raise CliError(f"--limit must be >= 1, got {args.limit}")
    if args.n is not None and args.n < 1:
        raise CliError(f"--n must be >= 1, got {args.n}")
    if args.temperature is not None and args.temperature < 0:
        raise CliError(f"--temperature must be >= 0, got {args.temperature}")
    ids = [q.strip() for q in args.questions.split(",") if q.strip()] if args.questions else None
    if args.questions is not None and not ids:
        raise CliError("--questions names no question id")
    try:
        config = load_training_config(args.config)
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    family_name, role = _family_role(args.family, args.role)
    try:
        mut = resolve_model(args.model)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    try:
        evidence = gate_evidence(
            mut, base_model=config.base_model_dir(), baselines=config.eval.baselines
        )
    except UngatedModel as exc:
        raise CliError(f"refusing {mut.name}: {exc}") from exc
    if evidence is not None:
        from verilearn_assets.cli.orchestrate import instance_for_home
        from verilearn_assets.training.eval.assets import learned_tasks
        from verilearn_assets.training.sft.assets import training_data_gate

        home = lake.home()
        instance = instance_for_home(home)
        tasks = learned_tasks(evidence)
        reasons = training_data_gate(instance, home, evidence.split, config, tasks).reasons
        if reasons:
            raise CliError(
                f"refusing {mut.name}: its training data does not pass the gate: "
                + "; ".join(reasons)
            )
    settings = config.eval
    if args.temperature is not None:  # every completion sampled alike: i.i.d. for pass@k
        t = args.temperature
        settings = settings.model_copy(update={"temperature": t, "n_best_temperature": t})
    if args.n is not None:
        settings = settings.model_copy(update={"n_best": args.n})
    console = Console()
    kind = "baseline (no training run)" if evidence is None else f"trained (run {mut.name})"
    what = family_name if role == "default" else f"{family_name}/{role}"
    console.print(f"evaluating {mut.name} — {kind} — on {what} [{args.split}]", markup=False)
    bar = progress_bar(console)
    with bar:
        task = bar.add_task(f"eval {what} [{args.split}] (serving {mut.name})", total=None)
        result = evaluate_model(
            EvalRequest(
                model=args.model,
                split=args.split,
                home=lake.home(),
                limit=args.limit,
                task_ids=ids,
                settings=settings,
                progress=lambda done, total: bar.update(
                    task, completed=done, total=total, description=f"eval {what} [{args.split}]"
                ),
                family=family_name,
                role=role,
            )
        )
    s = result.summary()
    scores = ", ".join(f"{k} {v}" for k, v in result.extra_means().items())
    console.print(
        f"{s['model']} on {what} [{s['split']}]: {s['passed']}/{s['questions']} passed "
        f"(pass rate {s['pass_rate']:.1%}), format-error rate {s['format_error_rate']:.1%}, "
        f"mean turns {s['mean_turns']}, mean completion tokens {s['mean_completion_tokens']}, "
        f"mean latency {s['mean_latency_ms']:.0f} ms; failures {s['failures']}",
        markup=False,
    )
    if scores:
        console.print(f"scores: {scores}", markup=False)
    console.print(result.pass_k_line(), markup=False)
    console.print(result.template_markdown(), markup=False)
    console.print(f"records: {result.lake_path}", markup=False)
    return 0


def _family_role(family_name: str | None, role: str | None) -> tuple[str, str]:
    """The family (default: the first registered) and role to evaluate (default: the
    family's first evaluation role, `Family.eval_roles` or its grpo roles)."""
    from verilearn_assets.cli import CliError
    from verilearn_assets.core.family import families
    from verilearn_assets.training.eval.single_turn import eval_roles
    from verilearn_assets.training.families import default_family

    known = families()
    family_name = family_name or default_family()
    if family_name not in known:
        raise CliError(f"--family {family_name!r} unknown (known: {', '.join(known)})")
    fam = known[family_name]
    if fam.evaluation is None and fam.grpo is None:
        raise CliError(f"--family {family_name}: no grpo hook (prompts and scorer) to evaluate")
    roles = eval_roles(fam)
    if role is None:
        return family_name, roles[0]
    if role not in roles:
        raise CliError(f"--role {role!r}: family {family_name} has roles {', '.join(roles)}")
    return family_name, role
