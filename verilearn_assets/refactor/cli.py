"""`verilearn refactor apply …` (the jailed runner on a directory) and `verilearn state dump`."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verilearn_assets.core import lake
from verilearn_assets.refactor.config import load_refactor_config
from verilearn_assets.refactor.rollout.state import State, StateStore, render
from verilearn_assets.refactor.verify.actions import (
    RULE_FILE_IN_JAIL,
    ActionRejected,
    PatternAction,
    RuleAction,
    check_test_command,
    describe_errors,
    rule_file_error,
)
from verilearn_assets.refactor.verify.languages import UnknownLanguage, canonical_language
from verilearn_assets.refactor.verify.rule_files import (
    MAX_RULE_BYTES,
    RuleFileError,
    ast_grep_refusal,
)
from verilearn_assets.refactor.verify.runner import (
    TEST_RUNNERS,
    TestSpec,
    apply_action,
    cleanup,
    edited_tests_report,
    prepare_workspace,
    run_tests,
)


class _Bad(ValueError):
    pass


EXAMPLES = {  # shown by `--help` (verilearn_assets/cli: one example per command)
    "refactor apply": "verilearn refactor apply --workspace . --pattern 'print($A)' "
    "--rewrite 'log($A)' --test 'pytest -q'",
    "state dump": "verilearn state dump TASK_ID --history --format text",
}


def register(subparsers: Any) -> None:
    refactor = subparsers.add_parser("refactor", help="the refactor family's jailed runner")
    sub = refactor.add_subparsers(dest="refactor_command", required=True)
    apply = sub.add_parser(
        "apply",
        help="copy DIR into a fresh jailed workspace, apply one ast-grep action, print JSON",
    )
    what = apply.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--rule", type=Path, help="an ast-grep rule file (as `ast-grep scan -r FILE` takes it)"
    )
    what.add_argument("--pattern", help="ast-grep pattern (with --rewrite)")
    apply.add_argument("--rewrite", help="rewrite template for --pattern")
    apply.add_argument(
        "--lang", default="python", help="language of --pattern, any ast-grep name (python)"
    )
    apply.add_argument("--workspace", type=Path, required=True, help="directory (never modified)")
    apply.add_argument("--backend", choices=["bwrap", "docker", "none"])
    apply.add_argument("--test", help="test command run in the same jail, e.g. 'pytest -q'")
    apply.set_defaults(handler=_apply)

    state = subparsers.add_parser("state", help="the refactor family's state manager")
    ssub = state.add_subparsers(dest="state_command", required=True)
    dump = ssub.add_parser("dump", help="print the state of a task (every teacher's run)")
    dump.add_argument("task_id")
    dump.add_argument("--history", action="store_true", help="every version, oldest first")
    dump.add_argument("--format", choices=["json", "text"], default="json")
    dump.set_defaults(handler=_dump)


def _action(args: argparse.Namespace) -> RuleAction | PatternAction:
    """The action the arguments ask for; RuleFileError when a rule file is over a limit
    or names a place outside the workspace (refused in the JSON, exit 1), `_Bad` for any
    other bad input (one line, exit 2)."""
    if args.rule is not None:
        if args.rewrite is not None:
            raise _Bad("--rewrite goes with --pattern, not --rule")
        if not args.rule.is_file():
            raise _Bad(f"{args.rule}: rule file not found")
        if args.rule.stat().st_size > MAX_RULE_BYTES:  # never read a huge file whole
            raise RuleFileError(
                "disallowed",
                f"{args.rule}: {args.rule.stat().st_size} bytes, over the limit of "
                f"{MAX_RULE_BYTES}",
            )
        try:
            text = args.rule.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise _Bad(f"{args.rule}: not UTF-8 text: {exc}") from exc
        try:
            return RuleAction(rule=text)
        except ValidationError as exc:
            cause = rule_file_error(exc)
            if cause is not None and cause.failure == "disallowed":
                raise RuleFileError("disallowed", f"{args.rule}: {cause}") from exc
            raise _Bad(f"{args.rule}: {cause or describe_errors(exc)}") from exc
    if args.rewrite is None:
        raise _Bad("--pattern needs --rewrite")
    try:
        return PatternAction(pattern=args.pattern, rewrite=args.rewrite, lang=args.lang)
    except ValidationError as exc:
        try:
            canonical_language(args.lang)
        except UnknownLanguage as bad_lang:
            raise _Bad(f"--lang: {bad_lang}") from exc
        raise _Bad(f"--pattern/--rewrite/--lang: {describe_errors(exc)}") from exc


# A step the jail or the host refused (not a failure of the code): `apply` exits 1.
REFUSED = ("disallowed", "limit")


def _refusal(what: str, reason: str) -> dict[str, str]:
    """Said twice: in the JSON (`refused`) and as one line on stderr."""
    print(f"verilearn refactor apply: {what} refused: {reason}", file=sys.stderr)
    return {"what": what, "reason": reason}


def _mark_git_work_tree(source: Path, tree: Path) -> None:
    """An empty `.git` in the jailed copy when DIR is a git work tree: ast-grep honours
    `.gitignore` only under a `.git` (the workspace copy leaves `.git` out), so without it
    files bare ast-grep leaves alone would be rewritten. Nothing of the repository is
    copied; `.git` is never part of a snapshot or a diff."""
    if (source / ".git").exists() and not (tree / ".git").exists():
        (tree / ".git").mkdir()


def _refused_before_running(what: str, reason: str, backend: str) -> int:
    """A refusal before anything is copied or run: the JSON, one stderr line, exit 1."""
    refused = _refusal(what, reason)
    print(json.dumps({"status": "disallowed", "message": reason, "refused": refused,
                      "backend": backend}))  # fmt: skip
    return 1


def _apply(args: argparse.Namespace) -> int:
    config = load_refactor_config()
    if args.backend:
        config = config.with_backend(args.backend)
    try:
        action = _action(args)
    except RuleFileError as exc:  # refused before anything is copied or run
        return _refused_before_running("rule", str(exc), config.backend)
    if not args.workspace.is_dir():
        raise _Bad(f"{args.workspace}: not a directory")
    spec = None
    if args.test:
        try:
            argv = shlex.split(args.test)
        except ValueError as exc:
            raise _Bad(f"--test {args.test!r}: {exc}") from exc
        if not argv:
            raise _Bad("--test is empty")
        try:  # refused before anything is copied or run
            check_test_command(argv, [*config.allowed_binaries, *TEST_RUNNERS])  # node, go, ...
        except ActionRejected as exc:
            return _refused_before_running("tests", f"--test {args.test!r}: {exc}", config.backend)
        spec = TestSpec(argv=argv)
    start = time.perf_counter()
    ws = prepare_workspace(f"cli-{args.workspace.name}", args.workspace, config)
    try:
        _mark_git_work_tree(args.workspace, ws.tree)
        result = apply_action(ws, action)
        tests = run_tests(ws, spec) if spec is not None else None
        edited = edited_tests_report(ws, spec, result) if spec is not None else {}
    except ActionRejected as exc:
        raise _Bad(str(exc)) from exc
    finally:
        cleanup(ws)
    refused = None
    message = result.message
    rejected = (
        ast_grep_refusal(
            result.exit_code,
            result.stderr.replace(str(ws.control / "rule.yml"), RULE_FILE_IN_JAIL),  # none
            RULE_FILE_IN_JAIL,
            str(args.rule),
        )
        if isinstance(action, RuleAction)
        else None
    )
    if rejected is not None:  # ast-grep would not load the rule: its own words
        message = rejected
        refused = _refusal("rule", rejected)
    elif result.status in REFUSED:
        refused = _refusal("action", result.message or result.status)
    elif tests is not None and tests.status == "disallowed":
        refused = _refusal("tests", tests.stderr or "disallowed")
    out = {
        "status": result.status,
        "message": message,
        "exit_code": result.exit_code,
        "files_changed": result.files_changed,
        "diff": result.diff,
        "tests": None
        if tests is None
        else {"status": tests.status, "passed": tests.passed, "failed": tests.failed, **edited},
        "stdout": result.stdout,
        "stderr": result.stderr,
        "duration_ms": round((time.perf_counter() - start) * 1000, 3),
        "backend": config.backend,
        "refused": refused,
    }
    print(json.dumps(out))
    return 1 if refused else 0


def _dump(args: argparse.Namespace) -> int:
    db = lake.home() / "refactor" / "actors.sqlite"
    if not db.is_file():
        raise _Bad(f"{db}: no state store yet (no trajectory has run under this home)")
    store = StateStore(db)
    try:
        keys = [
            k
            for (k,) in store.conn.execute(
                "SELECT DISTINCT task_id FROM states WHERE task_id = ? OR task_id LIKE ? "
                "ORDER BY task_id",
                (args.task_id, f"{args.task_id}:%"),
            ).fetchall()
        ]
        if not keys:
            raise _Bad(f"task {args.task_id!r}: no saved state in {db}")
        out: dict[str, Any] = {}
        for key in keys:
            versions = store.versions(key)
            shown = versions if args.history else versions[-1:]
            out[key] = [{"version": v, "created": c, "state": s.model_dump()} for v, s, c in shown]
    finally:
        store.close()
    if args.format == "text":
        for key, versions in out.items():
            for entry in versions:
                print(f"== {key} v{entry['version']}")
                print(render(State.model_validate(entry["state"])))
    else:
        print(json.dumps(out, indent=2))
    return 0
