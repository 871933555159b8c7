"""Every family folder follows the one skeleton, so a reader finds a concept by its role.

A module at the top of a family folder that is not part of the skeleton must be named here
with the reason it stays there; anything else goes into a subpackage named for what it holds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "verilearn_assets"
SKELETON = (
    "family.py",
    "records.py",
    "config.py",
    "sources",
    "verify",
    "rollout",
    "rules",  # rules.py, or a rules/ package when a family has many
    "sft.py",
    "grpo.py",
    "rewards.py",
    "assets.py",
    "checks.py",
    "defs.py",
    "cli.py",
    "sql",
    "README.md",
)
# top-level modules a family keeps beside its skeleton, and why
EXTRA = {
    "analysis": {
        "evaluation.py": "the Family.evaluation hook (the student loop run on a served model)",
    },
    "dafny": {
        "prompts.py": "the prompts of every role: sources, rollout, grpo and eval all use them",
        "resources.py": "the family's Dagster resource (the verifier pool)",
    },
    "refactor": {},
}


def _entries(family: str) -> set[str]:
    root = PACKAGE / family
    return {
        p.name
        for p in root.iterdir()
        if not p.name.startswith(("_", ".")) and (p.is_dir() or p.suffix in {".py", ".md"})
    }


@pytest.mark.parametrize("family", sorted(EXTRA))
def test_family_folder_has_the_skeleton(family: str) -> None:
    entries = _entries(family)
    missing = [
        s for s in SKELETON if s not in entries and not (s == "rules" and "rules.py" in entries)
    ]
    assert not missing, f"verilearn_assets/{family}/ lacks {missing}"


@pytest.mark.parametrize("family", sorted(EXTRA))
def test_family_top_level_holds_only_the_skeleton(family: str) -> None:
    modules = {e for e in _entries(family) if e.endswith(".py")}
    allowed = {s for s in SKELETON if s.endswith(".py")} | {"rules.py"} | set(EXTRA[family])
    stray = sorted(modules - allowed)
    assert not stray, (
        f"verilearn_assets/{family}/ has top-level modules outside the skeleton: {stray} "
        "(move each into sources/, verify/, rollout/ or a subpackage named for it, or name it "
        "in EXTRA with its reason)"
    )
