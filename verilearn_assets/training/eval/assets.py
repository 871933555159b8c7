"""Dagster wiring of evaluation: `model_eval`, partitioned by split, and `eval_job`.

Thin: `evaluate_model` does the work (the CLI calls it too), for the configured family and
role (the first registered family by default; its contract says how it is run). The asset
refuses a trained model
whose run shows no gated training data, or whose `sft_dataset` partition (and, for a GRPO
run, the family task partitions its prompts came from) does not pass the gate in this
instance now (`training_data_gate` on `learned_tasks`; `verilearn eval` asks it too); a
model outside any training run is allowed only as a baseline (training.yaml's base_model,
or listed in eval.baselines).
"""

from dagster import (
    AssetChecksDefinition,
    AssetExecutionContext,
    AssetsDefinition,
    Config,
    Failure,
    JobDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
    define_asset_job,
)

from resources.home import HomeResource
from verilearn_assets.core.deploy import op_tags_for
from verilearn_assets.core.partitions import SPLIT
from verilearn_assets.gate.training_gate import gate_closed
from verilearn_assets.training.config import load_training_config
from verilearn_assets.training.eval.evaluator import evaluate_model
from verilearn_assets.training.eval.evidence import UngatedModel, gate_evidence
from verilearn_assets.training.eval.request import EvalRequest
from verilearn_assets.training.eval.serving import resolve_model
from verilearn_assets.training.run_dir import GateEvidence
from verilearn_assets.training.sft.assets import TaskData, training_data_gate


def learned_tasks(evidence: GateEvidence) -> TaskData | None:
    """The task partitions a trained model learned from beside its `sft_dataset` partition
    (a GRPO run's prompts; None for an SFT run), for the training gate asked again before
    it is evaluated: each one its prompts came from must still be materialized and pass."""
    if not (evidence.family and evidence.task_split):
        return None
    return TaskData(
        evidence.family, evidence.task_split, tuple(evidence.task_sources), every_source=True
    )


class ModelEvalConfig(Config):
    model: str | None = None  # model dir or served name; default: training.yaml's base_model
    limit: int | None = None  # overrides eval.limit
    question_ids: list[str] | None = None  # only these questions (tasks) of the split
    family: str | None = None  # a registered family; None: the first (analysis)
    role: str = "default"  # dafny: writer or annotator
    config_path: str | None = None  # a training.yaml; default configs/training.yaml


@asset(
    group_name="training",
    partitions_def=SPLIT,
    op_tags=op_tags_for(["sandbox", "vllm"]),  # serves the model under test on vLLM
    description="The model under test, served on vLLM, on the split's accepted tasks of one "
    "family and role (analysis: the student loop in the sandbox; others: one greedy "
    "completion per task scored by the family's verifier); one record per task in the lake "
    "(mart_model_pass_rate). Refuses a trained model whose data did not pass the gate, and "
    "a model outside any run that is not a configured baseline.",
)
def model_eval(
    context: AssetExecutionContext, config: ModelEvalConfig, home: HomeResource
) -> MaterializeResult:
    split = context.partition_key
    training = load_training_config(config.config_path)
    model = config.model or str(training.base_model_dir())
    mut = resolve_model(model)
    try:
        evidence = gate_evidence(
            mut, base_model=training.base_model_dir(), baselines=training.eval.baselines
        )
    except UngatedModel as exc:
        raise Failure(description=f"model_eval [{split}] refuses {mut.name}: {exc}") from exc
    if evidence is not None:
        gate = training_data_gate(
            context.instance, home.dir(), evidence.split, training, learned_tasks(evidence)
        )
        if not gate.open:
            raise gate_closed(
                f"model_eval [{split}] refuses {mut.name}: its training data "
                "does not pass the gate: ",
                gate,
            )
    result = evaluate_model(
        EvalRequest(
            model=model,
            split=split,
            home=home.dir(),
            limit=config.limit,
            task_ids=config.question_ids,
            settings=training.eval,
            progress=lambda done, total: context.log.info(f"{done}/{total} tasks"),
            family=config.family,
            role=config.role,
        )
    )
    summary = result.summary()
    context.log.info(f"{mut.name} on {result.family}/{result.role} [{split}]: {summary}")
    return MaterializeResult(
        metadata={
            "model": mut.name,
            "family": result.family,
            "role": result.role,
            "baseline": evidence is None,
            "questions": result.n,
            "passed": result.n_passed,
            "pass_rate": MetadataValue.float(round(result.pass_rate, 4)),
            "format_error_rate": MetadataValue.float(round(result.format_error_rate, 4)),
            "failures": MetadataValue.json(result.failures()),
            "by_template": MetadataValue.md(result.template_markdown()),
            "scores": MetadataValue.json(result.extra_means()),
            "pass_k": MetadataValue.json(result.pass_k()),  # eval.n_best samples per task
            "lake_path": str(result.lake_path),
        }
    )


eval_job = define_asset_job("eval_job", selection=[model_eval])

EVAL_ASSETS: list[AssetsDefinition] = [model_eval]
EVAL_CHECKS: list[AssetChecksDefinition] = []
EVAL_JOBS: list[JobDefinition] = [eval_job]
