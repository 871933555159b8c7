"""Where configuration files are found: up from a folder, or along a search path."""
import logging
import os
import os.path
from typing import Optional

log = logging.getLogger(__name__)


def search_upward(start: str, name: str, stop: Optional[str] = None) -> Optional[str]:
    """The nearest `name` in `start` or one of its parents (not above `stop`)."""
    current = os.path.abspath(start)
    stop = os.path.abspath(stop) if stop != None else None
    while True:
        candidate = os.path.join(current, name)
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(current)
        if parent == current or current == stop:
            return None
        current = parent


def search_path(env: dict, home: Optional[str] = None) -> list:
    """The folders to look in, most specific last: system, user, then $PATHCONF_DIRS."""
    dirs = ["/etc/pathconf"]
    home = home if home != None else os.path.expanduser("~")
    dirs.append(os.path.join(home, ".config", "pathconf"))
    extra = env.get("PATHCONF_DIRS")
    if extra:
        dirs.extend(p for p in extra.split(os.pathsep) if p)
    return dirs


def existing(dirs: list, name: str) -> list:
    found = list()
    for directory in dirs:
        path = os.path.join(directory, name)
        if os.path.isfile(path) and path not in found:
            found.append(path)
    return found


def any_readable(paths: list) -> bool:
    return any([os.access(p, os.R_OK) for p in paths])
