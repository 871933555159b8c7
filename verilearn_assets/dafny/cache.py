"""Verdicts cached by content hash of (program, verifier versions, flags).

Re-verifying the same string is then a file read. One JSON file per verdict under
`<home>/cache/dafny/`, written to a temporary name and renamed, so a crash never leaves
a half-written entry. Crashes are not cached: they say nothing about the program.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pydantic import ValidationError

from verilearn_assets.core.records import content_hash
from verilearn_assets.dafny.results import VerifyResult


def cache_key(source: str, versions: dict[str, str], flags: list[str]) -> str:
    return content_hash("dafny-verify", source, versions, flags, length=32)


class VerdictCache:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> VerifyResult | None:
        path = self.path(key)
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        try:
            return VerifyResult.model_validate_json(text)
        except ValidationError as exc:
            raise ValueError(f"{path}: corrupt dafny verdict cache entry: {exc}") from exc

    def put(self, result: VerifyResult) -> None:
        if result.status == "crash" or not result.key:
            return
        path = self.path(result.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as fh:
            fh.write(result.model_copy(update={"cached": False}).model_dump_json())
        os.replace(tmp, path)
