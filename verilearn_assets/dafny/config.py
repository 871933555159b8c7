"""`configs/dafny.yaml`: the verifier, the corpus, the sources and the gate samples."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from verilearn_assets.core.config import StrictConfig, load_config
from verilearn_assets.dafny.verify.verifier import VerifierConfig


class CorpusConfig(StrictConfig):
    # catalog `programs:` entries (configs/datasets.yaml, $VERILEARN_LOCAL_CATALOG) with
    # family dafny, by name; None: every enabled one (`dafny/corpus/catalog.py`)
    corpora: list[str] | None = None
    path: str | None = None  # one directory loaded directly instead of the catalog's corpora
    seed: int = 0
    limit: int | None = Field(default=None, ge=1)  # first N examples (tests, smoke runs)
    # tasks of each evaluated role (writer: an example each; annotator: an example with
    # hints each) that dev and test each hold at least, so pass@1 moves in steps of <= 1/N;
    # a corpus with under 3 x N of a role is split by proportion alone (`dafny/corpus/splits.py`)
    min_eval_tasks: int = Field(default=10, ge=0)


class SourcesConfig(StrictConfig):
    mutants_per_example: int = Field(default=2, ge=1)
    llm_proposals: int = Field(default=8, ge=1)  # programs asked of the model per partition
    llm_shots: int = Field(default=2, ge=0)  # train-split gold programs shown as examples


class GateSample(StrictConfig):
    reverify: int = Field(default=5, ge=1)  # gold programs re-verified per partition
    cache_agreement: int = Field(default=5, ge=1)
    seed: int = 0


class GrpoModes(StrictConfig):
    """The frozen partners of the GRPO roles `annotator_frozen_writer` and `writer_cascade`
    (`dafny/grpo.py`). `program` writer: the gold bodies; `program` annotator: the gold
    hints only when the body is the gold body. `vllm`: the model served per
    configs/vllm.yaml (`frozen_model` names another served model, e.g. the trained writer)."""

    frozen_writer: Literal["program", "vllm"] = "program"
    frozen_annotator: Literal["program", "vllm"] = "vllm"
    frozen_model: str | None = None


class EvalDefaults(StrictConfig):
    """`verilearn eval --family dafny`: completions per task (the first, greedy, is the
    pass@1 verdict; the others are sampled at `temperature`), kept with their diffs against
    gold and the verifier's logs in `<home>/evals/` (training/eval/single_turn.py)."""

    n_best: int = Field(default=1, ge=1)
    temperature: float = Field(default=0.8, gt=0.0)


class DafnyConfig(StrictConfig):
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    sources: SourcesConfig = Field(default_factory=SourcesConfig)
    gate: GateSample = Field(default_factory=GateSample)
    teacher: str = "program"
    grpo: GrpoModes = Field(default_factory=GrpoModes)
    eval: EvalDefaults = Field(default_factory=EvalDefaults)


def eval_n_best() -> tuple[int, float]:
    """The family's n-best default for evaluation (`Family.eval_n_best`)."""
    cfg = load_dafny_config().eval
    return cfg.n_best, cfg.temperature


def load_dafny_config(directory: str | Path | None = None) -> DafnyConfig:
    return load_config("dafny", DafnyConfig, directory)


def cache_dir(home: Path) -> Path:
    """The verdict cache: Parquet parts in the lake (`dafny/verify/cache.py`)."""
    return Path(home) / "lake" / "dafny" / "verdicts"
