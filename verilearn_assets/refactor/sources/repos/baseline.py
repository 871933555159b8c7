"""The test baseline of a real repository, taken at ingestion before any change.

A published package brings its own test layout, unittest-style tests, optional dependencies
and slow or flaky tests: its suite cannot serve as a task's verdict as it stands. So the
suite runs twice in the jail (the runner's public API, a clean copy each time) and every
test gets one status: `passed`, `failed`, `error`, `skipped`, `flaky` (its outcomes differ
between the runs) or `missing_dependency` (an ImportError/ModuleNotFoundError, at collection
or in the test). Tasks use only the tests that passed in both runs: the test command is
narrowed to them (whole files or modules where every test of one is stable, else test ids).
A repository whose stable passing set is empty is skipped, the reason recorded.

Detection (`detect_command`): the entry's own command if it gives one; a `package.json`:
`npm test` when it has a test script of its own (`scripts.test`, not npm's placeholder),
else `node --test`; Python: pytest when any test file, conftest or configuration mentions
pytest, else unittest when there are `test*.py` files.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from verilearn_assets.core.records import content_hash
from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.verify.actions import ActionRejected, check_test_command
from verilearn_assets.refactor.verify.languages import extensions
from verilearn_assets.refactor.verify.runner import (
    TEST_RUNNERS,
    TestResult,
    TestSpec,
    cleanup,
    prepare_workspace,
    run_tests,
)
from verilearn_assets.refactor.verify.workspace import SKIP_DIRS

Runner = Literal["pytest", "unittest", "node", "npm"]
TestStatus = Literal["passed", "failed", "error", "skipped", "flaky", "missing_dependency"]
RUNS = 2
MAX_ARGS = 64  # an action's (and so a test command's) argument cap, `actions.CommandAction`
BASELINE_OUTPUT_BYTES = 4_000_000  # every test's line must survive the jail's output cap
NPM_TEST_ID = "npm test"  # the whole script, when it reports no test of its own (TAP)
_MISSING = re.compile(r"\b(ModuleNotFoundError|ImportError)\b")


class TestOutcome(BaseModel):
    """One test of the baseline: its status and what each run said."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")
    test_id: str  # pytest node id, unittest dotted id, the node test's name, or `npm test`
    status: TestStatus
    runs: list[str]  # the outcome of each run, in order ("absent": not reported that run)
    detail: str = ""  # the failure's one-line reason (e.g. the module that is missing)


class Baseline(BaseModel):
    """A repository's baseline: the detected command, every test's status, the narrowed
    command the tasks use (None and `skipped` set when nothing passes stably)."""

    model_config = ConfigDict(extra="forbid")
    repo: str
    runner: Runner | None
    command: list[str]  # the suite as detected (or given), before narrowing
    tests: list[TestOutcome] = Field(default_factory=list)
    narrowed: list[str] | None = None  # the stable passing subset as a test command
    skipped: str = ""  # why the repository gives no tasks ("" when it does)
    run_summaries: list[str] = Field(default_factory=list)  # per run: status and counts

    def counts(self) -> dict[str, int]:
        return dict(Counter(t.status for t in self.tests))

    def stable_passing(self) -> list[str]:
        return [t.test_id for t in self.tests if t.status == "passed"]


# a package's installed dependencies are not its code
SOURCE_SKIP = SKIP_DIRS | {"node_modules"}


def source_files(root: Path, language: str = "python") -> list[Path]:
    """The repository's files of `language` (by ast-grep's extensions), tests included:
    no hidden, cache or dependency folder, no symlink."""
    suffixes = tuple(f".{ext}" for ext in extensions(language))
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).parts
        if not path.name.endswith(suffixes) or (SOURCE_SKIP & set(rel)):
            continue
        if not any(p.startswith(".") for p in rel) and not path.is_symlink() and path.is_file():
            out.append(path)
    return out


def python_files(root: Path) -> list[Path]:
    return source_files(root, "python")


def _is_test_file(path: Path) -> bool:
    return path.name.startswith("test") or path.name.endswith("_test.py")


def detect_command(root: Path, given: list[str] | None = None) -> tuple[Runner | None, list[str]]:
    """The runner and the suite's command for the repository at `root` (`given`: the
    catalog entry's, whose runner is read from its first words)."""
    if given:
        words = " ".join(given)
        runner: Runner | None = (
            "npm"
            if given[0] == "npm"
            else "node"
            if given[0] == "node"
            else "unittest"
            if "unittest" in words
            else "pytest"
        )
        return runner, list(given)
    if (root / "package.json").is_file():
        return ("npm", ["npm", "test"]) if _npm_test_script(root) else ("node", ["node", "--test"])
    files = python_files(root)
    tests = [p for p in files if _is_test_file(p)]
    configs = [root / n for n in ("pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")]
    mentions = [
        p
        for p in [*tests, *(p for p in files if p.name == "conftest.py"), *configs]
        if p.is_file() and "pytest" in p.read_text(errors="replace")
    ]
    if mentions:
        return "pytest", ["pytest"]
    if tests:
        return "unittest", ["python", "-m", "unittest", "discover"]
    return None, []


NPM_PLACEHOLDER = 'echo "Error: no test specified" && exit 1'  # what `npm init` writes


def _npm_test_script(root: Path) -> bool:
    """Whether `package.json` names a test script of its own. A file npm cannot read counts
    as one: `npm test` then fails in the baseline with npm's own message, which names it."""
    try:
        data = json.loads((root / "package.json").read_text(errors="replace"))
    except ValueError:
        return True
    scripts = data.get("scripts") if isinstance(data, dict) else None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    return isinstance(test, str) and bool(test.strip()) and test.strip() != NPM_PLACEHOLDER


def run_argv(runner: Runner, command: list[str]) -> list[str]:
    """The command as the baseline runs it: one line per test in the output."""
    if runner == "pytest":
        # -v: one line per test; --continue-on-collection-errors: a module that cannot be
        # imported (a missing dependency) must not stop the others from running
        # -vv: the summary's reasons are not cut to the terminal's width
        return [*command, "-vv", "--tb=line", "-rfE", "--continue-on-collection-errors"]
    if runner == "unittest":
        return [*command, "-v"] if "-v" not in command else list(command)
    return list(command)


_PYTEST_LINE = re.compile(
    r"^(?P<id>\S+::\S.*?) (?P<out>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?: \(.*\))?"
    r"(?:\s+\[\s*\d+%\])?\s*$",
    re.M,
)
_PYTEST_COLLECTION = re.compile(
    r"^_{3,} ERROR collecting (?P<id>\S+) _{3,}\n(?P<body>.*?)(?=^_{3,} |^={3,} |\Z)", re.M | re.S
)
_PYTEST_SUMMARY = re.compile(r"^(?P<out>FAILED|ERROR) (?P<id>\S+)(?: - (?P<why>.*))?$", re.M)
_UNITTEST_LINE = re.compile(
    r"^(?P<name>[\w.]+) \((?P<id>[\w.]+)\)(?:\n[^\n]*?)? \.\.\. "
    r"(?P<out>ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$",
    re.M,
)
_UNITTEST_SECTION = re.compile(
    r"^(?:ERROR|FAIL): [\w.]+ \((?P<id>[\w.]+)\)\n-+\n(?P<body>.*?)(?=^={20,}$|^-{20,}$|\Z)",
    re.M | re.S,
)
_TAP_LINE = re.compile(
    r"^(?P<out>ok|not ok) \d+ - (?P<name>.+?)(?: # (?P<dir>SKIP|TODO).*)?$", re.M
)


def parse_run(runner: Runner, result: TestResult) -> dict[str, tuple[str, str]]:
    """Test id -> (outcome, one-line reason) from one run's output. Outcomes are
    `passed`, `failed`, `error`, `skipped` and `missing_dependency`."""
    out: dict[str, tuple[str, str]] = {}
    if runner == "pytest":
        text = result.stdout
        for m in _PYTEST_LINE.finditer(text):
            word = m.group("out")
            outcome = {"PASSED": "passed", "FAILED": "failed", "XPASS": "failed", "ERROR": "error"}
            out[m.group("id")] = (outcome.get(word, "skipped"), "")
        for m in _PYTEST_SUMMARY.finditer(text):
            why = (m.group("why") or "").strip()
            test_id = m.group("id")
            kind = "missing_dependency" if _MISSING.search(why) else out.get(test_id, ("error",))[0]
            if "::" not in test_id:  # a module that failed at collection
                kind = "missing_dependency" if _MISSING.search(why) else "error"
            out[test_id] = (kind, why[:300])
        for m in _PYTEST_COLLECTION.finditer(text):  # a module that could not be imported
            body = m.group("body")
            named = [ln.strip() for ln in body.splitlines() if _MISSING.search(ln)]
            why = next((ln for ln in named if "No module named" in ln), named[-1] if named else "")
            kind = "missing_dependency" if named else "error"
            out[m.group("id")] = (kind, why.removeprefix("E").strip()[:300])
        return out
    if runner == "unittest":
        text = result.stderr + "\n" + result.stdout
        reasons = {}
        for m in _UNITTEST_SECTION.finditer(text):
            lines = [ln for ln in m.group("body").strip().splitlines() if ln.strip()]
            reasons[_unittest_id(m.group("id"))] = lines[-1].strip()[:300] if lines else ""
        for m in _UNITTEST_LINE.finditer(text):
            word, test_id = m.group("out"), _unittest_id(m.group("id"))
            why = reasons.get(test_id, "")
            if word == "ok":
                kind = "passed"
            elif word.startswith("skipped") or word == "expected failure":
                kind = "skipped"
            elif _MISSING.search(why):
                kind = "missing_dependency"
            else:
                kind = "error" if word == "ERROR" else "failed"
            out[test_id] = (kind, why)
        return out
    taps = list(_TAP_LINE.finditer(result.stdout))
    if runner == "npm" and not taps:  # a script of its own: one test, its exit code
        return {NPM_TEST_ID: ("passed" if result.status == "passed" else "failed", "")}
    for m in taps:
        if m.group("dir"):
            out[m.group("name")] = ("skipped", "")
        else:
            out[m.group("name")] = ("passed" if m.group("out") == "ok" else "failed", "")
    return out


def _unittest_id(raw: str) -> str:
    """A module that failed to import is reported as `unittest.loader._FailedTest.<module>`:
    its id is the module's."""
    return raw.removeprefix("unittest.loader._FailedTest.")


def classify(runs: list[dict[str, tuple[str, str]]]) -> list[TestOutcome]:
    """One status per test over the runs: the same outcome every time is that outcome; a
    missing dependency in any run says so; outcomes that differ (absent counts) are flaky."""
    ids = sorted({i for run in runs for i in run})
    out = []
    for test_id in ids:
        seen = [run.get(test_id, ("absent", "")) for run in runs]
        kinds = [k for k, _ in seen]
        detail = next((why for _, why in seen if why), "")
        if "missing_dependency" in kinds:
            status = "missing_dependency"
        elif len(set(kinds)) == 1 and kinds[0] != "absent":
            status = kinds[0]
        else:
            status = "flaky"
        out.append(TestOutcome(test_id=test_id, status=status, runs=kinds, detail=detail))
    return out


def narrow(runner: Runner, command: list[str], tests: list[TestOutcome]) -> list[str] | None:
    """The command restricted to the stable passing tests, or None when there are none or
    it cannot be said within `MAX_ARGS` arguments. Whole files (pytest) or modules
    (unittest) where every test of one passes stably, else the test ids; for pytest, past
    the cap, those files with the others deselected."""
    stable = [t.test_id for t in tests if t.status == "passed"]
    if not stable:
        return None
    if runner in ("node", "npm"):  # names, not ids a command can select: all or nothing
        return list(command) if len(stable) == len(tests) else None
    unit = (lambda i: i.split("::")[0]) if runner == "pytest" else (lambda i: i.rsplit(".", 2)[0])
    others: dict[str, list[str]] = {}
    for t in tests:
        if t.status != "passed":
            others.setdefault(unit(t.test_id), []).append(t.test_id)
    units = sorted({unit(i) for i in stable})
    picked = [u for u in units if u not in others]
    picked += [i for i in stable if unit(i) in others]
    base = ["pytest", "-q"] if runner == "pytest" else ["python", "-m", "unittest"]
    if runner == "pytest" and command[0] != "pytest":
        base = list(command)
    if len(base) + len(picked) <= MAX_ARGS:
        return [*base, *picked]
    if runner == "pytest":
        deselect = [a for u in units for i in others.get(u, []) for a in ("--deselect", i)]
        if len(base) + len(units) + len(deselect) <= MAX_ARGS:
            return [*base, *units, *deselect]
    return None


def reading_whole_output(config: RefactorConfig) -> RefactorConfig:
    """`config` with an output cap every test's (or match's) line fits under: the output is
    read line by line, and the jail's usual cap cuts the middle out."""
    limits = config.limits.model_copy(
        update={"output_cap_bytes": max(config.limits.output_cap_bytes, BASELINE_OUTPUT_BYTES)}
    )
    return config.model_copy(update={"limits": limits})


def take_baseline(
    repo_name: str,
    root: Path,
    config: RefactorConfig,
    given: list[str] | None = None,
    runs: int = RUNS,
) -> Baseline:
    """Run the repository's suite `runs` times in the jail, before any change, and
    classify every test; narrow the command to the stable passing set (or record why the
    repository is skipped)."""
    runner, command = detect_command(root, given)
    if runner is None:
        return Baseline(repo=repo_name, runner=None, command=[], skipped="no tests found")
    try:
        # the runners (node, npm, go, …) serve corpus tests, never a model's actions
        check_test_command(command, [*config.allowed_binaries, *TEST_RUNNERS])
    except ActionRejected as exc:
        return Baseline(
            repo=repo_name, runner=runner, command=command,
            skipped=f"test command {' '.join(command)!r} is not served by the jail: {exc}",
        )  # fmt: skip
    config = reading_whole_output(config)
    parsed, summaries = [], []
    spec = TestSpec(argv=run_argv(runner, command))
    for i in range(runs):
        ws = prepare_workspace(content_hash("baseline", repo_name, i), root, config)
        try:
            result = run_tests(ws, spec, use_cache=False)  # every run must really run
        finally:
            cleanup(ws)
        parsed.append(parse_run(runner, result))
        summaries.append(
            f"run {i + 1}: {result.status} (exit {result.exit_code}), "
            f"{len(parsed[-1])} tests reported"
        )
        if result.status in ("timeout", "disallowed") or (
            result.status == "error" and not parsed[-1]
        ):
            why = (result.stderr or result.stdout).strip().splitlines()[-1:] or [""]
            return Baseline(
                repo=repo_name, runner=runner, command=command, run_summaries=summaries,
                skipped=f"the suite did not run ({result.status}): {why[0][:300]}",
            )  # fmt: skip
    tests = classify(parsed)
    narrowed = narrow(runner, command, tests)
    skipped = ""
    if narrowed is None:
        counts = dict(Counter(t.status for t in tests))
        skipped = (
            f"no test passes stably in {runs} runs ({counts or 'no test reported'})"
            if not any(t.status == "passed" for t in tests)
            else f"the stable passing set cannot be said in {MAX_ARGS} arguments"
        )
    return Baseline(
        repo=repo_name, runner=runner, command=command, tests=tests,
        narrowed=narrowed, skipped=skipped, run_summaries=summaries,
    )  # fmt: skip
