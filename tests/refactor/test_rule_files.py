"""Rule files as ast-grep accepts them: the language table checked against the installed
ast-grep, our own limits (size, depth, aliases, tags, paths), and refusals through the
real CLI and jail with ast-grep's own message."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from verilearn_assets.refactor.jail import ast_grep_binary
from verilearn_assets.refactor.languages import (
    LANGUAGES,
    UnknownLanguage,
    alias_pattern,
    canonical_language,
    extensions,
    language_of_path,
)


def test_every_alias_in_any_case_is_a_language_of_the_installed_ast_grep(tmp_path: Path) -> None:
    """ast-grep exits 2 on a `--lang` it does not know (1: nothing matched)."""
    binary = ast_grep_binary()
    for lang in LANGUAGES:
        for alias in lang.aliases:
            for spelled in {alias, alias.upper(), alias.capitalize()}:
                done = subprocess.run(
                    [binary, "run", "-p", "x", "-l", spelled, str(tmp_path)],
                    capture_output=True, text=True, check=False,
                )  # fmt: skip
                assert done.returncode in (0, 1), (spelled, done.stderr)
    for name in ("klingon", "sh", "tf", "c#", "jsonc"):  # not languages, here or there
        done = subprocess.run(
            [binary, "run", "-p", "x", "-l", name, str(tmp_path)], capture_output=True, check=False
        )
        assert done.returncode == 2, name
        with pytest.raises(UnknownLanguage, match=re.escape(repr(name))):
            canonical_language(name)


def test_every_extension_is_scanned_as_its_language_by_ast_grep(tmp_path: Path) -> None:
    """One file per extension of every language; ast-grep's `--inspect entity` says which
    files it scans as the language asked (an HTML file is scanned too, as Html, for the
    CSS and JavaScript inside it)."""
    for lang in LANGUAGES:
        for ext in lang.extensions:
            (tmp_path / f"f.{ext}").write_text("x\n")
    for lang in LANGUAGES:
        done = subprocess.run(
            [ast_grep_binary(), "run", "-p", "x", "-l", lang.name, "--inspect", "entity", "."],
            cwd=tmp_path, capture_output=True, text=True, check=False,
        )  # fmt: skip
        seen = re.findall(r"entity\|file\|f\.(\S+): language=(\w+)", done.stderr)
        assert sorted(e for e, name in seen if name == lang.ast_grep_name) == sorted(
            lang.extensions
        ), lang
        assert all(language_of_path(f"a/f.{ext}") == lang.name for ext in lang.extensions)


def test_canonical_names_are_aliases_and_schema_pattern_takes_any_case() -> None:
    assert canonical_language("Tsx") == "tsx" and canonical_language("C++") == "cpp"
    assert canonical_language("golang") == "go" and canonical_language("PY") == "python"
    assert extensions("ts") == ("ts", "cts", "mts")
    pattern = re.compile(alias_pattern())
    for lang in LANGUAGES:
        assert canonical_language(lang.name) == lang.name
        assert all(pattern.match(a.upper()) and pattern.match(a) for a in lang.aliases)
    assert not pattern.match("klingon") and not pattern.match("pythonx")
