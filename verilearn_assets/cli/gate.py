"""`verilearn gate`: run every family's blocking checks headless; exit 1 naming each failure.

The evaluations are the asset checks' own code (`gate.registry.evaluate`), and each one is
recorded in the Dagster instance on its partition under one run id per invocation, so the
UI and the training gate see exactly what this command saw, and the command can be run
any number of times. It ends by asking the training gate (`gate.training_gate`) what
training would now see on each split it evaluated.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from verilearn_assets.core.records import SOURCES, SPLITS

EXAMPLES = {"gate": "verilearn gate --family analysis --splits dev"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gate",
        help="run the blocking checks of every family on every materialized partition; "
        "exit 1 naming each failure",
        description="Run every family's blocking checks (the rules the asset checks run) on "
        "every materialized task and rollout partition, record each verdict in the Dagster "
        "instance, and exit 1 naming each failing check and partition.",
    )
    p.add_argument("--family", nargs="+", default=None, help="only these families")
    p.add_argument("--sources", nargs="+", default=list(SOURCES), choices=list(SOURCES))
    p.add_argument("--splits", nargs="+", default=list(SPLITS), choices=list(SPLITS))
    p.add_argument(
        "--evidence",
        default=None,
        metavar="FILE",
        help="write the training gate's evidence record of each split evaluated (which "
        "checks, partitions and evaluations it read) to FILE as JSON",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from resources.container_pool import ContainerPoolResource
    from verilearn_assets.cli import CliError
    from verilearn_assets.cli.orchestrate import instance_for_home
    from verilearn_assets.core import lake
    from verilearn_assets.core.family import families
    from verilearn_assets.core.partitions import partition_key
    from verilearn_assets.gate.adapter import (
        check_key,
        new_gate_run_id,
        outcome_result,
        record_evaluation,
    )
    from verilearn_assets.gate.registry import evaluate, partition_present
    from verilearn_assets.gate.training_gate import training_gate

    known = families()
    unknown = [f for f in args.family or [] if f not in known]
    if unknown:
        raise CliError(f"unknown family {unknown[0]!r} (known: {', '.join(known)})")
    home = lake.home()
    instance = instance_for_home(home)
    pool = ContainerPoolResource()
    run_id = new_gate_run_id()
    ran = 0
    failures: list[str] = []
    gated: dict[str, list[str]] = {}  # split -> the families evaluated on it
    for name, fam in known.items():
        if args.family and name not in args.family:
            continue
        for source in args.sources:
            for split in args.splits:
                present = {
                    which: partition_present(fam, which, source, split, home)
                    for which in ("tasks", "rollouts")
                }
                if not present["tasks"]:
                    continue
                ran += 1
                gated.setdefault(split, [])
                if name not in gated[split]:
                    gated[split].append(name)
                key = str(partition_key(source, split))
                print(f"gate {name} [{key}]:")
                for rule in fam.rules:
                    if not present[rule.on]:
                        print(
                            f"  {rule.name}: skipped ({fam.asset_lake(rule.on)} not materialized)"
                        )
                        continue
                    outcome = evaluate(
                        fam, rule, source, split, home, pool if rule.needs_pool else None
                    )
                    result = outcome_result(outcome)
                    record_evaluation(instance, check_key(fam, rule), key, result, run_id)
                    status = "ok" if outcome.passed else "FAILED"
                    print(f"  {rule.name}: {status} — {result.description}")
                    if not outcome.passed:
                        failures.append(
                            f"{rule.name} on {fam.asset_lake(rule.on)} [{key}]: "
                            f"{result.description}"
                        )
    if ran == 0:
        raise CliError(
            f"no task partition of any family under {lake.lake_root(home)}: run "
            "`verilearn demo` (or materialize a family's tasks) first"
        )
    # what training now sees: the training gate reads back the verdicts just recorded
    records = []
    for split, names in gated.items():
        record = training_gate(instance, split, names, args.sources)
        records.append(record.model_dump(mode="json"))
        verdict = "open" if record.open else f"closed ({len(record.reasons)} reason(s))"
        print(f"training gate [{split}] for {', '.join(names)}: {verdict}")
    if args.evidence:
        Path(args.evidence).write_text(json.dumps(records, indent=2) + "\n")
    if failures:
        print(f"\n{len(failures)} failing check(s):")
        for f in failures:
            print(f"  - {f}")
        return 1
    print(f"\nall blocking checks passed on {ran} partition(s) (gate run {run_id})")
    return 0
