"""Actions a refactoring agent may take, validated before anything runs.

Three shapes: an ast-grep YAML rule (`ast-grep scan --rule … --update-all`), an ast-grep
pattern rewrite (`ast-grep run -p … -r … --update-all`) and a plain command whose binary
must be on the allowlist. Paths are relative to the workspace; anything that could name a
place outside it is refused here, with the failure class `disallowed`.
"""

from __future__ import annotations

import json
import posixpath
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from verilearn_assets.refactor.config import ALLOWED_BINARIES
from verilearn_assets.refactor.verify.languages import alias_pattern
from verilearn_assets.refactor.verify.rule_files import (
    RuleFile,
    RuleFileError,
    parse_rule_file,
    rule_text,
)

RULE_FILE_IN_JAIL = "/run/refactor/rule.yml"


class ActionRejected(ValueError):
    """An action refused before running; `failure` is the reward's failure class."""

    def __init__(self, failure: str, message: str) -> None:
        super().__init__(message)
        self.failure = failure


def _workspace_path(path: str) -> str:
    """A path that stays inside the workspace: relative, normalised, no `..`."""
    if not path or "\x00" in path:
        raise ValueError(f"path {path!r} is empty or has a NUL byte")
    norm = posixpath.normpath(path)
    if path.startswith(("/", "~")) or norm == ".." or norm.startswith("../"):
        raise ValueError(f"path {path!r} points outside the workspace")
    if norm.startswith("-"):
        raise ValueError(f"path {path!r} would be read as an option")
    return norm


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    paths: list[str] = Field(default_factory=list, max_length=32)

    @field_validator("paths")
    @classmethod
    def _inside(cls, value: list[str]) -> list[str]:
        return [_workspace_path(p) for p in value]

    def path_args(self) -> list[str]:
        return list(self.paths) or ["."]


class RuleAction(_Action):
    """An ast-grep rule file, applied to every match (`ast-grep scan -r FILE -U`): YAML text
    as ast-grep takes it (several documents separated by `---`, `utils`, `transform`,
    `rewriters`, `fix` objects, any language name), a mapping (one document) or a list of
    mappings. Text goes to ast-grep verbatim; what is checked before is `rule_files`'."""

    kind: Literal["rule"] = "rule"
    rule: dict[str, Any] | list[dict[str, Any]] | str
    _file: RuleFile = PrivateAttr()

    @model_validator(mode="after")
    def _checked(self) -> RuleAction:
        self._file = parse_rule_file(rule_text(self.rule))
        return self

    @property
    def rule_file(self) -> RuleFile:
        """The documents' ids, languages and fixes, and the exact text ast-grep reads."""
        return self._file

    def rule_yaml(self) -> str:
        return self._file.text

    def argv(self, rule_path: str = RULE_FILE_IN_JAIL) -> list[str]:
        return ["ast-grep", "scan", "--rule", rule_path, "--update-all", *self.path_args()]


class PatternAction(_Action):
    """`ast-grep run -p PATTERN -r REWRITE -l LANG --update-all`."""

    kind: Literal["run"] = "run"
    pattern: str = Field(min_length=1, max_length=2000)
    rewrite: str = Field(max_length=2000)
    # any of ast-grep's names in any case (`languages.py`); the schema lists them
    lang: str = Field(default="python", pattern=alias_pattern())

    def argv(self, rule_path: str = RULE_FILE_IN_JAIL) -> list[str]:
        return [
            "ast-grep",
            "run",
            "--pattern",
            self.pattern,
            "--rewrite",
            self.rewrite,
            "--lang",
            self.lang,
            "--update-all",
            *self.path_args(),
        ]


class CommandAction(BaseModel):
    """A command line; its binary must be on the allowlist (checked at run time against
    the configured list, which may be narrower than the built-in one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["command"] = "command"
    argv_: list[str] = Field(alias="argv", min_length=1, max_length=64)

    @field_validator("argv_")
    @classmethod
    def _no_escape(cls, value: list[str]) -> list[str]:
        for arg in value[1:]:
            if arg.startswith("/") or ".." in posixpath.normpath(arg).split("/"):
                raise ValueError(f"argument {arg!r} points outside the workspace")
        return value

    def argv(self, rule_path: str = RULE_FILE_IN_JAIL) -> list[str]:
        return list(self.argv_)


Action = Annotated[RuleAction | PatternAction | CommandAction, Field(discriminator="kind")]
_ADAPTER: TypeAdapter[RuleAction | PatternAction | CommandAction] = TypeAdapter(Action)


def describe_errors(exc: ValidationError) -> str:
    """A validation error on one line, each problem with its field named."""
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "<root>"
        parts.append(f"field '{field}': {err['msg']}")
    return "; ".join(parts)


def action_json_schema() -> dict[str, Any]:
    """The JSON schema an action must satisfy (shown to models, checked on every action)."""
    return _ADAPTER.json_schema(by_alias=True)


def parse_action(raw: str | dict[str, Any]) -> RuleAction | PatternAction | CommandAction:
    """Validate an action given as JSON text or a mapping; ActionRejected('schema') if bad."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ActionRejected("schema", f"action is not JSON: {exc}") from exc
    try:
        action = _ADAPTER.validate_python(raw)
    except ValidationError as exc:
        failure = "disallowed" if _disallowed(exc) else "schema"
        raise ActionRejected(failure, "invalid action: " + describe_errors(exc)) from exc
    return action


def rule_file_error(exc: ValidationError) -> RuleFileError | None:
    """The rule file's own refusal inside a validation error, if that is what it is."""
    for err in exc.errors():
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, RuleFileError):
            return cause
    return None


def _disallowed(exc: ValidationError) -> bool:
    """A path outside the workspace or a rule file over a limit (not a malformed action)."""
    cause = rule_file_error(exc)
    return (cause is not None and cause.failure == "disallowed") or (
        "outside the workspace" in str(exc)
    )


def action_to_dict(action: RuleAction | PatternAction | CommandAction) -> dict[str, Any]:
    return action.model_dump(mode="json", by_alias=True)


def check_allowed(argv: list[str], allowed: list[str]) -> None:
    """Refuse a binary that is not on the allowlist (by bare name: no paths, no shells)."""
    binary = argv[0]
    if binary not in allowed or binary not in ALLOWED_BINARIES:
        raise ActionRejected(
            "disallowed", f"binary {binary!r} is not allowed (allowed: {', '.join(allowed)})"
        )


def check_test_command(argv: list[str], allowed: list[str]) -> None:
    """Refuse a test command as an action would be refused: its binary on the allowlist,
    no argument naming a place outside the workspace. ActionRejected('disallowed') says
    why (`verilearn refactor apply --test "curl …"` prints it and exits 1)."""
    check_allowed(argv, allowed)
    try:
        CommandAction(argv=argv)
    except ValidationError as exc:
        raise ActionRejected("disallowed", "test command: " + describe_errors(exc)) from exc
