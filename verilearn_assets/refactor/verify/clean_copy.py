"""The clean copy a verdict's tests run on: the workspace's visible files, with the tests
and test configuration from the corpus copy, and the test command as the jail runs it.

The runner copies these files into place (`runner.run_on_files`) and the verdict
(`verdict.verify_step`) chooses them; both import this module, never each other's.
"""

from __future__ import annotations

from verilearn_assets.refactor.verify.toolchains import is_test_file
from verilearn_assets.refactor.verify.workspace import SKIP_DIRS, SYMLINK_MARK, Snapshot, Workspace

PYCACHE_IN_JAIL = "/tmp/verilearn-pycache"  # the jail's own tmp: fresh for every command
# files that decide what pytest collects or what the interpreter runs first
TEST_CONFIG_FILES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        "setup.cfg",
        "tox.ini",
        "pyproject.toml",
        "setup.py",
        "sitecustomize.py",
        "usercustomize.py",
    }
)
# never copied: compiled code imported in place of a source, and path hooks
COMPILED_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd", ".pth")


def is_visible(rel: str) -> bool:
    """Copied into the clean tree: no hidden or skipped directory or file, no compiled code."""
    parts = rel.split("/")
    if any(p.startswith(".") or p in SKIP_DIRS for p in parts):
        return False
    return not rel.endswith(COMPILED_SUFFIXES)


def is_test_path(rel: str) -> bool:
    """A test file, or a file that changes what the tests do (configuration, conftest)."""
    parts = rel.split("/")
    name = parts[-1]
    if name in TEST_CONFIG_FILES or name.endswith(".pth") or is_test_file(name):
        return True  # is_test_file: Go, JS/TS, Java, C tests and build files (toolchains)
    if any(p in ("tests", "test", "testing") for p in parts[:-1]):
        return True
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def visible_files(workspace: Workspace, snap: Snapshot) -> Snapshot:
    """The snapshot's visible regular files (a symlink recorded by the snapshot is left out:
    checked on disk, since a file may hold the same bytes as the snapshot's link marker)."""
    out: Snapshot = {}
    for rel, data in snap.items():
        if not is_visible(rel):
            continue
        if data.startswith(SYMLINK_MARK) and (workspace.tree / rel).is_symlink():
            continue
        if (workspace.tree / rel).is_dir():
            continue
        out[rel] = data
    return out


def clean_files(workspace: Workspace, snap: Snapshot, trusted_tests: set[str]) -> Snapshot:
    """What the verdict's tests see: the visible files, with every test file and test
    configuration from the corpus copy (`baseline`) except the `trusted_tests` (proved equal
    to the task's own). A test the model deleted comes back; one it added is not there."""
    files = {
        rel: data
        for rel, data in visible_files(workspace, snap).items()
        if not is_test_path(rel) or rel in trusted_tests
    }
    for rel, data in workspace.baseline.items():
        if is_test_path(rel) and is_visible(rel) and rel not in trusted_tests:
            files[rel] = data
    return files


def jail_test_argv(argv: list[str]) -> list[str]:
    """The test command as the jail runs it for a verdict: bytecode only under the jail's
    tmp (`-X pycache_prefix`; `-B` is always added by the jail), no pytest cache."""
    prefix = ["-X", f"pycache_prefix={PYCACHE_IN_JAIL}"]
    if argv[0] == "pytest":
        return ["python", *prefix, "-m", "pytest", "-p", "no:cacheprovider", *argv[1:]]
    if argv[0] == "python":
        return ["python", *prefix, *argv[1:]]
    return list(argv)
