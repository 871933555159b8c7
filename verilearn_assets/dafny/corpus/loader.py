"""Loading Dafny programs into `DafnyExample`s: the bundled corpus, plain `.dfy`
directories and DafnyBench checkouts (`ground_truth/<n>.dfy` with
`hints_removed/<n>_no_hints.dfy`).

Each method with a body becomes one example. Files that cannot be read, are out of
dialect with no rewrite, hold no method, or repeat a program already loaded (same text once
comments and whitespace are normalized, after the dialect rewrite; in any corpus of the same
load) are skipped with a reason, and every skip is counted in `LoadReport` — nothing is
dropped silently.

Layouts (`detect_layout`): a directory holding `ground_truth/` is DafnyBench — each program
is loaded once, with its `hints_removed/` twin giving the hint-free bodies (the twin is never
a program of its own); any other directory is plain `.dfy` files, searched recursively, where
`x_no_hints.dfy` beside `x.dfy` is the twin of `x`. Pointing at a directory one or two
levels above a DafnyBench layout, or at `ground_truth/` itself, is an error that names the
directory to use.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

from verilearn_assets.core.records import content_hash
from verilearn_assets.dafny.lang import dialect
from verilearn_assets.dafny.lang.lexer import code_tokens
from verilearn_assets.dafny.lang.syntax import (
    Decl,
    declarations,
    hints,
    lemma_names,
    normalize,
    remove_hints,
    strip_comments,
)
from verilearn_assets.dafny.records import DafnyExample

# The family's bundled data sits at the repository root, beside configs/, not in the package.
DATA_DIR = Path(__file__).resolve().parents[3] / "data" / "dafny"
BUNDLED = DATA_DIR / "corpus"
TWIN_SUFFIX = "_no_hints"
DUPLICATE = "duplicate of a program already loaded (normalized content)"
ORPHAN_TWIN = "hint-free twin without its program"


class LayoutError(ValueError):
    """The directory is not a corpus as given (and the message says which one is)."""


@dataclass
class LoadReport:
    examples: list[DafnyExample] = field(default_factory=list)
    files: int = 0  # programs found (a program and its hint-free twin count once)
    rewritten: int = 0
    skipped: Counter = field(default_factory=Counter)  # reason -> files
    skipped_files: dict[str, str] = field(default_factory=dict)  # file -> reason
    corpus: str = ""  # the catalog entry's name ("" for a directory loaded directly)
    origin: str = ""  # bundled | path | archive:<…> | a directory
    layout: str = ""  # dafnybench | plain

    def skip(self, path: Path, reason: str) -> None:
        self.skipped[reason] += 1
        self.skipped_files[str(path)] = reason

    @property
    def loaded(self) -> int:
        """Programs that gave at least one example."""
        return len({e.program for e in self.examples})

    def summary(self) -> dict:
        return {
            **({"corpus": self.corpus} if self.corpus else {}),
            "files": self.files,
            "programs": self.loaded,
            "examples": len(self.examples),
            "rewritten": self.rewritten,
            "skipped": dict(sorted(self.skipped.items())),
        }


def constructs_of(program: str, decl: Decl, all_decls: list[Decl]) -> list[str]:
    text = program
    body = decl.body or ""
    tags = []
    if re.search(r"\b(while|for)\b", body):
        tags.append("loops")
    if any(
        d.body and re.search(rf"\b{re.escape(d.name)}\s*\(", d.body)
        for d in all_decls
        if d.kind in ("function", "predicate", "method", "lemma")
    ):
        tags.append("recursion")
    for tag, pattern in (
        ("arrays", r"\barray\d?\s*<"),
        ("sequences", r"\bseq\s*<"),
        ("sets", r"\bset\s*<"),
        ("maps", r"\bmap\s*<"),
        ("lemmas", r"\blemma\b"),
        ("classes", r"\bclass\b"),
        ("datatypes", r"\bdatatype\b"),
    ):
        if re.search(pattern, text):
            tags.append(tag)
    return tags


def examples_from_program(
    text: str,
    stem: str,
    origin: str,
    no_hints: str | None = None,
    dialect_name: str = "2",
    rewrites: list[str] | None = None,
    corpus: str = "",
) -> list[DafnyExample]:
    """One example per method with a body. `no_hints` (DafnyBench's hint-free twin) gives
    the bodies when present; otherwise hints are removed mechanically, calls of the
    program's lemmas (and ghost methods) included: they are proof steps, not code, and a
    hint-free body that kept them would hand the annotator its answer."""
    program = strip_comments(text)
    decls = declarations(program)
    lemmas = lemma_names(program)
    twin = {d.qualified: d for d in declarations(strip_comments(no_hints))} if no_hints else {}
    out = []
    for decl in decls:
        if decl.kind != "method" or decl.body is None:
            continue
        annotated = decl.body
        twin_decl = twin.get(decl.qualified)
        body = twin_decl.body if twin_decl and twin_decl.body else remove_hints(annotated, lemmas)
        prefix = program[: decl.start]
        spec = program[decl.start : decl.end - len(annotated)]
        suffix = program[decl.end :]
        out.append(
            DafnyExample(
                id=DafnyExample.make_id(prefix, spec, annotated, suffix),
                name=f"{stem}.{decl.qualified}",
                program=stem,
                origin=origin,  # type: ignore[arg-type]
                corpus=corpus,
                dialect=dialect_name,  # type: ignore[arg-type]
                rewrites=rewrites or [],
                prefix=prefix,
                suffix=suffix,
                spec=spec,
                body=body,
                annotated_body=annotated,
                constructs=constructs_of(program, decl, decls),
                n_lines=program.count("\n") + 1,
                n_hints=len(hints(code_tokens(annotated), lemmas)),
            )
        )
    return out


def program_key(text: str) -> str:
    """Two programs with this key are one program (comments and layout aside)."""
    return content_hash("dafny-program", normalize(text))


def _load_file(
    path: Path,
    origin: str,
    report: LoadReport,
    twin: Path | None = None,
    *,
    stem: str | None = None,
    seen: MutableMapping[str, str] | None = None,
) -> None:
    report.files += 1
    try:
        raw = path.read_text()
        twin_text = twin.read_text() if twin and twin.is_file() else None
    except (OSError, UnicodeDecodeError) as exc:
        report.skip(path, f"unreadable: {type(exc).__name__}")
        return
    program = stem or path.stem
    try:
        text, applied = dialect.to_dafny2(raw)
        if twin_text is not None:
            twin_text, _ = dialect.to_dafny2(twin_text)
        found = examples_from_program(
            text, program, origin, twin_text, "4" if applied else "2", applied, report.corpus
        )
    except dialect.DialectError as exc:
        report.skip(path, str(exc))
        return
    except ValueError as exc:
        report.skip(path, f"unparseable: {exc}")
        return
    if not found:
        report.skip(path, "no method with a body")
        return
    if seen is not None:
        key = program_key(text)
        if key in seen:
            report.skip(path, DUPLICATE)
            report.skipped_files[str(path)] = f"{DUPLICATE}: {seen[key]}"
            return
        seen[key] = str(path)
    report.rewritten += bool(applied)
    report.examples.extend(found)


def detect_layout(root: Path) -> str:
    """`dafnybench` (a `ground_truth/` here) or `plain`; a `LayoutError` naming the right
    directory when `root` is above a DafnyBench layout or inside one."""
    if (root / "ground_truth").is_dir():
        return "dafnybench"
    if root.name in ("ground_truth", "hints_removed") and (root.parent / "ground_truth").is_dir():
        raise LayoutError(
            f"{root}: this is the {root.name}/ folder of a DafnyBench layout; point at its "
            f"parent {root.parent}, which pairs each program with its hint-free twin"
        )
    below = sorted(
        {p.parent for pattern in ("*/ground_truth", "*/*/ground_truth") for p in root.glob(pattern)}
    )
    if below:
        where = ", ".join(str(b) for b in below)
        levels = "one level" if len(below[0].relative_to(root).parts) == 1 else "two levels"
        raise LayoutError(
            f"{root}: no ground_truth/ here, but {where} holds a DafnyBench layout "
            f"(ground_truth/ + hints_removed/): the path is {levels} too high, use {below[0]}"
        )
    if (root / "hints_removed").is_dir():
        raise LayoutError(f"{root}: hints_removed/ without ground_truth/ (DafnyBench needs both)")
    return "plain"


def load_dafny_bench(
    path: str | Path,
    *,
    corpus: str = "",
    origin: str = "",
    prefix: str = "",
    seen: MutableMapping[str, str] | None = None,
) -> LoadReport:
    """A DafnyBench-layout directory, or a directory of plain `.dfy` files.

    `corpus`/`origin` name the catalog entry in the report; `prefix` goes before every
    program name (so two corpora's `gcd.dfy` stay two programs); `seen` (program key ->
    file) is shared by the corpora of one load, so a program repeated in any of them is
    loaded once. Without `seen`, duplicates are still dropped within this directory."""
    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"{root}: not a directory")
    seen = {} if seen is None else seen
    layout = detect_layout(root)
    report = LoadReport(corpus=corpus, origin=origin or str(root), layout=layout)
    if layout == "dafnybench":
        truth, hints = root / "ground_truth", root / "hints_removed"
        stems = set()
        for file in sorted(truth.glob("*.dfy")):
            stems.add(file.stem)
            twin = hints / f"{file.stem}{TWIN_SUFFIX}.dfy"
            _load_file(file, "dafnybench", report, twin, stem=prefix + file.stem, seen=seen)
        for twin in sorted(hints.glob(f"*{TWIN_SUFFIX}.dfy")) if hints.is_dir() else []:
            if twin.stem[: -len(TWIN_SUFFIX)] not in stems:
                report.skip(twin, ORPHAN_TWIN)
    else:
        kind = "bundled" if root.resolve() == BUNDLED else "plain"
        files = sorted(root.rglob("*.dfy"))
        names = {f.with_suffix("") for f in files}
        for file in files:
            base = file.with_suffix("")
            if file.stem.endswith(TWIN_SUFFIX):
                if Path(str(base)[: -len(TWIN_SUFFIX)]) not in names:
                    report.skip(file, ORPHAN_TWIN)
                continue
            twin = file.with_name(f"{file.stem}{TWIN_SUFFIX}.dfy")
            stem = prefix + file.relative_to(root).with_suffix("").as_posix()
            _load_file(file, kind, report, twin, stem=stem, seen=seen)
    if report.files == 0 and not report.skipped:
        raise ValueError(f"{root}: no .dfy files (expected ground_truth/*.dfy or *.dfy)")
    return report


def load_bundled() -> list[DafnyExample]:
    return load_dafny_bench(BUNDLED).examples
