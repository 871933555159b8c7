"""Results of finished jobs saved as JSON files, one per queue, in a results directory."""
import json
import logging
import os
import os.path
from typing import Optional

log = logging.getLogger(__name__)


def results_path(directory: str, queue_name: str) -> str:
    return os.path.join(directory, "%s.json" % queue_name)


def save_results(directory: str, queue_name: str, done: dict) -> str:
    os.makedirs(directory, exist_ok=True)
    path = results_path(directory, queue_name)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(done, fh, sort_keys=True)
    os.replace(tmp, path)
    return path


def load_results(directory: str, queue_name: str, default: Optional[dict] = None) -> dict:
    path = results_path(directory, queue_name)
    if not os.path.exists(path):
        if default != None:
            return default
        raise FileNotFoundError("no results at %s" % path)
    with open(path) as fh:
        return json.load(fh)


def saved_queues(directory: str) -> list:
    names = list()
    for name in sorted(os.listdir(directory)):
        stem, ext = os.path.splitext(name)
        if ext == ".json":
            names.append(stem)
    return names
