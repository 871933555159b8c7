"""Known answers: a repository's code is read in its own language, for the profile's file
count and for the code an LLM proposer is shown (a JavaScript package used to count 0
files and show the model no code, because both read `*.py` only)."""

from __future__ import annotations

from pathlib import Path

from refactor_support import write_tree

from verilearn_assets.refactor.sources.llm import code_excerpt
from verilearn_assets.refactor.sources.repos.baseline import python_files, source_files

JS = {
    "index.js": "var a = 1;\nmodule.exports = a;\n",
    "lib/util.mjs": "export const b = 2;\n",
    "test.js": "require('assert');\n",
    "test/more.js": "require('assert');\n",
    "node_modules/dep/index.js": "var dep = 1;\n",
    ".hidden/x.js": "var h = 1;\n",
    "README.md": "# pkg\n",
    "setup.py": "print('not javascript')\n",
}


def test_source_files_are_the_languages_own(tmp_path: Path) -> None:
    root = write_tree(tmp_path, JS)
    (root / "link.js").symlink_to(root / "index.js")
    got = [p.relative_to(root).as_posix() for p in source_files(root, "javascript")]
    assert got == ["index.js", "lib/util.mjs", "test/more.js", "test.js"]  # Path order
    assert [p.name for p in python_files(root)] == ["setup.py"]


def test_the_proposer_sees_the_languages_code_without_tests(tmp_path: Path) -> None:
    root = write_tree(tmp_path, JS)
    text = code_excerpt(root, 10_000, "javascript")
    assert (
        text
        == "// index.js\nvar a = 1;\nmodule.exports = a;\n\n// lib/util.mjs\nexport const b = 2;\n"
    )
    assert code_excerpt(root, 12, "javascript") == text[:12]


def test_python_excerpt_keeps_its_old_form(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/core.py": "X = 1\n", "tests/test_core.py": "import pkg\n"},
    )
    assert code_excerpt(root, 1000) == "# pkg/core.py\nX = 1\n"
