"""The screen's tie probes (issue 10, generation speed): a tie variant is skipped only when
the reference met no tie, and the verdicts equal those of running every variant."""

from __future__ import annotations

import pandas as pd

from verilearn_assets.analysis.screen.config import ScreenConfig
from verilearn_assets.analysis.screen.conventions import RunCache, probed_reference
from verilearn_assets.analysis.screen.run import screen
from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.template.base import INTEGER, NUMBER

# 'g': 'a' and 'b' both appear three times (a tied mode); 'x' has one largest value and a
# tied smallest (1.0 twice)
FRAME = pd.DataFrame(
    {"g": ["a", "b", "a", "b", "a", "b", "c"], "x": [1.0, 1.0, 4.0, 8.0, 16.0, 32.0, 64.0]}
)


def cand(question: str, body: str, schema=NUMBER) -> Candidate:
    line = f"v = {body}"
    return Candidate(
        source="procedural",
        question=question,
        question_mechanical=question,
        answer_schema=schema,
        code=f"# {question}\n{line}\nhook(v, {line!r}, name='v')\nsubmit(v)\n",
        n_steps=1,
        difficulty="easy",
    )


MODE = cand(
    "Mean x in the modal g?", "float(df.loc[df['g'] == df['g'].mode().iloc[0], 'x'].mean())"
)
ARGMAX = cand("Row of the largest x?", "int(df['x'].idxmax())", INTEGER)
ARGMIN = cand("Row of the smallest x?", "int(df['x'].idxmin())", INTEGER)


def test_probe_flags_only_the_ties_the_reference_meets():
    assert probed_reference(MODE.code, FRAME) == (7.0, frozenset({"mode_largest_tied"}))
    assert probed_reference(ARGMAX.code, FRAME) == (6, frozenset())
    assert probed_reference(ARGMIN.code, FRAME) == (0, frozenset({"argmin_last_tied"}))


def test_probed_screen_reaches_the_same_verdicts_as_running_every_variant():
    cands = [MODE, ARGMAX, ARGMIN]
    fast_ok, fast_out = screen(cands, FRAME, ScreenConfig(perturb_sources=[]))
    slow_ok, slow_out = screen(cands, FRAME, ScreenConfig(perturb_sources=[], probe_ties=False))
    verdict = lambda cs: {c.question: c.rejection_reason for c in cs}  # noqa: E731
    assert verdict(fast_ok) == verdict(slow_ok) and verdict(fast_out) == verdict(slow_out)
    assert {c.question for c in fast_out} == {MODE.question, ARGMIN.question}
    fast = {c.question: c.conventions for c in [*fast_ok, *fast_out]}
    slow = {c.question: c.conventions for c in [*slow_ok, *slow_out]}
    assert fast[ARGMAX.question] == ["argmax_last_tied:untied"]  # skipped: no tie met
    assert slow[ARGMAX.question] == ["argmax_last_tied:same"]  # run: same answer
    assert fast[MODE.question] == slow[MODE.question] == ["mode_largest_tied:moved"]


def test_wordings_of_one_computation_run_once_per_table():
    cache, runs = RunCache(), []

    def compute():
        runs.append(1)
        return 1.0

    other = ARGMAX.code.replace("# Row of the largest x?", "# Which row holds the maximum?")
    assert cache.get("run", ARGMAX.code, compute) == cache.get("run", other, compute) == 1.0
    assert len(runs) == 1


def test_probes_survive_single_quoted_hook_literals():
    # a statement with double quotes is hooked as a single-quoted literal, and the probe
    # rewrite lands inside it too: it must stay valid Python
    code = cand("Row of the largest x?", 'int(df["x"].idxmax())', INTEGER).code
    assert "hook(v, 'v = int(df[\"x\"].idxmax())'" in code
    assert probed_reference(code, FRAME) == (6, frozenset())
