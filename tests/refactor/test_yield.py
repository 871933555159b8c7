"""The demo's yield bar, checked from the generation plan without running the whole job.

The issue's done-when: `make demo` on the bundled corpora with the program teacher produces
at least 200 verified steps across splits. The program teacher replays each accepted
task's reference actions, one verified step each, so the yield is the reference steps of
the accepted tasks. Planning is cheap (one jailed ast-grep scan per rule and repository);
running every candidate is the demo's job. Here: the plan of the repository's own settings
reaches the bar in every split, and one candidate of each kind runs for real and is
accepted (a kind that broke would drop a whole share of the yield).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from refactor_support import refactor_config

from verilearn_assets.refactor.sources.candidate import Candidate, run_candidate
from verilearn_assets.refactor.sources.catalog import load_corpus, load_rules
from verilearn_assets.refactor.sources.plan import candidates

DEMO_MIN_VERIFIED_STEPS = 200  # issue 13, "Done when"


def _kind(candidate: Candidate) -> str:
    rule, paths = candidate.steps[0]
    if candidate.source == "template":
        return "template"
    if len(candidate.steps) == 2:
        return "two rules"
    if rule.id.startswith("rename-"):
        return "rename"
    return "one function" if "@" in rule.id else "one file"


def test_planned_steps_reach_the_demo_bar_and_each_kind_is_accepted(tmp_path: Path) -> None:
    config = refactor_config("bwrap", tmp_path)  # configs/refactor.yaml's generation settings
    repos, rules = load_corpus(), load_rules()
    steps: Counter[str] = Counter()
    first: dict[str, Candidate] = {}
    for source in ("template", "procedural"):
        for cand in candidates(source, repos, rules, config, config.generation.max_pairs_per_repo):
            steps[cand.repo.split] += len(cand.steps)
            first.setdefault(_kind(cand), cand)
    assert set(steps) == {"train", "dev", "test"} and all(steps.values()), steps
    assert sum(steps.values()) >= DEMO_MIN_VERIFIED_STEPS, steps
    assert set(first) == {"template", "two rules", "one file", "one function", "rename"}
    for kind, cand in sorted(first.items()):
        task = run_candidate(cand, config, list(cand.repo.test_command))  # its own runner
        assert task.status == "accepted", (kind, task.instruction, task.reason)
        assert len(task.reference_actions) == len(cand.steps)
