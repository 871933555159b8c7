"""Dagster wiring of the GRPO stage: `grpo_model` and `grpo_job`.

`grpo_model` continues the SFT model with GRPO on one family's train tasks (verifier
rewards through `Family.grpo`). It refuses, like `sft_model`, unless the data it learns
from passed the gate: `sft_dataset[train]` (what the starting model was trained on) and
every blocking check of the family on each materialized `source × train` partition. The
CLI (`verilearn train grpo`) asks the same question: `training_data_gate` on `grpo_tasks`.
"""

from dagster import (
    AssetChecksDefinition,
    AssetExecutionContext,
    AssetsDefinition,
    Config,
    JobDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
    define_asset_job,
)

from resources.home import HomeResource
from verilearn_assets.core.deploy import op_tags_for
from verilearn_assets.core.family import families
from verilearn_assets.core.records import SOURCES
from verilearn_assets.gate.adapter import asset_key
from verilearn_assets.gate.training_gate import gate_closed
from verilearn_assets.training.config import TrainingConfig, load_training_config
from verilearn_assets.training.grpo.trainer import resolve_family, train_grpo
from verilearn_assets.training.run_dir import TrainRun
from verilearn_assets.training.sft.assets import (
    TaskData,
    gate_evidence,
    sft_model,
    train_metadata,
    training_data_gate,
)


def grpo_tasks(config: TrainingConfig, family: str | None = None) -> TaskData:
    """What GRPO learns from beside `sft_dataset[split]` (the starting model's data): the
    family's task partitions `grpo.sources × split`, the data its gate must also pass."""
    fam = resolve_family(family, config.grpo)
    return TaskData(fam.name, config.split, tuple(config.grpo.sources or SOURCES))


class GrpoModelConfig(Config):
    config_path: str | None = None  # a training.yaml; default configs/training.yaml
    max_steps: int | None = None  # overrides grpo.max_steps
    family: str | None = None  # overrides grpo.family
    role: str | None = None  # overrides grpo.role


def grpo_metadata(run: TrainRun) -> dict[str, object]:
    """The SFT metadata (run, model, loss, plots as images) plus the last step's rewards."""
    meta = train_metadata(run)
    extra = run.result.extra if run.result is not None else {}
    for key in ("family", "role", "start", "sft_run_id", "tasks", "curriculum"):
        if extra.get(key) is not None:
            meta[key] = extra[key]
    meta["reward_weights"] = MetadataValue.json(extra.get("reward_weights", {}))
    meta["multi_turn"] = bool(extra.get("multi_turn", False))
    if extra.get("prompt_budget"):  # single-turn prompts fitted to the window (grpo/budget.py)
        budget = extra["prompt_budget"]
        meta["prompts_compressed"] = budget["compressed"]
        meta["prompts_dropped_context_overflow"] = budget["dropped_context_overflow"]
        meta["prompt_budget"] = MetadataValue.json(budget)
    if extra.get("rollouts_file"):  # multi-turn: every episode, readable (grpo/rollout.py)
        meta["rollouts"] = MetadataValue.path(str(extra["rollouts_file"]))
        meta["max_turns"] = extra.get("max_turns")
        meta["opening_overflows"] = extra.get("opening_overflows", 0)
    from verilearn_assets.training.run_dir import read_metrics

    steps = [m for m in read_metrics(run.run_dir / "metrics.jsonl") if "reward" in m]
    if steps:
        last = steps[-1]
        for key, value in last.items():
            if key in ("reward", "reward_std", "kl") or key.startswith(("rewards/", "turns/")):
                meta[f"last/{key}"] = float(value)
    return meta


def _grpo_family_deps() -> list:
    """The task asset of every family that can be RL-trained (all its partitions)."""
    return [asset_key(f, "tasks") for f in families().values() if f.grpo is not None]


@asset(
    group_name="training",
    deps=[sft_model, *_grpo_family_deps()],
    op_tags=op_tags_for(["sandbox"]),  # rewards: the family's verifier in the sandbox / a jail
    description="GRPO (TRL GRPOTrainer) from the latest SFT model with verifier rewards "
    "(analysis: the completion runs in the sandbox; dafny: the verifier), on one family's "
    "train tasks; refuses unless sft_dataset[train] and the family's blocking checks on "
    "its train partitions passed.",
)
def grpo_model(
    context: AssetExecutionContext, config: GrpoModelConfig, home: HomeResource
) -> MaterializeResult:
    training = load_training_config(config.config_path)
    tasks = grpo_tasks(training, config.family)
    gate = training_data_gate(context.instance, home.dir(), training.split, training, tasks)
    if not gate.open:
        raise gate_closed("grpo_model refuses: the gate did not pass: ", gate)

    def log_progress(step: int, total: int, logs: dict) -> None:
        if "reward" in logs:
            context.log.info(f"grpo step {step}/{total}: reward {logs['reward']:.4f}")

    run = train_grpo(
        training,
        home.dir(),
        family=config.family,
        role=config.role,
        max_steps=config.max_steps,
        progress=log_progress,
        evidence=gate_evidence(context.instance, home.dir(), training.split),
    )
    return MaterializeResult(metadata=grpo_metadata(run))


grpo_job = define_asset_job(
    "grpo_job",
    selection=[grpo_model],
    description="GRPO with verifier rewards from the SFT model (grpo_model).",
)

GRPO_ASSETS: list[AssetsDefinition] = [grpo_model]
GRPO_CHECKS: list[AssetChecksDefinition] = []
GRPO_JOBS: list[JobDefinition] = [grpo_job]
