"""An experiment's figures: per arm × split × group pass@k / pass^k with bootstrap intervals,
and the verdict on the card's success criterion (pure: numbers in, numbers out).

Each task contributes its own estimate (`pass_at_k.pass_at_k(n, c, k)` from its n samples,
c correct), so a cell's value is the mean over its tasks and its interval is a percentile
bootstrap over tasks (tasks are the unit that varies; samples of one task are not
independent evidence). A difference between two cells on the same tasks (two arms on one
split) is bootstrapped paired, by task; on different tasks (two splits) independently.
Resampling is seeded by the card, so the same records give the same intervals.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verilearn_assets.core.eval_records import ModelEvalRecord
from verilearn_assets.training.eval.pass_at_k import pass_at_k, pass_hat_k, record_counts
from verilearn_assets.training.experiments.card import (
    Cell,
    ExperimentCard,
    SuccessCriterion,
    parse_metric,
)

GROUPINGS = ("all", "family", "source", "template")


@dataclass(frozen=True)
class TaskCounts:
    """One task's n samples and c correct, with the attributes tables group by."""

    task: str
    n: int
    c: int
    family: str
    source: str
    template: str

    def value(self, metric: str) -> float:
        kind, k = parse_metric(metric)
        return (
            pass_at_k(self.n, self.c, k) if kind == "pass_at_k" else pass_hat_k(self.n, self.c, k)
        )

    def group(self, by: str) -> str:
        return "(all)" if by == "all" else str(getattr(self, by))


def task_counts(records: Iterable[ModelEvalRecord], where: str = "") -> list[TaskCounts]:
    """One entry per task; a task twice in one arm × split is an error (it would count
    twice in every mean)."""
    out: dict[str, TaskCounts] = {}
    for r in records:
        if r.question_id in out:
            raise ValueError(f"{where}: task {r.question_id} has two model_eval records")
        try:
            n, c = record_counts(r.extra, r.passed, f"{where}: model_eval record {r.id}")
        except ValueError as exc:
            raise ValueError(f"{where}: model_eval record {r.id}: {exc}") from exc
        out[r.question_id] = TaskCounts(r.question_id, n, c, r.family, r.source, r.template_family)
    return list(out.values())


def bootstrap_interval(
    values: Sequence[float], rng: np.random.Generator, resamples: int, confidence: float
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values` (resampled with replacement)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("bootstrap of no values")
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return float(lo), float(hi)


def difference_interval(
    treatment: dict[str, float],
    control: dict[str, float],
    rng: np.random.Generator,
    resamples: int,
    confidence: float,
    paired: bool,
) -> tuple[float, tuple[float, float]]:
    """(mean difference, its interval) of two cells keyed by task id: `paired` (the same
    tasks, one split) resamples tasks with both arms' values together, else each cell is
    resampled on its own."""
    if paired:
        if set(treatment) != set(control):
            raise ValueError("a paired difference needs the same tasks on both sides")
        diffs = [treatment[k] - control[k] for k in sorted(treatment)]
        return float(np.mean(diffs)), bootstrap_interval(diffs, rng, resamples, confidence)
    t = np.asarray(list(treatment.values()), dtype=float)
    c = np.asarray(list(control.values()), dtype=float)
    bt = t[rng.integers(0, t.size, size=(resamples, t.size))].mean(axis=1)
    bc = c[rng.integers(0, c.size, size=(resamples, c.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2 * 100
    lo, hi = np.percentile(bt - bc, [tail, 100 - tail])
    return float(t.mean() - c.mean()), (float(lo), float(hi))


def cell_tasks(tasks: Sequence[TaskCounts], by: str, group: str | None) -> list[TaskCounts]:
    return tasks if by == "all" else [t for t in tasks if t.group(by) == group]


def table_rows(
    arm: str,
    split: str,
    tasks: Sequence[TaskCounts],
    metrics: Sequence[str],
    rng: np.random.Generator,
    resamples: int,
    confidence: float,
) -> list[dict[str, Any]]:
    """One row per grouping value (all, each family, source, template) of one arm × split:
    tasks, samples per task, every pass@k/pass^k for k <= n, each metric's interval."""
    rows = []
    for by in GROUPINGS:
        for group in sorted({t.group(by) for t in tasks}):
            sel = cell_tasks(tasks, by, None if by == "all" else group)
            n_min = min(t.n for t in sel)
            row: dict[str, Any] = {
                "arm": arm,
                "split": split,
                "by": by,
                "group": group,
                "tasks": len(sel),
                "n": n_min,
                "correct": sum(t.c for t in sel),
                "pass_at_k": {
                    k: float(np.mean([pass_at_k(t.n, t.c, k) for t in sel]))
                    for k in range(1, n_min + 1)
                },
                "pass_hat_k": {
                    k: float(np.mean([pass_hat_k(t.n, t.c, k) for t in sel]))
                    for k in range(1, n_min + 1)
                },
                "intervals": {},
            }
            for metric in metrics:
                if parse_metric(metric)[1] <= n_min:
                    vals = [t.value(metric) for t in sel]
                    row["intervals"][metric] = list(
                        bootstrap_interval(vals, rng, resamples, confidence)
                    )
            rows.append(row)
    return rows


def verdict(
    criterion: SuccessCriterion,
    cells: dict[tuple[str, str], list[TaskCounts]],
    default_split: str,
    rng: np.random.Generator,
    resamples: int,
) -> dict[str, Any]:
    """The criterion decided on the evaluated tasks: `met` true/false, or `no data` when a
    side has no evaluated task (named)."""

    def side(cell: Cell) -> tuple[dict[str, float], dict[str, Any]]:
        split = cell.split or default_split
        tasks = cell_tasks(cells.get((cell.arm, split), []), cell.by, cell.group)
        values = {t.task: t.value(criterion.metric) for t in tasks}
        info = {"arm": cell.arm, "split": split, "by": cell.by, "group": cell.group}
        info |= {
            "tasks": len(values),
            "value": float(np.mean(list(values.values()))) if values else None,
        }
        return values, info

    treat, t_info = side(criterion.treatment)
    ctrl, c_info = side(criterion.control)
    if t_info["split"] == c_info["split"] and treat and ctrl and set(treat) != set(ctrl):
        only_t, only_c = sorted(set(treat) - set(ctrl)), sorted(set(ctrl) - set(treat))
        raise ValueError(
            f"success: arms {t_info['arm']} and {c_info['arm']} were evaluated on different "
            f"tasks of split {t_info['split']} (only {t_info['arm']}: {only_t[:5]}; only "
            f"{c_info['arm']}: {only_c[:5]}): a comparison needs the same tasks"
        )
    out: dict[str, Any] = {
        "criterion": criterion.text(),
        "metric": criterion.metric,
        "min_points": criterion.min_points,
        "confidence": criterion.confidence,
        "treatment": t_info,
        "control": c_info,
    }
    missing = [f"{i['arm']} on {i['split']}" for i in (t_info, c_info) if not i["tasks"]]
    if missing:
        return out | {
            "verdict": "no data",
            "met": None,
            "reasons": [f"no task evaluated: {missing}"],
        }
    paired = t_info["split"] == c_info["split"]
    diff, (lo, hi) = difference_interval(treat, ctrl, rng, resamples, criterion.confidence, paired)
    points = round(diff * 100, 6)
    reasons = []
    if points < criterion.min_points:
        reasons.append(f"difference {points:+.1f} points < {criterion.min_points:g}")
    if criterion.interval_excludes_zero and lo <= 0:
        reasons.append(f"interval [{lo * 100:+.1f}, {hi * 100:+.1f}] points does not lie above 0")
    met = not reasons
    return out | {
        "difference_points": points,
        "interval_points": [round(lo * 100, 6), round(hi * 100, 6)],
        "paired": paired,
        "met": met,
        "verdict": "met" if met else "not met",
        "reasons": reasons,
    }


def summarize(
    card: ExperimentCard,
    evaluations: dict[str, dict[str, list[ModelEvalRecord]]],
    arms: dict[str, dict[str, Any]],
    splits: list[str] | None = None,
) -> dict[str, Any]:
    """summary.json's content: the card's claim, per arm its training and model, the table
    rows of every arm × split × group, and the verdict. `evaluations`: arm -> split -> records;
    `splits`: the splits evaluated (default the card's; a criterion side without a split
    is on the first)."""
    splits = splits or card.evaluation.splits
    rng = np.random.default_rng(card.seed)
    conf = card.success.confidence
    cells = {
        (arm, split): task_counts(recs, f"arm {arm} [{split}]")
        for arm, by_split in evaluations.items()
        for split, recs in by_split.items()
    }
    rows = []
    for (arm, split), tasks in sorted(cells.items()):
        if tasks:
            rows.extend(table_rows(arm, split, tasks, card.metrics, rng, card.bootstrap, conf))
    return {
        "experiment": card.name,
        "hypothesis": card.hypothesis,
        "metrics": card.metrics,
        "evaluation": card.evaluation.model_dump(mode="json"),
        "arms": arms,
        "table": rows,
        "splits": splits,
        "verdict": verdict(card.success, cells, splits[0], rng, card.bootstrap),
    }


def metric_value(row: dict[str, Any], metric: str) -> float | None:
    kind, k = parse_metric(metric)
    v = row[kind].get(k, row[kind].get(str(k)))
    return None if v is None else float(v)


def markdown(summary: dict[str, Any]) -> str:
    """summary.md: the hypothesis, the table (overall rows first) and the verdict."""
    metrics = summary["metrics"]
    lines = [
        f"# Experiment {summary['experiment']}",
        "",
        f"**Hypothesis.** {summary['hypothesis']}",
        "",
        "| arm | split | group | tasks | n | " + " | ".join(metrics) + " |",
        "| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in metrics) + " |",
    ]
    for row in sorted(summary["table"], key=lambda r: (GROUPINGS.index(r["by"]), r["group"])):
        cells = []
        for m in metrics:
            v = metric_value(row, m)
            ci = row["intervals"].get(m)
            cells.append(
                "n/a" if v is None else f"{v:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
            )
        group = row["group"] if row["by"] == "all" else f"{row['by']}={row['group']}"
        lines.append(
            f"| {row['arm']} | {row['split']} | {group} | {row['tasks']} | {row['n']} | "
            + " | ".join(cells)
            + " |"
        )
    v = summary["verdict"]
    lines += ["", f"**Criterion.** {v['criterion']}", ""]
    if v["verdict"] == "no data":
        lines.append(f"**Verdict: no data.** {'; '.join(v['reasons'])}")
    else:
        t, c = v["treatment"], v["control"]
        lo, hi = v["interval_points"]
        lines.append(
            f"**Verdict: {v['verdict']}.** {v['metric']} {t['arm']} ({t['split']}) "
            f"{t['value']:.3f} vs {c['arm']} ({c['split']}) {c['value']:.3f}: difference "
            f"{v['difference_points']:+.1f} points, {v['confidence']:.0%} interval "
            f"[{lo:+.1f}, {hi:+.1f}] ({'paired' if v['paired'] else 'independent'} bootstrap"
            f" over tasks)" + (f"; {'; '.join(v['reasons'])}" if v["reasons"] else "")
        )
    if summary.get("plot_note"):
        lines += ["", summary["plot_note"]]
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, Any], path: Path) -> tuple[Path | None, str | None]:
    """A bar per arm × split of the first metric with its interval; (None, why) without
    matplotlib (an optional dependency here: the tables are the result)."""
    try:
        import matplotlib
    except ImportError:
        return None, "No plot: matplotlib is not installed (pip install matplotlib)."
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = summary["metrics"][0]
    rows = [r for r in summary["table"] if r["by"] == "all"]
    if not rows:
        return None, "No plot: no arm was evaluated."
    labels = [f"{r['arm']}\n{r['split']}" for r in rows]
    values = [metric_value(r, metric) or 0.0 for r in rows]
    ci = [r["intervals"].get(metric, [v, v]) for r, v in zip(rows, values, strict=True)]
    err = np.array([[v - lo for (lo, _), v in zip(ci, values, strict=True)],
                    [hi - v for (_, hi), v in zip(ci, values, strict=True)]])  # fmt: skip
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(rows)), 3.5), dpi=100)
    try:
        ax.bar(labels, values, yerr=np.clip(err, 0, None), capsize=4)
        ax.set_ylim(0, 1)
        ax.set_ylabel(metric)
        ax.set_title(f"{summary['experiment']}: {metric} (bootstrap interval)")
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path, None


def plot_curves(summary: dict[str, Any], path: Path) -> Path | None:
    """The GRPO arms' outcome curves (`rewards/outcome/mean` per step) on one plot; None
    when no arm trained GRPO or matplotlib is not installed."""
    curves = {
        f"{arm}/{stage}": run["outcome_curve"]
        for arm, info in summary["arms"].items()
        for stage, run in info.get("runs", {}).items()
        if run.get("outcome_curve")
    }
    try:
        import matplotlib
    except ImportError:
        return None
    if not curves:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    try:
        for label, pts in curves.items():
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, marker=".", label=label)
        ax.set_xlabel("step")
        ax.set_ylabel("outcome reward (mean)")
        ax.set_title(summary["experiment"])
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path


def write_summary(summary: dict[str, Any], out: Path) -> dict[str, Path]:
    """summary.json, summary.md and (when matplotlib is there) plots/pass_rates.png and
    plots/reward_curves.png in `out`."""
    png, note = plot(summary, out / "plots" / "pass_rates.png")
    summary["plot"] = str(png) if png else None
    summary["plot_note"] = note
    curves = plot_curves(summary, out / "plots" / "reward_curves.png")
    summary["curves_plot"] = str(curves) if curves else None
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    (out / "summary.md").write_text(markdown(summary))
    paths = {"json": out / "summary.json", "md": out / "summary.md"}
    if png:
        paths["plot"] = png
    return paths
