"""Helpers the refactor tests import (a uniquely named module: `conftest` names clash
across test folders once the whole suite is collected)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

from verilearn_assets.refactor.config import RefactorConfig, load_refactor_config

SMALL_RULES = ("optional-to-union", "eq-none-to-is", "list-call-to-literal")


def refactor_config(backend: str, root: Path, **limits: float) -> RefactorConfig:
    """The repository's config with this backend, private dirs and (short) limits."""
    base = load_refactor_config()
    return base.model_copy(
        update={
            "backend": backend,
            "workspace_root": str(root / "workspaces"),
            "log_dir": str(root / "logs"),
            "test_cache": str(root / "test_cache.sqlite"),
            "limits": base.limits.model_copy(update=limits),
        }
    )


def write_tasks(home: Path, tasks: list) -> None:
    from verilearn_assets.core import lake
    from verilearn_assets.refactor.records import RefactorTask

    by_partition: dict[tuple[str, str], list] = {}
    for task in tasks:
        by_partition.setdefault((task.source, task.split), []).append(task)
    for (source, split), part in by_partition.items():
        lake.write_records(
            "refactor/tasks", part, RefactorTask, lake.lake_root(home), source=source, split=split
        )


def pack_repo(source: Path, archive: Path, arcname: str) -> str:
    """A tar.gz of `source` under `arcname/` (caches left out); returns its sha256."""
    import hashlib
    import tarfile

    with tarfile.open(archive, "w:gz") as tf:
        tf.add(source, arcname=arcname, filter=lambda m: None if "__pycache__" in m.name else m)
    return hashlib.sha256(archive.read_bytes()).hexdigest()


@contextlib.contextmanager
def serve_directory(root: Path) -> Iterator[str]:
    """A plain HTTP server on 127.0.0.1 serving `root`; yields its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def drive_actor(home: Path, teacher, tasks: list, extra_steps: int, **limits: float):  # noqa: ANN001, ANN201
    """Run the bwrap actor loop over `tasks` (one source and split) with `teacher` and these
    jail limits, then close the teacher (if it holds clients) and the actor; returns the
    run's summary."""
    import asyncio

    from verilearn_assets.refactor.rollout.actor import Actor
    from verilearn_assets.refactor.rollout.prompts import load_prompts
    from verilearn_assets.refactor.sources.catalog import load_corpus

    actor = Actor(
        home=home,
        teacher=teacher,
        config=refactor_config("bwrap", home, **limits),
        prompts=load_prompts(),
        repos={r.name: r for r in load_corpus()},
        extra_steps=extra_steps,
    )

    async def drive():  # noqa: ANN202
        try:
            return await actor.run(tasks, tasks[0].source, tasks[0].split)
        finally:
            if hasattr(teacher, "close"):
                await teacher.close()

    try:
        return asyncio.run(drive())
    finally:
        actor.close()


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """A repository tree of `files` (path -> text) under `root`."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
