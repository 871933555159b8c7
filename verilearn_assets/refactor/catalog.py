"""The rule catalog (`rules/*.yml`) and the bundled corpora (`corpus/corpus.yaml`).

A catalog rule is an ast-grep YAML rule with a `fix`, plus `metadata` the tasks need: the
instruction in words (never the rule text) and a positive example, its fixed form and a
negative example that tests check with real ast-grep.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from verilearn_assets.core.config import ConfigError, StrictConfig, load_yaml_model
from verilearn_assets.core.records import Split

HERE = Path(__file__).resolve().parent
RULES_DIR = HERE / "rules"
CORPUS_DIR = HERE / "corpus"


class RuleExamples(StrictConfig):
    instruction: str
    positive: str
    fixed: str
    negative: str


class CatalogRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    path: str
    rule: dict[str, Any]  # what ast-grep runs (metadata stripped)
    examples: RuleExamples

    @property
    def instruction(self) -> str:
        return self.examples.instruction

    def complexity(self) -> int:
        """Size of the rule: the number of keys and list items in its `rule`/`transform`."""
        return _size({k: v for k, v in self.rule.items() if k in ("rule", "transform")})


def _size(value: Any) -> int:
    if isinstance(value, dict):
        return sum(1 + _size(v) for v in value.values())
    if isinstance(value, list):
        return sum(1 + _size(v) for v in value)
    return 0


def load_rules(directory: Path = RULES_DIR) -> list[CatalogRule]:
    """Every `*.yml` rule, sorted by id; a malformed file is an error naming it."""
    rules = []
    for path in sorted(directory.glob("*.yml")):
        try:
            data = yaml.safe_load(path.read_text())
            meta = data.pop("metadata")
            rule = CatalogRule(
                id=data["id"], path=str(path), rule=data, examples=RuleExamples(**meta)
            )
        except (yaml.YAMLError, KeyError, TypeError, AttributeError, ValidationError) as exc:
            raise ConfigError(f"{path}: not a catalog rule: {exc}") from exc
        if rule.id != path.stem:
            raise ConfigError(f"{path}: rule id {rule.id!r} differs from the file name")
        if "fix" not in data:
            raise ConfigError(f"{path}: catalog rules need a `fix`")
        rules.append(rule)
    return sorted(rules, key=lambda r: r.id)


class RepoEntry(StrictConfig):
    split: Split
    licence: str
    description: str = ""
    path: str | None = None  # default: the folder of that name beside corpus.yaml


class CorpusCatalog(StrictConfig):
    repos: dict[str, RepoEntry]


class Repo(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    path: Path
    split: Split
    licence: str


def load_corpus(directory: Path = CORPUS_DIR) -> list[Repo]:
    catalog = load_yaml_model(directory / "corpus.yaml", CorpusCatalog)
    repos = []
    for name, entry in sorted(catalog.repos.items()):
        path = Path(entry.path) if entry.path else directory / name
        if not path.is_dir():
            raise ConfigError(f"{directory / 'corpus.yaml'}: repo {name!r}: {path} is not a folder")
        repos.append(Repo(name=name, path=path, split=entry.split, licence=entry.licence))
    return repos
