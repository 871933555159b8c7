import logging
from typing import Optional

log = logging.getLogger(__name__)


def is_scalar(value: object) -> bool:
    return isinstance(value, str) or isinstance(value, int)


def missing(values: dict, required: list[str]) -> list[str]:
    out = list()
    for key in required:
        if values.get(key) == None:
            out.append(key)
    return out


def complete(values: dict, required: list[str]) -> bool:
    return all([key in values for key in required])


def check(values: dict, required: list[str]) -> Optional[str]:
    gaps = missing(values, required)
    if gaps:
        print("missing keys: %s" % ", ".join(gaps))
        return "missing %s" % len(gaps)
    return None


def unknown_keys(values: dict, allowed: list[str]) -> list[str]:
    return sorted([key for key in values if key not in allowed])


def first_invalid(values: dict, checks: dict) -> Optional[str]:
    """The first key (in sorted order) whose value its check refuses."""
    for key in sorted(checks.keys()):
        value = values.get(key)
        if value == None:
            continue
        if not checks[key](value):
            return key
    return None
