"""`submit` normalisation and the stable hook hash (host side, no jail needed)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from verilearn_assets.core.config import ConfigError
from verilearn_assets.core.records import canonical_json
from verilearn_assets.core.sandbox.config import load_sandbox_config
from verilearn_assets.core.sandbox.runtime import Recorder, to_jsonable, value_hash


def test_frames_and_series_normalise_to_json() -> None:
    frame = pd.DataFrame({"a": [1, 2], "b": [0.5, np.nan]})
    assert to_jsonable(pd.DataFrame({"x": [7]})) == 7  # 1x1 frame -> scalar
    assert to_jsonable(frame) == [{"a": 1, "b": 0.5}, {"a": 2, "b": None}]
    assert to_jsonable(frame.set_index("a")) == {"1": 0.5, "2": None}  # one column
    assert to_jsonable(pd.Series([1, 2])) == [1, 2]  # default index -> list
    assert to_jsonable(pd.Series({"x": np.int64(3), "y": np.float32(1.5)})) == {"x": 3, "y": 1.5}
    assert to_jsonable(np.int64(5)) == 5 and type(to_jsonable(np.int64(5))) is int
    assert to_jsonable(np.bool_(True)) is True
    assert to_jsonable(pd.Timestamp("2024-01-02")) == "2024-01-02T00:00:00"
    assert to_jsonable({1: np.array([1.0, np.inf])}) == {"1": [1.0, None]}
    assert to_jsonable({3, 1, 2}) == [1, 2, 3]


def test_unsupported_values_are_refused_clearly() -> None:
    with pytest.raises(TypeError, match="cannot submit a value of type object"):
        to_jsonable(object())


def test_value_hash_is_stable_across_processes_and_sensitive_to_data() -> None:
    frame = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    here = value_hash(frame)
    assert value_hash(frame.copy()) == here
    assert value_hash(frame.assign(a=[1, 2, 4])) != here
    assert value_hash(frame.rename(columns={"b": "c"})) != here
    code = (
        "import pandas as pd\nfrom verilearn_assets.core.sandbox.runtime import value_hash\n"
        "print(value_hash(pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})), "
        "value_hash({'k': [1.5, None]}))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123"},
    ).stdout.split()
    assert other == [here, value_hash({"k": [1.5, None]})]


def test_recorder_emits_canonical_submissions_and_hooks() -> None:
    events: list[dict] = []
    rec = Recorder(events.append, summary_chars=60, submission_cap=2000)
    frame = pd.DataFrame({"a": range(50)})
    assert rec.hook(frame, "top = df.head()") is frame
    rec.submit(pd.Series({"b": 2.0, "a": 1}))
    assert events[0]["hook"]["name"] == "top" and len(events[0]["hook"]["summary"]) <= 60
    assert events[1] == {"ev": "submit", "value": canonical_json({"a": 1.0, "b": 2.0})}
    with pytest.raises(ValueError, match="over the cap"):
        rec.submit("x" * 5000)


def test_reference_config_loads_and_unknown_keys_are_named(tmp_path) -> None:
    config = load_sandbox_config()
    assert config.backend in ("auto", "docker", "bwrap") and config.slots >= 1
    (tmp_path / "sandbox.yaml").write_text("backend: auto\nslotz: 3\n")
    with pytest.raises(ConfigError, match=r"sandbox.yaml: field 'slotz'"):
        load_sandbox_config(tmp_path)
