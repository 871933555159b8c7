"""`configs/dafny.yaml`: the verifier, the corpus, the sources and the gate samples."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from verilearn_assets.core.config import StrictConfig, load_config
from verilearn_assets.dafny.verifier import VerifierConfig


class CorpusConfig(StrictConfig):
    path: str | None = None  # a DafnyBench checkout or .dfy directory; None: bundled corpus
    seed: int = 0
    limit: int | None = Field(default=None, ge=1)  # first N examples (tests, smoke runs)


class SourcesConfig(StrictConfig):
    mutants_per_example: int = Field(default=2, ge=1)
    llm_proposals: int = Field(default=8, ge=1)  # programs asked of the model per partition
    llm_shots: int = Field(default=2, ge=0)  # train-split gold programs shown as examples


class GateSample(StrictConfig):
    reverify: int = Field(default=5, ge=1)  # gold programs re-verified per partition
    cache_agreement: int = Field(default=5, ge=1)
    seed: int = 0


class DafnyConfig(StrictConfig):
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    sources: SourcesConfig = Field(default_factory=SourcesConfig)
    gate: GateSample = Field(default_factory=GateSample)
    teacher: str = "program"


def load_dafny_config(directory: str | Path | None = None) -> DafnyConfig:
    return load_config("dafny", DafnyConfig, directory)


def cache_dir(home: Path) -> Path:
    return Path(home) / "cache" / "dafny"
