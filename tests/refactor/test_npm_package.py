"""A published npm package as a refactor corpus, end to end: fetched by `npm pack` (jailed,
pinned), its `scripts.test` run as `npm test` in the refactor jail twice (the baseline),
tasks made on it whose tests pass before and after, and the cheapest cheats on `npm test`
earning nothing.

The package is path-parse 1.0.6 from the machine's registry (its `test.js` uses Node's own
`assert`: no dependency to install). Where the registry is unreachable the test makes a
package of its own and puts it in the machine's package cache under its pin, the path a
second home takes, so the same ingestion, baseline and tasks run offline.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from backends import require_backend
from refactor_support import refactor_config

from verilearn_assets.refactor.sources.catalog import Repo, load_catalog, read_corpus
from verilearn_assets.refactor.sources.partition import generate_tasks
from verilearn_assets.refactor.sources.repos.baseline import (
    NPM_TEST_ID,
    detect_command,
    take_baseline,
)
from verilearn_assets.refactor.verify.clean_copy import is_test_path
from verilearn_assets.refactor.verify.runner import (
    TestSpec,
    apply_action,
    cleanup,
    prepare_workspace,
    run_tests,
)
from verilearn_assets.refactor.verify.verdict import verify_step

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "platform"))
from test_corpora_package import write_catalog  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
NPM = ["npm", "test"]

FALLBACK = {  # the offline stand-in: a package of its own, a test script on Node's assert
    "package.json": json.dumps(
        {"name": "vlpad", "version": "1.0.0", "scripts": {"test": "node test.js"}}
    ),
    "index.js": (
        "'use strict';\n\n"
        "function pad(text, width, fill) {\n"
        "  var out = String(text);\n"
        "  var ch = fill == null ? ' ' : String(fill);\n"
        "  while (out.length < width) out = ch + out;\n"
        "  return out;\n"
        "}\n\n"
        "module.exports = pad;\n"
    ),
    "test.js": (
        "var assert = require('assert');\n"
        "var pad = require('./index');\n"
        "assert.strictEqual(pad('ab', 4), '  ab');\n"
        "assert.strictEqual(pad(7, 3, 0), '007');\n"
        "assert.strictEqual(pad('abc', 2), 'abc');\n"
    ),
}


def _tarball(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        for rel, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"package/{rel}")
            info.size, info.mtime = len(data), 0
            tf.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def tracked_entry() -> dict:
    data = yaml.safe_load((REPO_ROOT / "configs" / "datasets.yaml").read_text())
    return data["corpora"]["path-parse"]


def ingest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """The tracked npm entry from the registry, or (unreachable) the stand-in, pinned."""
    require_backend("bwrap")  # the fetch and the tests run jailed
    cache = tmp_path / "package-cache"
    monkeypatch.setenv("VERILEARN_PACKAGE_CACHE", str(cache))
    entry = tracked_entry()
    corpora = {"realnpm": {**entry, "split": "dev"}}
    loaded = read_corpus(write_catalog(tmp_path / "catalog", corpora), home=tmp_path / "home")
    if loaded.failures:  # the registry is unreachable here: the package cache's path
        assert "corpora.realnpm.package.version" in loaded.failures[0].error, loaded.failures
        data = _tarball(FALLBACK)
        digest = hashlib.sha256(data).hexdigest()
        (cache / digest).mkdir(parents=True)
        (cache / digest / "vlpad-1.0.0.tgz").write_bytes(data)
        package = {"manager": "npm", "name": "vlpad", "version": "1.0.0", "sha256": digest}
        corpora["realnpm"]["package"] = package
        loaded = read_corpus(write_catalog(tmp_path / "catalog", corpora), home=tmp_path / "home")
    assert not loaded.failures, loaded.failures
    (repo,) = loaded.repos
    assert repo.language == "javascript" and repo.origin.startswith("package:npm:")
    return repo


def test_npm_package_baseline_is_stable_and_its_tasks_pass_before_and_after(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp = home.parent
    repo = ingest(tmp, monkeypatch)
    config = refactor_config("bwrap", tmp)
    # the baseline: `npm test` twice in the jail, a non-empty stable passing set
    base = take_baseline(repo.name, repo.path, config)
    assert (base.runner, base.command) == ("npm", NPM), base
    assert base.stable_passing() == [NPM_TEST_ID] and not base.skipped, base
    assert [t.runs for t in base.tests] == [["passed", "passed"]]
    assert base.narrowed == NPM
    # tasks: template tasks of the JavaScript rules, each tested with `npm test`
    rules = load_catalog()  # every language's task rules
    tasks = generate_tasks("template", "dev", config, repos=[repo], rules=rules)
    accepted = [t for t in tasks if t.status == "accepted"]
    assert accepted, [(t.rules, t.reason) for t in tasks]
    assert all(t.test_command == NPM for t in tasks)
    task = accepted[0]
    package_file = next(f for f in task.files if not is_test_path(f))
    ws = prepare_workspace("npm-before", repo.path, config)
    try:
        assert run_tests(ws, TestSpec(argv=NPM), use_cache=False).status == "passed"
        assert apply_action(ws, task.reference_actions[0]).status == "ok"
        assert run_tests(ws, TestSpec(argv=NPM), use_cache=False).status == "passed"
        verdict = verify_step(ws, task, use_cache=False)
        assert verdict.scope is None and verdict.status == "passed", verdict
    finally:
        cleanup(ws)
    # the cheapest cheat: the task's own file broken (every return gives null) must fail
    broken = {"kind": "run", "pattern": "return $X", "rewrite": "return null", "lang": "js"}
    ws = prepare_workspace("npm-cheat", repo.path, config)
    try:
        assert apply_action(ws, {**broken, "paths": [package_file]}).status == "ok"
        verdict = verify_step(ws, task, use_cache=False)
        assert verdict.scope is None and verdict.status == "failed", verdict
        # ... and with the test script emptied and hidden npm settings planted besides:
        # the test script comes back from the corpus copy, the dot file never reaches it
        (ws.tree / "test.js").write_text("process.exit(0);\n")
        (ws.tree / ".npmrc").write_text("script-shell=/bin/true\nignore-scripts=false\n")
        manifest = json.loads((ws.tree / "package.json").read_text())
        manifest["scripts"] = {"test": "exit 0"}
        (ws.tree / "package.json").write_text(json.dumps(manifest))
        verdict = verify_step(ws, task, use_cache=False)
        assert verdict.status != "passed" and (verdict.scope or verdict.status == "failed")
    finally:
        cleanup(ws)


def test_npm_detection_and_a_script_that_cannot_pass(tmp_path: Path) -> None:
    """`npm test` only for a test script of the package's own (npm init's placeholder is
    none); a script that fails gives no stable passing test: the repository is skipped,
    the reason said."""
    root = tmp_path / "pkg"
    root.mkdir()
    placeholder = 'echo "Error: no test specified" && exit 1'
    (root / "package.json").write_text(json.dumps({"scripts": {"test": placeholder}}))
    assert detect_command(root) == ("node", ["node", "--test"])
    (root / "package.json").write_text(json.dumps({"scripts": {"test": "node t.js"}}))
    assert detect_command(root) == ("npm", NPM)
    (root / "t.js").write_text("require('assert').strictEqual(1, 2);\n")
    base = take_baseline("failing", root, refactor_config("bwrap", tmp_path))
    assert base.narrowed is None and base.runner == "npm"
    assert base.skipped.startswith("no test passes stably"), base.skipped
    assert [t.status for t in base.tests] == ["failed"]
