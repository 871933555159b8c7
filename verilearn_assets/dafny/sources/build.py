"""Building one `source × split` partition of tasks (pure; the `dafny/tasks` asset calls
this). The corpus is loaded and split the same way for every partition, so a program's split
never depends on which partition is built first."""

from __future__ import annotations

from pathlib import Path

from verilearn_assets.core.records import SPLITS
from verilearn_assets.dafny.config import DafnyConfig
from verilearn_assets.dafny.corpus.catalog import Corpus, CorpusSet, catalog_corpora, load_corpora
from verilearn_assets.dafny.corpus.splits import split_examples
from verilearn_assets.dafny.records import DafnyTask
from verilearn_assets.dafny.sources.llm import Propose, llm_tasks
from verilearn_assets.dafny.sources.procedural import procedural_tasks
from verilearn_assets.dafny.sources.template import template_tasks
from verilearn_assets.dafny.verify.verifier import DafnyVerifier


class SourceUnavailableError(RuntimeError):
    """The `llm` source without a model server."""


def load_corpus(config: DafnyConfig, home: Path | None = None) -> CorpusSet:
    """The configured corpora (catalog `programs:` entries, or `corpus.path` alone),
    duplicates dropped across them, cut to `corpus.limit` examples."""
    if config.corpus.path:
        corpora = [Corpus(name="", root=Path(config.corpus.path), origin="path")]
    else:
        corpora = catalog_corpora(config.corpus.corpora, home=home)
    loaded = load_corpora(corpora)
    loaded.limit(config.corpus.limit)
    return loaded


def build_tasks(
    source: str,
    split: str,
    config: DafnyConfig,
    verifier: DafnyVerifier,
    propose: Propose | None = None,
    home: Path | None = None,
) -> tuple[list[DafnyTask], CorpusSet]:
    """Tasks of one partition; `propose` (a model) is needed by the `llm` source only."""
    report = load_corpus(config, home)
    splits = split_examples(
        report.examples, config.corpus.seed, min_eval_tasks=config.corpus.min_eval_tasks
    )
    mine = [e for e in report.examples if splits[e.id] == split]
    if source == "template":
        return template_tasks(mine, splits, verifier), report
    if source == "procedural":
        return procedural_tasks(mine, splits, verifier, config.sources.mutants_per_example), report
    if source == "llm":
        if propose is None:
            raise SourceUnavailableError(
                "the dafny llm source needs a vLLM server: set base_urls (or launch: true) "
                "in configs/vllm.yaml"
            )
        train = [e for e in report.examples if splits[e.id] == "train"]
        shots = [e.gold_program for e in train[: config.sources.llm_shots]]
        # each split asks its own seeds: the same prompts in every split would propose the
        # same programs, which the gate's one-split rule then has to turn away
        seed = config.corpus.seed + SPLITS.index(split) * config.sources.llm_proposals
        tasks = llm_tasks(propose, config.sources.llm_proposals, split, verifier, shots, seed)
        return tasks, report
    raise ValueError(f"unknown dafny source {source!r}")
