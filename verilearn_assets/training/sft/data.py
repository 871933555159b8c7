"""Gated SFT rows → the chat dataset TRL trains on (pure: no dagster).

Reads `sft_dataset` (lake, one `split` partition), keeps the roles `sft.roles` names
(`select_roles`: dafny's writer / annotator, "default" for single-role families), applies the
mixture (families, sources, templates, per-family weights), and turns weights into rows:

* `sample` (default): each task (family, task id, role) gets `floor(W)` draws plus one more
  with probability `frac(W)`, where `W` is the sum of its rows' weights times the family
  weight; each draw picks one of the task's traces with probability proportional to its
  weight. A question verified by K traces (weight 1/K each) therefore enters once, not K
  times, and every trace has the same chance to be that one; a family weight of 2 doubles
  its questions. Expected occurrences of every row equal its weight; seeded.
* `one_per_task`: the first trace (by rollout id) of each task; weights only decide whether
  a family enters (weight 0 = out). Deterministic, for runs that must not depend on a seed.

Only the split's own rows train (the split boundary is the dataset-level split, so no table
of a dev/test question is ever seen); a row of another split is an error.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verilearn_assets.core import lake
from verilearn_assets.core.family import SftRow
from verilearn_assets.training.sft.config import MixtureSettings, SftSettings

SFT_ASSET = "sft_dataset"


class SftDataMissing(ValueError):
    """No `sft_dataset` partition for the split: the gate never let data through."""


def sft_partition_dir(home: Path, split: str) -> Path:
    return lake.partition_dir(SFT_ASSET, lake.lake_root(Path(home)), split=split)


def load_sft_rows(home: Path, split: str) -> list[SftRow]:
    """Every row of `sft_dataset[split]`; `SftDataMissing` when the partition is absent."""
    pdir = sft_partition_dir(home, split)
    if not pdir.is_dir() or not any(pdir.glob("part-*.parquet")):
        raise SftDataMissing(
            f"{pdir}: no sft_dataset partition for split {split!r} — materialize sft_dataset "
            f"[{split}] (it refuses unless the gate's blocking checks passed)"
        )
    rows = lake.read_records(SFT_ASSET, SftRow, lake.lake_root(Path(home)), split=split)
    if not rows:
        raise SftDataMissing(f"{pdir}: sft_dataset partition for split {split!r} is empty")
    return rows  # type: ignore[return-value]


def chat_messages(row: SftRow) -> list[dict[str, str]]:
    """`role`/`content` only, content as text: what the chat template renders."""
    out = []
    for i, m in enumerate(row.messages):
        role, content = m.get("role"), m.get("content")
        if not isinstance(role, str) or not role:
            raise ValueError(f"sft_dataset row {row.id}: message {i}: field 'role' missing")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise ValueError(
                f"sft_dataset row {row.id}: message {i}: field 'content' is "
                f"{type(content).__name__}, expected text"
            )
        out.append({"role": role, "content": content})
    return out


class UnknownRole(ValueError):
    """`sft.roles` names a role no row of the split carries (a typo trains nothing)."""


def select_roles(rows: list[SftRow], roles: list[str] | None, split: str) -> list[SftRow]:
    """The rows whose `role` is in `roles` (None: all). A role no row of the split carries
    is an error naming the field and the roles that are there: a misspelt role would
    otherwise train on nothing of it, silently."""
    if roles is None:
        return list(rows)
    present = sorted({r.role for r in rows})
    unknown = [r for r in roles if r not in present]
    if unknown:
        raise UnknownRole(
            f"training.yaml sft.roles: unknown role(s) {unknown}; the rows of "
            f"sft_dataset [{split}] carry the roles {present}"
        )
    wanted = set(roles)
    return [r for r in rows if r.role in wanted]


def select_mixture(
    rows: list[SftRow], mixture: MixtureSettings, split: str, roles: list[str] | None = None
) -> list[tuple[SftRow, float]]:
    """Rows of `roles` (`select_roles`) the mixture admits, each with its effective weight
    (row weight × family weight)."""
    out = []
    for r in select_roles(rows, roles, split):
        if r.split != split:
            raise ValueError(
                f"sft_dataset row {r.id}: field 'split' is {r.split!r}, training split is "
                f"{split!r} (a row never crosses the dataset-level split)"
            )
        if mixture.families is not None and r.family not in mixture.families:
            continue
        if mixture.sources is not None and r.source not in mixture.sources:
            continue
        if mixture.templates is not None and r.template not in mixture.templates:
            continue
        w = r.weight * mixture.family_weight(r.family)
        if w > 0:
            out.append((r, w))
    return out


@dataclass(frozen=True)
class WeightedSelection:
    rows: list[SftRow]  # in training order, repeats allowed
    tasks: int
    candidates: int  # rows the mixture admitted before weighting


def apply_weights(weighted: list[tuple[SftRow, float]], sft: SftSettings) -> WeightedSelection:
    by_task: dict[tuple[str, str, str], list[tuple[SftRow, float]]] = defaultdict(list)
    for r, w in weighted:
        by_task[(r.family, r.task_id, r.role)].append((r, w))
    rng = random.Random(sft.seed)
    chosen: list[SftRow] = []
    for key in sorted(by_task):
        traces = sorted(by_task[key], key=lambda rw: rw[0].rollout_id)
        if sft.weighting == "one_per_task":
            chosen.append(traces[0][0])
            continue
        total = sum(w for _, w in traces)
        draws = math.floor(total) + (1 if rng.random() < total - math.floor(total) else 0)
        for _ in range(draws):
            chosen.append(rng.choices([r for r, _ in traces], weights=[w for _, w in traces])[0])
    rng.shuffle(chosen)
    return WeightedSelection(rows=chosen, tasks=len(by_task), candidates=len(weighted))


def to_dataset(conversations: list[list[dict[str, str]]]) -> Any:  # -> datasets.Dataset
    """`{"messages": [...]}` per row: TRL's conversational language-modeling format."""
    from datasets import Dataset

    return Dataset.from_list([{"messages": c} for c in conversations])
