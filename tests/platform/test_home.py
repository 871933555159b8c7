"""One answer to "where is the home": explicit path, else VERILEARN_HOME, else ./.verilearn."""

from __future__ import annotations

from pathlib import Path

import pytest

from verilearn_assets.core.home import expand_home, resolve_home


def test_explicit_wins_over_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("VERILEARN_HOME", str(tmp_path / "env"))
    assert resolve_home(tmp_path / "flag") == (tmp_path / "flag").resolve()
    assert resolve_home() == (tmp_path / "env").resolve()


def test_default_is_dot_verilearn_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("VERILEARN_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert resolve_home() == tmp_path.resolve() / ".verilearn"
    assert not (tmp_path / ".verilearn").exists()  # resolving creates nothing


def test_configured_paths_expand_against_the_same_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("VERILEARN_HOME", str(tmp_path / "h"))
    monkeypatch.setenv("SOME_DIR", "logs")
    want = resolve_home() / "logs" / "x.jsonl"
    assert expand_home("${VERILEARN_HOME}/$SOME_DIR/x.jsonl") == want
    assert expand_home("$VERILEARN_HOME/logs/x.jsonl") == want
