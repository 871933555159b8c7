"""The template library: registry and the entry point that applies templates to a table.

Each family lives in its own module; `REGISTRY` maps a template name to its `Template`.
`apply_templates` returns the candidates of every applicable template and, for every other
template, the reason it does not apply — a template never just disappears from the record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verilearn_assets.analysis.config import QuestionsConfig
from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.template import (
    correlation,
    descriptive,
    groups,
    missingness,
    normality,
    outliers,
    regression,
    workflows,
)
from verilearn_assets.analysis.sources.template.base import NotApplicable, TableView, Template
from verilearn_assets.core.records import ColumnProfile

REGISTRY: dict[str, Template] = {}
for _module in (
    descriptive,
    missingness,
    outliers,
    correlation,
    groups,
    normality,
    regression,
    workflows,
):
    for _tpl in _module.TEMPLATES:
        if _tpl.name in REGISTRY:
            raise RuntimeError(f"template {_tpl.name!r} registered twice")
        REGISTRY[_tpl.name] = _tpl


@dataclass
class TemplateOutcome:
    candidates: list[Candidate] = field(default_factory=list)
    not_applicable: dict[str, str] = field(default_factory=dict)  # template -> reason


def enabled_templates(cfg: QuestionsConfig) -> list[Template]:
    names = cfg.template.enabled if cfg.template.enabled is not None else list(REGISTRY)
    unknown = [n for n in [*names, *cfg.template.disabled] if n not in REGISTRY]
    if unknown:
        raise ValueError(
            f"questions config: unknown template(s) {unknown}; known: {sorted(REGISTRY)}"
        )
    return [REGISTRY[n] for n in names if n not in cfg.template.disabled]


def apply_templates(
    columns: list[ColumnProfile], n_rows: int, table_path: str, cfg: QuestionsConfig
) -> TemplateOutcome:
    """Candidates from every enabled template; not-applicable ones with their reason."""
    view = TableView(columns=columns, n_rows=n_rows, path=table_path, cfg=cfg)
    outcome = TemplateOutcome()
    table_reason = _table_reason(view)
    for tpl in enabled_templates(cfg):
        if table_reason:
            outcome.not_applicable[tpl.name] = table_reason
            continue
        try:
            found = tpl.build(view)
        except NotApplicable as exc:
            outcome.not_applicable[tpl.name] = str(exc)
            continue
        if not found:
            outcome.not_applicable[tpl.name] = "no eligible column choice"
        outcome.candidates.extend(found)
    return outcome


def _table_reason(view: TableView) -> str | None:
    el = view.cfg.eligibility
    if len(view.columns) < el.min_columns:
        return f"table has {len(view.columns)} column(s), templates need {el.min_columns}"
    if view.n_rows < el.min_rows:
        return f"table has {view.n_rows} rows, templates need {el.min_rows}"
    return None


__all__ = [
    "REGISTRY",
    "TemplateOutcome",
    "apply_templates",
    "enabled_templates",
    "NotApplicable",
    "TableView",
    "Template",
]
