"""The capped state: merge, render, compaction, versioned SQLite storage, bad updates."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from verilearn_assets.refactor.config import StateSettings
from verilearn_assets.refactor.rollout.state import (
    State,
    StateError,
    StateStore,
    StateUpdate,
    compact,
    count_tokens,
    merge,
    parse_update,
    render,
)

SETTINGS = StateSettings(token_budget=400)


def test_merge_appends_trims_history_and_resolves() -> None:
    state = State(goals=["use X | None"], open_issues=["tests unknown"])
    for i in range(5):
        state = merge(state, StateUpdate(history=[f"step {i}"]), SETTINGS)
    assert state.history == ["step 2", "step 3", "step 4"]  # at most 3, newest kept
    state = merge(
        state, parse_update({"resolved": ["tests unknown"], "next_focus": "pkg/a.py"}), SETTINGS
    )
    assert state.open_issues == [] and state.next_focus == "pkg/a.py"
    assert state.goals == ["use X | None"]
    text = render(state)
    assert "next_focus: pkg/a.py" in text and "- step 4" in text


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"mood": "happy"}, "mood"),
        ({"decisions": "not a list"}, "decisions"),
        ({"history": ["x" * 300]}, "history"),
        ({"next_focus": 3}, "next_focus"),
        ("[1, 2]", "<root>"),
        ("{not json", "<root>"),
    ],
)
def test_bad_update_is_rejected_naming_the_field_and_old_state_kept(
    tmp_path: Path, raw: object, field: str
) -> None:
    store = StateStore(tmp_path / "s.sqlite")
    store.apply_update("t", {"goals": ["g"]}, SETTINGS)
    with pytest.raises(StateError) as err:
        store.apply_update("t", raw, SETTINGS)  # type: ignore[arg-type]
    assert err.value.field == field and repr(field) in str(err.value)
    state, version = store.load("t")
    assert version == 1 and state == State(goals=["g"])


def test_compaction_fits_the_budget_deterministically() -> None:
    big = State(
        goals=["g" * 200],
        decisions=[f"decision {i} " + "d" * 200 for i in range(8)],
        hypotheses=[f"hyp {i} " + "h" * 200 for i in range(8)],
    )
    assert count_tokens(render(big)) > 400
    small = compact(big, 400)
    assert count_tokens(render(small)) <= 400
    assert small == compact(big, 400)
    assert small.goals == big.goals  # goals go last
    assert small.hypotheses == []  # hypotheses go first
    assert small.decisions == big.decisions[len(big.decisions) - len(small.decisions) :]


def test_versions_are_kept_per_step_and_concurrent_writers_are_safe(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    StateStore(path).close()

    def writer(n: int) -> None:
        store = StateStore(path)
        for i in range(10):
            store.save("shared", State(decisions=[f"w{n}-{i}"]))
        store.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store = StateStore(path)
    versions = store.versions("shared")
    assert [v for v, _, _ in versions] == list(range(1, 41))
    assert store.load("shared")[1] == 40
    assert store.load("other") == (State(), 0)
