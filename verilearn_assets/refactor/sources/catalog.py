"""The rule catalog (`data/refactor/rules/*.yml`) and the code corpora (`configs/datasets.yaml`
`corpora:`).

Code corpora are entries of the platform's dataset catalog (`core/ingest/corpora.py`), read
through its ingestion code: the same hardened downloader and extractor under the same
`download`/`archive` policies, sha256 pins, a licence and one hand-chosen split per
repository. `bundled:` entries name folders of `data/refactor/corpus/`.

A catalog rule is an ast-grep YAML rule with a `fix`, plus `metadata` the tasks need: the
instruction in words (never the rule text) and a positive example, its fixed form and a
negative example that tests check with real ast-grep.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from verilearn_assets.core import lake
from verilearn_assets.core.config import ConfigError, StrictConfig, config_dir
from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.corpora import corpus_root
from verilearn_assets.core.records import Split
from verilearn_assets.refactor.sources import structure
from verilearn_assets.refactor.verify import toolchains

# The family's bundled data sits outside the package, at the repository root: a checkout
# (what `make demo` and the tests run from) has it, and the package holds only code.
DATA_DIR = Path(__file__).resolve().parents[3] / "data" / "refactor"
RULES_DIR = DATA_DIR / "rules"
CORPUS_DIR = DATA_DIR / "corpus"  # the folders `bundled:` entries name


class RuleExamples(StrictConfig):
    instruction: str
    positive: str
    fixed: str
    negative: str


class CatalogRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    path: str
    # what ast-grep runs (metadata stripped); a list: the documents of a rule file (an
    # `llm` proposal may write several)
    rule: dict[str, Any] | list[dict[str, Any]]
    examples: RuleExamples

    @property
    def instruction(self) -> str:
        return self.examples.instruction

    def complexity(self) -> int:
        """Size of the rule: the number of keys and list items in its `rule`/`transform`
        (every document's)."""
        docs = self.rule if isinstance(self.rule, list) else [self.rule]
        return sum(_size({k: v for k, v in d.items() if k in ("rule", "transform")}) for d in docs)


def scoped_function(rule: dict[str, Any]) -> str | None:
    """The function a rule is restricted to (`procedural.scoped_to_function`: its rule in
    an `all` with an `inside` of a function definition matched by name, in the rule's
    language: `structure.function_scope`), else None."""
    return structure.scoped_function(rule)


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


def load_catalog(directory: Path = RULES_DIR) -> list[CatalogRule]:
    """The task catalog of every language: Python's rules in `rules/` (`load_rules`) and
    each other language's in `rules/<language>/`: the files there whose `metadata` has
    the examples a task rule needs (`positive`, `fixed`, `negative`, checked with real
    ast-grep by `test_languages`). The others are parity rules (ast-grep's syntax shown on a
    `sample`, `test_rule_parity`), not task rules."""
    rules = load_rules(directory)
    for folder in sorted(p for p in directory.iterdir() if p.is_dir()):
        for path in sorted(folder.glob("*.yml")):
            try:
                docs = list(yaml.safe_load_all(path.read_text()))
            except yaml.YAMLError as exc:
                raise ConfigError(f"{path}: not YAML: {exc}") from exc
            meta = docs[0].get("metadata") if len(docs) == 1 and isinstance(docs[0], dict) else None
            if not (isinstance(meta, dict) and "positive" in meta):
                continue
            rules.append(_catalog_rule(path, docs[0], folder.name))
    return sorted(rules, key=lambda r: r.id)


def _catalog_rule(path: Path, data: dict, folder: str) -> CatalogRule:
    """One task rule of `rules/<folder>/`, checked as `load_rules` checks Python's: its id
    is its file name, it has a `fix`, and its language is the folder's."""
    data = dict(data)
    try:
        meta = data.pop("metadata")
        rule = CatalogRule(id=data["id"], path=str(path), rule=data, examples=RuleExamples(**meta))
        language = toolchains.language_of_rule(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: not a catalog rule: {exc}") from exc
    if rule.id != path.stem:
        raise ConfigError(f"{path}: rule id {rule.id!r} differs from the file name")
    if "fix" not in data:
        raise ConfigError(f"{path}: catalog rules need a `fix`")
    if language != folder:
        raise ConfigError(f"{path}: language {language!r} in the folder of {folder!r}")
    return rule


class Repo(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    path: Path
    split: Split
    licence: str
    origin: str = "bundled"  # bundled | path | archive:<path or url>
    sha256: str | None = None  # the archive's pin, for archive repos
    language: str = "python"  # canonical (languages.py); its rules and runner follow
    test_command: tuple[str, ...] = ("pytest", "-q")  # toolchains.corpus_language


class CorpusFailure(BaseModel):
    """One catalog entry that could not be made a repository (it fails alone)."""

    model_config = ConfigDict(frozen=True)
    name: str
    split: Split
    error: str  # names the catalog file and the entry


class CorpusLoad(BaseModel):
    repos: list[Repo]
    failures: list[CorpusFailure]

    def for_split(self, split: str) -> CorpusLoad:
        return CorpusLoad(
            repos=[r for r in self.repos if r.split == split],
            failures=[f for f in self.failures if f.split == split],
        )


def read_corpus(directory: Path | None = None, home: Path | None = None) -> CorpusLoad:
    """Every repository of the `corpora:` section of `<directory>/datasets.yaml` (default:
    `VERILEARN_CONFIG_DIR` or the repo's configs/). `bundled:` folders are those of
    `data/refactor/corpus/`; archives are fetched or read, checked against their pin
    and extracted once under `<home>/refactor/corpora/`. An entry that fails (wrong pin,
    unreachable URL, missing folder) is a `CorpusFailure` naming the file and the entry;
    the other entries are unaffected. A malformed catalog is a `ConfigError`."""
    catalog_file = Path(directory or config_dir()) / "datasets.yaml"
    catalog = load_datasets_config(catalog_file.parent)
    cache_dir = (home or lake.home()) / "refactor" / "corpora"
    repos, failures = [], []
    for name, entry in sorted(catalog.corpora.items()):
        try:
            language, test = toolchains.corpus_language(entry.language, entry.test)
        except ValueError as exc:  # its message starts with the field at fault
            error = f"{catalog_file}: corpora.{name}.{exc}"
            failures.append(CorpusFailure(name=name, split=entry.split, error=error))
            continue
        try:
            path = corpus_root(
                name,
                entry,
                catalog_file=catalog_file,
                bundled_dir=CORPUS_DIR,
                cache_dir=cache_dir,
                policy=catalog.download,
                limits=catalog.archive,
            )
        except (ConfigError, OSError) as exc:
            message = str(exc)
            if f"corpora.{name}" not in message:
                message = f"{catalog_file}: corpora.{name}: {message}"
            failures.append(CorpusFailure(name=name, split=entry.split, error=message))
            continue
        repos.append(
            Repo(
                name=name,
                path=path,
                split=entry.split,
                licence=entry.licence,
                origin=entry.origin(),
                sha256=entry.archive.sha256 if entry.archive else None,
                language=language,
                test_command=test,
            )
        )
    return CorpusLoad(repos=repos, failures=failures)


def load_corpus(
    directory: Path | None = None, home: Path | None = None, strict: bool = True
) -> list[Repo]:
    """The repositories of `<directory>/datasets.yaml` `corpora:`; with `strict`, any failed
    entry is a `ConfigError` naming every failed entry (else the failed ones are left out)."""
    loaded = read_corpus(directory, home)
    if strict and loaded.failures:
        raise ConfigError("; ".join(f.error for f in loaded.failures))
    return loaded.repos


def rules_for(repo: Repo, rules: list[CatalogRule]) -> list[CatalogRule]:
    """The rules of the repository's language (a rule of another language would scan none
    of its files: a jailed run for nothing)."""
    return [r for r in rules if toolchains.language_of_rule(r.rule) == repo.language]
