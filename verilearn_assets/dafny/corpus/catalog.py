"""The Dafny family's corpora: `programs:` entries of the dataset catalog with
`family: dafny` (`core/ingest/corpora.py`), like the refactor family's `corpora:`.

An entry is `bundled: corpus` (the corpus shipped in `data/dafny/corpus/`, the default, so the
demo runs offline), a `path` (a DafnyBench checkout's dataset folder, a folder of one's own
`.dfy` files) or a pinned `archive`. A user brings one without editing a tracked file: an
untracked YAML with a `programs:` section, named by `VERILEARN_LOCAL_CATALOG`.
`configs/dafny.yaml` `corpus.corpora` picks entries by name (null: every enabled one);
`corpus.path` still loads one directory directly (no catalog entry).

Every corpus of one load shares one set of program keys, so a program repeated in two
corpora (or twice in one) is loaded once: duplicates are dropped before the split.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from verilearn_assets.core import lake
from verilearn_assets.core.config import ConfigError, config_dir
from verilearn_assets.core.ingest.catalog import load_datasets_config, program_corpora
from verilearn_assets.core.ingest.corpora import corpus_root
from verilearn_assets.dafny.corpus.loader import DATA_DIR, LoadReport, load_dafny_bench
from verilearn_assets.dafny.records import DafnyExample

DEFAULT_CORPUS = "dafny-bundled"  # its programs keep their bare file names


@dataclass(frozen=True)
class Corpus:
    name: str
    root: Path
    origin: str  # bundled | path | archive:<url or path> | dir
    licence: str = ""


@dataclass
class CorpusSet:
    """The corpora of one load: a report per corpus and every example, in order."""

    reports: list[LoadReport] = field(default_factory=list)

    @property
    def examples(self) -> list[DafnyExample]:
        return [e for r in self.reports for e in r.examples]

    def limit(self, n: int | None) -> None:
        """Keep the first `n` examples over all corpora (tests, smoke runs)."""
        if n is None:
            return
        for r in self.reports:
            r.examples = r.examples[: max(n, 0)]
            n -= len(r.examples)

    def summary(self) -> dict:
        """Totals, and one summary per corpus."""
        return {
            "files": sum(r.files for r in self.reports),
            "examples": sum(len(r.examples) for r in self.reports),
            "rewritten": sum(r.rewritten for r in self.reports),
            "skipped": dict(sum((r.skipped for r in self.reports), start=Counter())),
            "corpora": [r.summary() for r in self.reports],
        }


def catalog_corpora(
    names: Sequence[str] | None = None,
    directory: str | Path | None = None,
    home: Path | None = None,
) -> list[Corpus]:
    """The catalog's Dafny corpora (`names`: those, in that order; None: every enabled
    one). An archive is fetched or read, pinned and extracted once under
    `<home>/dafny/corpora/`. Any entry that fails is a `ConfigError` naming the catalog
    file and `programs.<name>`: a corpus asked for never silently goes missing."""
    catalog = load_datasets_config(directory)
    entries = program_corpora("dafny", directory)
    if names is not None:
        unknown = [n for n in names if n not in entries]
        if unknown:
            where = Path(directory or config_dir()) / "datasets.yaml"
            raise ConfigError(
                f"configs/dafny.yaml corpus.corpora: {', '.join(map(repr, unknown))} is not an "
                f"enabled dafny entry of {where} programs: (nor of $VERILEARN_LOCAL_CATALOG); "
                f"known: {', '.join(sorted(entries)) or 'none'}"
            )
        chosen = list(names)
    else:
        chosen = list(entries)
    if not chosen:
        raise ConfigError("no enabled dafny corpus in the catalog's programs: section")
    cache = (home or lake.home()) / "dafny" / "corpora"
    out = []
    for name in chosen:
        entry, catalog_file = entries[name]
        root = corpus_root(
            name,
            entry,
            catalog_file=catalog_file,
            bundled_dir=DATA_DIR,  # `bundled: <folder>` names a folder of data/dafny/
            cache_dir=cache,
            policy=catalog.download,
            limits=catalog.archive,
            section="programs",
        )
        out.append(Corpus(name=name, root=root, origin=entry.origin(), licence=entry.licence))
    return out


def load_corpora(corpora: Sequence[Corpus]) -> CorpusSet:
    """Every corpus loaded with one shared set of program keys (duplicates dropped across
    corpora). A layout error names the catalog entry and the directory to use."""
    seen: dict[str, str] = {}
    loaded = CorpusSet()
    for c in corpora:
        prefix = "" if c.name in (DEFAULT_CORPUS, "") else f"{c.name}/"
        try:
            report = load_dafny_bench(
                c.root, corpus=c.name, origin=c.origin, prefix=prefix, seen=seen
            )
        except ValueError as exc:
            raise ConfigError(f"dafny corpus {c.name!r} ({c.origin}): {exc}") from exc
        loaded.reports.append(report)
    return loaded
