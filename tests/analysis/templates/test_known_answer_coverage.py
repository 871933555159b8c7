"""Every registered template has a known-answer test (issue 10: one generator, one
known-answer test), so the next template cannot ship without one.

A template counts as covered when a test in this folder calls `build(...)` or
`verified(...)` with its name, given literally or through a `pytest.mark.parametrize`
argument of that test.
"""

from __future__ import annotations

import ast
from pathlib import Path

from verilearn_assets.analysis.sources.template import REGISTRY

HERE = Path(__file__).parent
RUNNERS = {"build", "verified"}


def _parametrized(fn: ast.FunctionDef) -> dict[str, list[str]]:
    """argument name -> the string values a parametrize decorator gives it."""
    out: dict[str, list[str]] = {}
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Call) and getattr(dec.func, "attr", "") == "parametrize"):
            continue
        names, values = dec.args[0], dec.args[1]
        if isinstance(names, ast.Constant) and names.value.strip() and "," not in names.value:
            out[names.value.strip()] = [
                e.value
                for e in ast.walk(values)
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
    return out


def covered_templates(folder: Path = HERE) -> dict[str, list[str]]:
    """template name -> the tests that run it with a known answer."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.glob("test_*.py")):
        for fn in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(fn, ast.FunctionDef) or not fn.name.startswith("test_"):
                continue
            params = _parametrized(fn)
            for call in ast.walk(fn):
                if not (isinstance(call, ast.Call) and getattr(call.func, "id", "") in RUNNERS):
                    continue
                # build(name, frame, tmp) / verified(pool_runner, name, frame, tmp)
                arg = call.args[0 if call.func.id == "build" else 1]
                names = (
                    [arg.value]
                    if isinstance(arg, ast.Constant)
                    else params.get(arg.id, [])
                    if isinstance(arg, ast.Name)
                    else []
                )
                for name in names:
                    found.setdefault(name, []).append(f"{path.name}::{fn.name}")
    return found


def test_every_template_has_a_known_answer_test():
    covered = covered_templates()
    missing = sorted(set(REGISTRY) - set(covered))
    assert not missing, f"templates without a known-answer test in {HERE}: {missing}"
    unknown = sorted(set(covered) - set(REGISTRY))
    assert not unknown, f"known-answer tests name unregistered templates: {unknown}"


def test_the_scan_sees_a_missing_template(tmp_path):
    """The scan must not count a template that no test runs."""
    (tmp_path / "test_one.py").write_text(
        "import pytest\n"
        "@pytest.mark.parametrize('name', ['a', 'b'])\n"
        "def test_x(pool_runner, tmp_path, name):\n"
        "    verified(pool_runner, name, None, tmp_path)\n"
        "def test_y(tmp_path):\n"
        "    build('c', None, tmp_path)\n"
        "    'd'\n"
    )
    assert set(covered_templates(tmp_path)) == {"a", "b", "c"}
