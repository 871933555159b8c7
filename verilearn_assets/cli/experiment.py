"""`verilearn experiment run|list|show`: experiment cards from the command line.

`run CARD` trains and evaluates every arm of `configs/experiments/<card>.yaml` (a path or a
card name) through the same code as `verilearn train` and `verilearn eval`: each training
stage is refused, naming the reason, unless the gate passed on the data it trains on (the
question `train sft|grpo` asks). It writes `$VERILEARN_HOME/runs/experiments/<name>-<time>/`
(summary.json, summary.md, plots) and prints the table and the verdict. `--resume`
continues the newest run of the card: finished stages and arms are skipped.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from verilearn_assets.core.records import SPLITS

EXAMPLES = {
    "experiment run": "verilearn experiment run configs/experiments/orm_vs_prm.yaml --limit 20",
    "experiment list": "verilearn experiment list",
    "experiment show": "verilearn experiment show orm_vs_prm",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "experiment",
        help="run an experiment card (arms trained and evaluated, verdict), list, show",
        description="Experiment cards (configs/experiments/*.yaml): a hypothesis, arms that "
        "differ by training-config deltas, one evaluation and a typed success criterion. "
        "Results go to $VERILEARN_HOME/runs/experiments/<name>-<time>/.",
    )
    verbs = p.add_subparsers(dest="verb", required=True)
    r = verbs.add_parser("run", help="train and evaluate every arm, write summary.json/.md")
    r.add_argument("card", help="card file, or a card name under configs/experiments/")
    r.add_argument("--limit", type=int, default=None, help="at most N tasks per split")
    r.add_argument("--arms", default=None, help="comma-separated arms to run (default: all)")
    r.add_argument(
        "--resume",
        action="store_true",
        help="continue the newest run of this card: finished stages and arms are skipped",
    )
    r.add_argument("--max-steps", type=int, default=None, help="steps of every training stage")
    r.add_argument(
        "--split",
        default=None,
        choices=list(SPLITS),
        help="evaluate on this split instead of the card's",
    )
    r.add_argument("--config", type=Path, default=None, help="training YAML (default: the card's)")
    r.set_defaults(handler=run)
    ls = verbs.add_parser("list", help="the experiments run in this home, newest last")
    ls.set_defaults(handler=list_experiments)
    s = verbs.add_parser("show", help="print an experiment's summary.md")
    s.add_argument("experiment", help="a card name (its newest run) or an experiment dir")
    s.set_defaults(handler=show)


def _root(config_path: Path | None = None) -> Path:
    from verilearn_assets.core import lake
    from verilearn_assets.training.config import load_training_config
    from verilearn_assets.training.experiments.runner import experiments_root

    return experiments_root(load_training_config(config_path), lake.home())


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from verilearn_assets.cli import CliError
    from verilearn_assets.core import lake
    from verilearn_assets.core.config import ConfigError
    from verilearn_assets.training.config import load_training_config
    from verilearn_assets.training.experiments.card import load_card, resolve_card_path
    from verilearn_assets.training.experiments.runner import run_card
    from verilearn_assets.training.experiments.summary import markdown

    for flag in ("limit", "max_steps"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise CliError(f"--{flag.replace('_', '-')} must be >= 1, got {value}")
    arms = [a.strip() for a in args.arms.split(",") if a.strip()] if args.arms else None
    if args.arms is not None and not arms:
        raise CliError("--arms names no arm")
    try:
        base = load_training_config(args.config) if args.config else None
        path = resolve_card_path(args.card)
        card = load_card(path, base)
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    home = lake.home()
    console = Console()
    console.print(f"experiment {card.name}: {card.hypothesis.strip()}", markup=False)
    done = run_card(
        path,
        home,
        base=base,
        limit=args.limit,
        arms=arms,
        resume=args.resume,
        max_steps=args.max_steps,
        splits=[args.split] if args.split else None,
        gate=_gate(home),
        progress=lambda arm, what: console.print(f"[{arm}] {what}", markup=False),
    )
    console.print(markdown(done.summary), markup=False, soft_wrap=True)  # a table: no wrap
    if done.skipped:
        console.print(f"skipped (complete): {', '.join(done.skipped)}", markup=False)
    console.print(f"experiment dir: {done.dir}", markup=False)
    return 0


def _gate(home: Path) -> Any:
    """The gate question `verilearn train sft|grpo` asks, per arm stage; refuses by raising."""
    from verilearn_assets.cli import CliError
    from verilearn_assets.cli.orchestrate import instance_for_home
    from verilearn_assets.training.grpo.assets import grpo_tasks
    from verilearn_assets.training.sft.assets import gate_evidence, training_data_gate

    instance = instance_for_home(home)

    def gate(stage: str, config: Any) -> Any:
        tasks = None if stage == "sft" else grpo_tasks(config)
        reasons = training_data_gate(instance, home, config.split, config, tasks).reasons
        if reasons:
            raise CliError(
                f"{stage} on split {config.split!r} refused: the gate did not pass: "
                + " | ".join(reasons)
            )
        return gate_evidence(instance, home, config.split)

    return gate


def list_experiments(args: argparse.Namespace) -> int:
    import json

    from verilearn_assets.training.experiments.runner import experiment_dirs

    root = _root()
    dirs = experiment_dirs(root)
    if not dirs:
        print(f"no experiment under {root} (run one: verilearn experiment run CARD)")
        return 0
    for d in dirs:
        summary = d / "summary.json"
        verdict = "no summary yet"
        if summary.is_file():
            verdict = json.loads(summary.read_text())["verdict"]["verdict"]
        arms = sorted(p.name for p in (d / "arms").glob("*") if (p / "state.json").is_file())
        print(f"{d.name}\tarms {','.join(arms) or '-'}\tverdict: {verdict}\t{d}")
    return 0


def show(args: argparse.Namespace) -> int:
    from verilearn_assets.cli import CliError
    from verilearn_assets.training.experiments.runner import experiment_dirs

    given = Path(args.experiment)
    root = _root()
    if given.is_dir():
        target = given
    elif (root / args.experiment).is_dir():
        target = root / args.experiment
    else:
        runs = experiment_dirs(root, args.experiment)
        if not runs:
            raise CliError(f"{args.experiment}: no experiment dir, nor a card run under {root}")
        target = runs[-1]
    md = target / "summary.md"
    if not md.is_file():
        raise CliError(f"{target}: no summary.md (the run did not finish; --resume it)")
    print(md.read_text(), end="")
    print(f"dir: {target}")
    return 0
