"""Typed reads of string values: booleans, integers, lists and paths."""
import logging
import os.path
from typing import Optional

log = logging.getLogger(__name__)

TRUE = ("1", "yes", "true", "on")
FALSE = ("0", "no", "false", "off")


def as_bool(values: dict, key: str, fallback: bool = False) -> bool:
    raw = values.get(key)
    if raw is None:
        return fallback
    text = raw.strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise ValueError("not a boolean for %s" % key)


def as_int(values: dict, key: str, fallback: Optional[int] = None) -> Optional[int]:
    raw = values.get(key)
    if raw is None:
        return fallback
    try:
        return int(raw, 0)
    except ValueError:
        raise ValueError("not an integer for %s" % key) from None


def as_list(values: dict, key: str, sep: str = ",") -> list:
    raw = values.get(key)
    if not raw:
        return list()
    return [item.strip() for item in raw.split(sep) if item.strip()]


def as_path(values: dict, key: str, base: Optional[str] = None) -> Optional[str]:
    """`~` expanded; a relative path is taken from `base` (the config file's folder)."""
    raw = values.get(key)
    if raw is None:
        return None
    path = os.path.expanduser(raw)
    if base != None and not os.path.isabs(path):
        path = os.path.join(base, path)
    return os.path.normpath(path)


def is_number(value: object) -> bool:
    return isinstance(value, int) or isinstance(value, float)
