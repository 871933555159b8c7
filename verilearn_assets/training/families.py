"""The family registry as training reads it: which family is meant when none is named."""

from __future__ import annotations

from verilearn_assets.core.family import families


def default_family() -> str:
    """The family evaluated and GRPO-trained when none is named: the registry's first
    (family packages load in name order, so analysis in this repository)."""
    known = families()
    if not known:
        raise ValueError("no family is registered")
    return next(iter(known))
