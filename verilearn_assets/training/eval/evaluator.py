"""Evaluate a model on a split's tasks, any family and role (pure of Dagster).

`evaluate_model(EvalRequest)` serves the model under test on vLLM (launched here from a
model directory, or an existing server named in configs/vllm.yaml) and asks the family
contract how to run it: a family with its own evaluation (`Family.evaluation`, e.g.
analysis's student loop in the sandbox, `core/evaluation.py`) runs that; every other
family (and role) goes through its GRPO hook (`single_turn.py`): one greedy completion
per task, scored by the family's verifier. One `ModelEvalRecord` per task goes to the
lake (`model_eval`, partition `split=<s>`), where `mart_model_pass_rate` puts every
evaluated model side by side. The `model_eval` asset and `verilearn eval` both call
`evaluate_model`, so the CLI's figures are the asset's.

pass@k: with `n_best` > 1 (`eval.n_best`, `verilearn eval --n`), every family answers each
task n times (the first at the evaluation's sampling: the verdict the record keeps; the
others at `n_best_temperature`, seeds `seed + k`); the record's `extra` keeps the counts
(`n_best`, `n_best_passed`) from which `EvalResult.pass_k` and `mart_model_pass_rate` give
pass@k and pass^k (`training/eval/pass_at_k.py`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from verilearn_assets.core.evaluation import EvalJob
from verilearn_assets.core.family import Family, family
from verilearn_assets.core.llm.config import load_vllm_config
from verilearn_assets.training.eval.request import EvalRequest
from verilearn_assets.training.eval.result import EvalResult, write_eval_records
from verilearn_assets.training.eval.serving import resolve_model, serving
from verilearn_assets.training.eval.single_turn import eval_roles, evaluate_family, resolve_n_best


def check_role(fam: Family, role: str) -> None:
    """Refuse a role the family does not evaluate, naming the ones it does."""
    roles = eval_roles(fam)
    if role in roles:
        return
    if len(roles) == 1:
        raise ValueError(f"family {fam.name} has one role, {roles[0]!r} (got {role!r})")
    raise ValueError(f"family {fam.name!r} has no role {role!r} (roles: {', '.join(roles)})")


def evaluate_model(request: EvalRequest) -> EvalResult:
    """Serve `request.model`, run it on the split's accepted tasks of the family in the role,
    write one record per task to the lake and return the summary.

    A family with its own evaluation (`Family.evaluation`) reads and checks its tasks first
    (nothing is served for a split without them), then runs on the served model and raises
    when any task could not be run; any other family goes through its GRPO hook
    (`single_turn.evaluate_family`; `request.source` replaces the served model there).
    """
    fam = family(request.family_name())
    if fam.evaluation is None:
        return evaluate_family(request)
    check_role(fam, request.role)
    if request.source is not None:
        raise ValueError(
            f"{fam.name} runs its own multi-turn evaluation: a completion source "
            "does not apply (pass family=... for a single-turn family)"
        )
    home = Path(request.home)
    settings = request.settings
    mut = resolve_model(request.model)
    n, temperature = resolve_n_best(fam, settings, request.n_best, request.n_best_temperature)
    job = EvalJob(
        home=home,
        split=request.split,
        role=request.role,
        model=mut.name,
        model_path=str(mut.path) if mut.path else None,
        run_id=mut.run_dir.name if mut.run_dir else None,
        sampling=settings,
        n_best=n,
        n_best_temperature=temperature,
        limit=request.limit or settings.limit,
        task_ids=request.task_ids,
        progress=request.progress,
        options=request.options,
    )
    prepared = fam.evaluation(job)  # reads and checks the tasks: raises before serving
    with contextlib.ExitStack() as stack:
        client_cfg = request.served or stack.enter_context(
            serving(mut, request.vllm_cfg or load_vllm_config())
        )
        records = prepared.run(client_cfg)
    path = write_eval_records(home, request.split, records)
    return EvalResult(
        mut.name,
        request.split,
        records,
        path,
        family=fam.name,
        role=request.role,
        group_label=fam.eval_group_label,
    )
