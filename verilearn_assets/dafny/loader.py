"""Loading Dafny programs into `DafnyExample`s: the bundled corpus, plain `.dfy`
directories and DafnyBench checkouts (`ground_truth/<n>.dfy` with
`hints_removed/<n>_no_hints.dfy`).

Each method with a body becomes one example. Files that cannot be read, are out of
dialect with no rewrite, or hold no method are skipped with a reason, and every skip is
counted in `LoadReport` — nothing is dropped silently.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from verilearn_assets.dafny import dialect
from verilearn_assets.dafny.records import DafnyExample
from verilearn_assets.dafny.syntax import (
    Decl,
    declarations,
    hint_count,
    remove_hints,
    strip_comments,
)

BUNDLED = Path(__file__).resolve().parent / "corpus"


@dataclass
class LoadReport:
    examples: list[DafnyExample] = field(default_factory=list)
    files: int = 0
    rewritten: int = 0
    skipped: Counter = field(default_factory=Counter)  # reason -> files
    skipped_files: dict[str, str] = field(default_factory=dict)  # file -> reason

    def skip(self, path: Path, reason: str) -> None:
        self.skipped[reason] += 1
        self.skipped_files[str(path)] = reason

    def summary(self) -> dict:
        return {
            "files": self.files,
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
) -> list[DafnyExample]:
    """One example per method with a body. `no_hints` (DafnyBench's hint-free twin) gives
    the bodies when present; otherwise hints are removed mechanically."""
    program = strip_comments(text)
    decls = declarations(program)
    twin = {d.qualified: d for d in declarations(strip_comments(no_hints))} if no_hints else {}
    out = []
    for decl in decls:
        if decl.kind != "method" or decl.body is None:
            continue
        annotated = decl.body
        twin_decl = twin.get(decl.qualified)
        body = twin_decl.body if twin_decl and twin_decl.body else remove_hints(annotated)
        prefix = program[: decl.start]
        spec = program[decl.start : decl.end - len(annotated)]
        suffix = program[decl.end :]
        out.append(
            DafnyExample(
                id=DafnyExample.make_id(prefix, spec, annotated, suffix),
                name=f"{stem}.{decl.qualified}",
                program=stem,
                origin=origin,  # type: ignore[arg-type]
                dialect=dialect_name,  # type: ignore[arg-type]
                rewrites=rewrites or [],
                prefix=prefix,
                suffix=suffix,
                spec=spec,
                body=body,
                annotated_body=annotated,
                constructs=constructs_of(program, decl, decls),
                n_lines=program.count("\n") + 1,
                n_hints=hint_count(annotated),
            )
        )
    return out


def _load_file(path: Path, origin: str, report: LoadReport, twin: Path | None = None) -> None:
    report.files += 1
    try:
        raw = path.read_text()
        twin_text = twin.read_text() if twin and twin.is_file() else None
    except (OSError, UnicodeDecodeError) as exc:
        report.skip(path, f"unreadable: {type(exc).__name__}")
        return
    try:
        text, applied = dialect.to_dafny2(raw)
        if twin_text is not None:
            twin_text, _ = dialect.to_dafny2(twin_text)
        found = examples_from_program(
            text, path.stem, origin, twin_text, "4" if applied else "2", applied
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
    report.rewritten += bool(applied)
    report.examples.extend(found)


def load_dafny_bench(path: str | Path) -> LoadReport:
    """A DafnyBench-layout directory, or a directory of plain `.dfy` files."""
    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"{root}: not a directory")
    report = LoadReport()
    truth = root / "ground_truth"
    if truth.is_dir():
        hints = root / "hints_removed"
        for file in sorted(truth.glob("*.dfy")):
            _load_file(file, "dafnybench", report, hints / f"{file.stem}_no_hints.dfy")
    else:
        origin = "bundled" if root.resolve() == BUNDLED else "plain"
        for file in sorted(root.rglob("*.dfy")):
            _load_file(file, origin, report)
    if report.files == 0:
        raise ValueError(f"{root}: no .dfy files (expected ground_truth/*.dfy or *.dfy)")
    return report


def load_bundled() -> list[DafnyExample]:
    return load_dafny_bench(BUNDLED).examples
