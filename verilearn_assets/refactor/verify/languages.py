"""The one place that knows ast-grep's languages: name → canonical name → file extensions.

The table is ast-grep 0.51.1's own (`crates/language/src/lib.rs`, the languages reference
page, and what the installed binary answers: `tests/refactor/test_rule_files.py` asks it
for every alias in three cases and for the language of a file of every extension, so a
new ast-grep that disagrees fails there). ast-grep matches names case-insensitively
against the aliases (`Tsx`, `CPP`, `golang`), so does `canonical_language`.

A language's canonical name here is ast-grep's own name lower-cased (`typescript`,
`tsx`, `cpp`, `csharp`): always one of its aliases, so it can be passed to `--lang` and
written in a rule's `language:` as is. `ast_grep_name` gives the spelling ast-grep prints
(`TypeScript`, in `--json` output and `--inspect`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath


@dataclass(frozen=True)
class Language:
    ast_grep_name: str  # as ast-grep prints it
    aliases: tuple[str, ...]  # accepted in any letter case
    extensions: tuple[str, ...]  # the files ast-grep scans as this language (no dot)

    @property
    def name(self) -> str:
        return self.ast_grep_name.lower()


LANGUAGES: tuple[Language, ...] = (
    Language("Bash", ("bash",), ("bash", "bats", "cgi", "command", "env", "fcgi", "ksh",
                                  "sh", "tmux", "tool", "zsh")),
    Language("C", ("c",), ("c", "h")),
    Language("Cpp", ("cc", "c++", "cpp", "cxx"),
             ("cc", "hpp", "cpp", "c++", "hh", "cxx", "cu", "ino")),
    Language("CSharp", ("cs", "csharp"), ("cs",)),
    Language("Css", ("css",), ("css", "scss")),
    Language("Dart", ("dart",), ("dart",)),
    Language("Elixir", ("ex", "elixir"), ("ex", "exs")),
    Language("Go", ("go", "golang"), ("go",)),
    Language("Haskell", ("hs", "haskell"), ("hs",)),
    Language("Hcl", ("hcl",), ("hcl", "nomad", "tf", "tfvars", "workflow")),
    Language("Html", ("html",), ("html", "htm", "xhtml")),
    Language("Java", ("java",), ("java",)),
    Language("JavaScript", ("javascript", "js", "jsx"), ("cjs", "js", "mjs", "jsx")),
    Language("Json", ("json",), ("json",)),
    Language("Kotlin", ("kotlin", "kt"), ("kt", "ktm", "kts")),
    Language("Lua", ("lua",), ("lua",)),
    Language("Markdown", ("markdown", "md"), ("markdown", "md")),
    Language("Nix", ("nix",), ("nix",)),
    Language("Php", ("php",), ("php",)),
    Language("Python", ("py", "python"), ("py", "py3", "pyi", "bzl")),
    Language("Ruby", ("rb", "ruby"), ("rb", "rbw", "gemspec")),
    Language("Rust", ("rs", "rust"), ("rs",)),
    Language("Scala", ("scala",), ("scala", "sc", "sbt")),
    Language("Solidity", ("solidity", "sol"), ("sol",)),
    Language("Swift", ("swift",), ("swift",)),
    Language("Tsx", ("tsx",), ("tsx",)),
    Language("TypeScript", ("ts", "typescript"), ("ts", "cts", "mts")),
    Language("Yaml", ("yaml", "yml"), ("yaml", "yml")),
)  # fmt: skip

_BY_ALIAS = {alias: lang for lang in LANGUAGES for alias in lang.aliases}
_BY_EXTENSION = {ext: lang for lang in LANGUAGES for ext in lang.extensions}


class UnknownLanguage(ValueError):
    """A name that is none of ast-grep's languages (the message lists them)."""


def language(name: str) -> Language:
    """The language a name (any alias, any case) stands for; UnknownLanguage otherwise."""
    found = _BY_ALIAS.get(name.lower()) if isinstance(name, str) else None
    if found is None:
        known = ", ".join(lang.name for lang in LANGUAGES)
        raise UnknownLanguage(f"language {name!r} is not one ast-grep supports (known: {known})")
    return found


def canonical_language(name: str) -> str:
    """`Tsx` → `tsx`, `golang` → `go`, `C++` → `cpp`, `py` → `python`."""
    return language(name).name


def is_language(name: object) -> bool:
    return isinstance(name, str) and name.lower() in _BY_ALIAS


def extensions(name: str) -> tuple[str, ...]:
    """The file extensions (no dot) ast-grep scans as this language."""
    return language(name).extensions


def ast_grep_name(name: str) -> str:
    """The spelling ast-grep prints: `tsx` → `Tsx`, `ts` → `TypeScript`."""
    return language(name).ast_grep_name


def language_of_path(path: str | PurePath) -> str | None:
    """The canonical language ast-grep gives a file by its extension, or None."""
    suffix = PurePath(path).suffix
    found = _BY_EXTENSION.get(suffix[1:]) if suffix else None
    return found.name if found else None


def alias_pattern() -> str:
    """A regular expression (JSON-schema portable: no inline flags) matching every alias
    in any letter case, for schemas shown to models."""
    parts = [
        "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in alias)
        for alias in sorted(_BY_ALIAS, key=lambda a: (-len(a), a))
    ]
    return "^(" + "|".join(parts) + ")$"
