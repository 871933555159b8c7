"""YAML configuration validated by pydantic at load.

Every config model forbids unknown keys, so a misspelt key stops the run with an error
naming the file and the field instead of silently falling back to a default.
"""

from __future__ import annotations

import os
import string
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """A config file is missing, unreadable or invalid; the message names file and field."""


class StrictConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


def config_dir() -> Path:
    """`VERILEARN_CONFIG_DIR`, else the repository's `configs/`."""
    env = os.environ.get("VERILEARN_CONFIG_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "configs"


def read_yaml_mapping(path: Path) -> dict:
    """A YAML file's top-level mapping (empty file: {}); errors name the file."""
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping, got {type(data).__name__}")
    return data


def load_yaml_model(path: str | Path, model: type[M]) -> M:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    data = read_yaml_mapping(path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "<root>"
            lines.append(f"{path}: field '{field}': {err['msg']}")
        raise ConfigError("\n".join(lines)) from exc


def load_config(name: str, model: type[M], directory: str | Path | None = None) -> M:
    """Load `configs/<name>.yaml` into `model`."""
    return load_yaml_model(Path(directory or config_dir()) / f"{name}.yaml", model)


def placeholders(value: str, allowed: set[str], required: set[str]) -> str:
    """`value` when its `{name}` placeholders are among `allowed` and cover `required`: a
    prompt template is checked at load, not on the first render mid-run."""
    try:
        names = {f for _, f, _, _ in string.Formatter().parse(value) if f is not None}
    except ValueError as exc:  # a lone brace: str.format would fail on every render
        raise ValueError(
            f"not a format string: {exc} (write a literal brace as {{{{ or }}}})"
        ) from exc
    unknown = names - allowed
    if unknown:
        raise ValueError(f"unknown placeholder(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    missing = required - names
    if missing:
        raise ValueError(f"missing placeholder(s) {sorted(missing)}")
    return value
