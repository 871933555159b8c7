import logging
import os.path
from typing import Optional

log = logging.getLogger(__name__)


def parse(text: str) -> dict:
    values = dict()
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        values[key.strip()] = value.strip()
    return values


def load(directory: str, name: str, default: Optional[dict] = None) -> dict:
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        if default == None:
            raise FileNotFoundError("no config at %s" % path)
        return default
    with open(path) as fh:
        values = parse(fh.read())
    print("loaded %s" % path)
    return values


def layered(directory: str, names: list[str]) -> dict:
    merged = dict()
    for name in names:
        merged.update(load(directory, name, default=dict()))
    return merged


def get(values: dict, key: str, fallback: Optional[str] = None) -> Optional[str]:
    if key in values.keys():
        return values[key]
    return fallback


def dump(values: dict, directory: str, name: str, header: Optional[str] = None) -> str:
    """Write `key = value` lines sorted by key, so a dump is stable under a reload."""
    path = os.path.join(directory, name)
    lines = list()
    if header != None:
        lines.append("# %s" % header)
    for key in sorted(values):
        lines.append("%s = %s" % (key, values[key]))
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path

