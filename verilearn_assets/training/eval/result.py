"""`EvalResult`: what one evaluation run gives back, and how its records reach the lake.

The records are the lake's (`model_eval`, partition `split=<s>`); the summary, pass@k and
per-group table are what `verilearn eval` prints and `model_eval` puts in its metadata.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verilearn_assets.core import lake
from verilearn_assets.core.eval_records import EVAL_ASSET, ModelEvalRecord
from verilearn_assets.training.eval.pass_at_k import aggregate, record_counts


@dataclass
class EvalResult:
    """What one evaluation run gives back (the records are also in the lake)."""

    model: str
    split: str
    records: list[ModelEvalRecord]
    lake_path: Path | None = None
    errors: list[str] = field(default_factory=list)
    family: str = ""
    role: str = "default"
    group_label: str = "group"  # the family's name for a group (`Family.eval_group_label`)

    @property
    def n(self) -> int:
        return len(self.records)

    @property
    def n_passed(self) -> int:
        return sum(r.passed for r in self.records)

    @property
    def pass_rate(self) -> float:
        return self.n_passed / self.n if self.n else 0.0

    @property
    def format_error_rate(self) -> float:
        """Share of questions whose trace had at least one rejected reply."""
        return sum(r.format_errors > 0 for r in self.records) / self.n if self.n else 0.0

    def failures(self) -> dict[str, int]:
        return dict(Counter(r.failure_class or "?" for r in self.records if not r.passed))

    def summary(self) -> dict[str, Any]:
        def mean(xs: Sequence[float]) -> float:
            return round(statistics.fmean(xs), 3) if xs else 0.0

        return {
            "model": self.model,
            "split": self.split,
            "family": self.family,
            "role": self.role,
            "questions": self.n,
            "passed": self.n_passed,
            "pass_rate": round(self.pass_rate, 4),
            "format_error_rate": round(self.format_error_rate, 4),
            "failures": self.failures(),
            "mean_turns": mean([r.n_turns for r in self.records]),
            "mean_completion_tokens": mean([r.completion_tokens for r in self.records]),
            "mean_latency_ms": mean([r.latency_ms for r in self.records]),
            "errors": len(self.errors),
            **self.extra_means(),
            **self.pass_k(),
        }

    def pass_k(self) -> dict[str, Any]:
        """Per-task sample counts (n-best) as mean pass@k and pass^k for k <= n
        (`training.eval.pass_at_k`): {"n_samples", "pass_at_k": {k: v}, "pass_hat_k": {k: v}}."""
        agg = aggregate(
            record_counts(r.extra, r.passed, f"record {r.question_id}") for r in self.records
        )
        rnd = {k: round(v, 4) for k, v in agg["pass_at_k"].items()}
        hat = {k: round(v, 4) for k, v in agg["pass_hat_k"].items()}
        return {"n_samples": agg["n"], "pass_at_k": rnd, "pass_hat_k": hat}

    def pass_k_line(self) -> str:
        """pass@k and pass^k for every k <= n on one line (the CLI prints it)."""
        p = self.pass_k()
        at = ", ".join(f"pass@{k} {v:.3f}" for k, v in p["pass_at_k"].items())
        hat = ", ".join(f"pass^{k} {v:.3f}" for k, v in p["pass_hat_k"].items())
        return f"n={p['n_samples']} samples per task: {at}; {hat}"

    def extra_means(self) -> dict[str, float]:
        """Mean of every numeric or boolean score key the family's scorer gave (dafny
        writer: exact_match, bleu, covered), as `mean_<key>`."""
        keys = sorted({k for r in self.records for k, v in r.extra.items() if _numeric(v)})
        out = {}
        for k in keys:
            vals = [float(r.extra[k]) for r in self.records if _numeric(r.extra.get(k))]
            out[f"mean_{k}"] = round(statistics.fmean(vals), 4)
        return out

    def by_template(self) -> list[tuple[str, int, int]]:
        """(template family, questions, passed), sorted by template family."""
        groups: dict[str, list[bool]] = {}
        for r in self.records:
            groups.setdefault(r.template_family, []).append(r.passed)
        return [(k, len(v), sum(v)) for k, v in sorted(groups.items())]

    def template_markdown(self) -> str:
        lines = [
            f"| {self.group_label} | questions | passed | pass rate |",
            "| --- | --- | --- | --- |",
        ]
        for name, n, ok in self.by_template():
            lines.append(f"| {name} | {n} | {ok} | {ok / n:.1%} |")
        return "\n".join(lines)


def _numeric(v: Any) -> bool:
    return isinstance(v, bool | int | float)


def write_eval_records(home: Path, split: str, records: Sequence[ModelEvalRecord]) -> Path:
    """Replace this model's records for these tasks in this family and role in the split's
    partition (`ModelEvalRecord.scope`); other models', families' and roles' records stay,
    so base and trained models sit side by side and a re-run gives the same lake."""
    root = lake.lake_root(home)
    fresh = {r.scope for r in records}
    stored = lake.read_records(EVAL_ASSET, ModelEvalRecord, root, split=split)
    kept = [r for r in stored if r.scope not in fresh]  # type: ignore[attr-defined]
    rows = sorted([*kept, *records], key=lambda r: (*r.scope, r.id))  # type: ignore[attr-defined]
    return lake.write_records(EVAL_ASSET, rows, ModelEvalRecord, root, split=split)
