"""Action validation: the published JSON schema and the pydantic models agree."""

from __future__ import annotations

import jsonschema
import pytest

from verilearn_assets.refactor.verify.actions import (
    ActionRejected,
    action_json_schema,
    parse_action,
)

GOOD = [
    {"kind": "run", "pattern": "print($A)", "rewrite": "log($A)", "lang": "python"},
    {"kind": "rule", "rule": {"id": "x", "language": "python", "rule": {"pattern": "a"}}},
    {"kind": "command", "argv": ["pytest", "-q"]},
    {"kind": "run", "pattern": "f($$$ARGS)", "rewrite": "g($$$ARGS)", "paths": ["pkg/a.py"]},
]
BAD_BY_SCHEMA = [
    ({"kind": "shell", "argv": ["ls"]}, "schema"),
    ({"kind": "run", "pattern": "p"}, "schema"),  # no rewrite
    ({"kind": "run", "pattern": "p", "rewrite": "r", "lang": "klingon"}, "schema"),
    ({"kind": "command", "argv": []}, "schema"),
    ({"kind": "run", "pattern": "p", "rewrite": "r", "extra": 1}, "schema"),
]


@pytest.mark.parametrize("action", GOOD)
def test_good_actions_pass_schema_and_model(action: dict) -> None:
    jsonschema.validate(action, action_json_schema())
    assert parse_action(action).kind == action["kind"]


@pytest.mark.parametrize(("action", "failure"), BAD_BY_SCHEMA)
def test_bad_actions_fail_schema_and_model(action: dict, failure: str) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(action, action_json_schema())
    with pytest.raises(ActionRejected) as err:
        parse_action(action)
    assert err.value.failure == failure and "field" in str(err.value)


@pytest.mark.parametrize(
    "action",
    [
        {"kind": "rule", "rule": {"id": "x", "language": "klingon", "rule": {"pattern": "a"}}},
        {"kind": "rule", "rule": {"id": "x", "language": "python", "rule": {}, "bogus": 1}},
        {"kind": "rule", "rule": "id: [unclosed"},
    ],
)
def test_rule_content_checked_beyond_the_schema(action: dict) -> None:
    with pytest.raises(ActionRejected) as err:
        parse_action(action)
    assert err.value.failure == "schema"


@pytest.mark.parametrize(
    ("path", "failure"),
    [("../x", "disallowed"), ("/etc", "disallowed"), ("a/../../b", "disallowed"),
     ("~/x", "disallowed"), ("-rf", "schema")],
)  # fmt: skip
def test_paths_leaving_the_workspace_are_refused(path: str, failure: str) -> None:
    with pytest.raises(ActionRejected) as err:
        parse_action({"kind": "run", "pattern": "p", "rewrite": "r", "paths": [path]})
    assert err.value.failure == failure and repr(path) in str(err.value)


def test_action_text_must_be_json() -> None:
    with pytest.raises(ActionRejected, match="not JSON") as err:
        parse_action("not json {")
    assert err.value.failure == "schema"
