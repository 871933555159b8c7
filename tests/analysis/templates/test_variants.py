"""Every template variant carries its parent's alternatives (issue 10, item 1).

A variant rewords its parent's computation; a reading the parent accepts stays accepted
unless the variant's own wording rules it out, and then the ruling words must be in it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from question_helpers import make_table, small_cfg

from verilearn_assets.analysis.sources.template import REGISTRY
from verilearn_assets.analysis.sources.template.base import TableView


def _frame(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    x = rng.gamma(4.0, 2.0, n) + 1
    return pd.DataFrame(
        {
            "arm": rng.choice(["drug", "placebo"], n),
            "sex": rng.choice(["f", "m"], n),
            "x": x,
            "y": x * 1.5 + rng.gamma(2.0, 1.0, n),
            "z": rng.gamma(3.0, 1.0, n) + 0.5,
            "w": np.sqrt(x) + rng.gamma(1.0, 1.0, n),
        }
    )


def test_every_variant_inherits_its_parents_alternatives(tmp_path):
    table = make_table(_frame(), tmp_path)
    view = TableView(table.columns, table.n_rows, table.path, small_cfg())
    variants = [t for t in REGISTRY.values() if t.variant_of]
    assert len(variants) >= 8
    for tpl in variants:
        parent = REGISTRY[tpl.variant_of]
        mine, theirs = tpl.build(view), parent.build(view)
        assert len(mine) == len(theirs) >= 1, tpl.name
        for c_var, c_par in zip(mine, theirs, strict=True):
            assert c_par.alternatives, f"{parent.name}: no alternative to inherit"
            have = {a.description: a.code for a in c_var.alternatives}
            for alt in c_par.alternatives:
                if alt.description in have:
                    assert have[alt.description] == alt.code, (tpl.name, alt.description)
                    continue
                ruled = [w for prefix, w in tpl.excludes if alt.description.startswith(prefix)]
                assert ruled, f"{tpl.name} drops {parent.name}'s {alt.description!r}"
                assert all(w in c_var.question for w in ruled), (tpl.name, ruled)


def test_exclude_target_ttest_accepts_student():
    """The audit's case: 'with a t-test' must accept Student as well as Welch."""
    tpl = REGISTRY["ttest_discovered_groups__exclude_target"]
    assert tpl.excludes == ()
    assert REGISTRY["ttest_discovered_groups__method_explicit"].excludes
