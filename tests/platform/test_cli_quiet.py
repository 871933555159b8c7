"""A newcomer's console: no library warnings or leak messages, a `--help` that says what each
command does with one example, and a mistyped command that names the closest one."""

from __future__ import annotations

import argparse
import io
import os
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from verilearn_assets.cli import build_parser, main
from verilearn_assets.core.library_warnings import KNOWN, keep_off_console

REPO = Path(__file__).resolve().parents[2]
# Commands that load the code location's modules (where Dagster warns) or touch the lake;
# on an empty home each ends with its one-line error, after every import has happened.
COMMANDS = (
    ("--help",),
    ("train", "sft"),
    ("gate",),
    ("report",),
    ("inspect", "questions"),
)


def _start(home: Path, *argv: str) -> subprocess.Popen:
    env = os.environ | {"VERILEARN_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    env.pop("PYTHONWARNINGS", None)
    return subprocess.Popen(
        argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_commands_print_no_library_warning_and_no_leak(tmp_path: Path) -> None:
    cli = (sys.executable, "-m", "verilearn_assets.cli")
    homes = [tmp_path / f"home{i}" for i in range(len(COMMANDS) + 1)]
    for home in homes:  # one each: two commands creating one Dagster instance at once race
        (home / "dagster").mkdir(parents=True)
    # the control: the same imports outside the CLI do warn, so the check below can fail
    bare = _start(homes[0], sys.executable, "-c", "import verilearn_assets.training.sft.assets")
    runs = {argv: _start(home, *cli, *argv) for argv, home in zip(COMMANDS, homes[1:], strict=True)}
    _, bare_err = bare.communicate(timeout=300)
    assert bare.returncode == 0, bare_err
    assert "BetaWarning" in bare_err and "PreviewWarning" in bare_err, bare_err
    for argv, proc in runs.items():
        out, err = proc.communicate(timeout=300)
        what = f"verilearn {' '.join(argv)} (exit {proc.returncode}):\n{err}"
        assert proc.returncode in (0, 1, 2), what  # 3 would be a crash
        assert "Warning" not in err and "Warning" not in out, what
        assert "leaked" not in err, what


def test_known_warnings_go_to_a_redirected_stderr_and_others_to_the_console(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dagster._utils.warnings import BetaWarning, PreviewWarning

    console, log = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", console)
    monkeypatch.setattr(sys, "stderr", console)

    def plain(message, category, filename, lineno, file=None, line=None) -> None:
        """Python's own display (pytest records warnings instead while a test runs)."""
        text = warnings.formatwarning(message, category, filename, lineno, line)
        (file or sys.stderr).write(text)

    monkeypatch.setattr(warnings, "showwarning", plain)  # restored after the test
    keep_off_console()
    keep_off_console()  # main() and definitions.py both install it
    beta = f"{KNOWN[0][2]} is currently in beta, and may have breaking changes"
    preview = f"{KNOWN[1][2]} is currently in preview"
    warnings.showwarning(BetaWarning(beta), BetaWarning, "training/assets.py", 38)
    warnings.showwarning(PreviewWarning(preview), PreviewWarning, "decorator.py", 220)
    assert console.getvalue() == ""
    # a warning we did not choose still reaches the console, even of the same category
    warnings.showwarning(BetaWarning("Class `Other` is beta"), BetaWarning, "x.py", 1)
    warnings.showwarning(UserWarning(beta), UserWarning, "x.py", 2)
    assert "Class `Other` is beta" in console.getvalue() and "UserWarning" in console.getvalue()
    # stderr redirected to a log file (`verilearn demo` loads the code location so): kept
    monkeypatch.setattr(sys, "stderr", log)
    warnings.showwarning(BetaWarning(beta), BetaWarning, "training/assets.py", 38)
    assert "BetaWarning" in log.getvalue(), log.getvalue()


def _commands(parser: argparse.ArgumentParser, path: str = ""):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                where = f"{path} {name}".strip()
                yield where, sub
                yield from _commands(sub, where)


def test_every_help_says_what_the_command_does_and_shows_an_example() -> None:
    parser = build_parser()
    commands = dict(_commands(parser))
    assert {"demo", "report", "gate", "inspect", "sandbox exec", "train sft"} <= set(commands)
    for where, sub in commands.items():
        text = sub.format_help()
        assert sub.description, f"verilearn {where} --help says nothing of what it does"
        assert "".join(sub.description.split()) in "".join(text.split()), where
        example = text.split("example:\n", 1)
        assert len(example) == 2, f"verilearn {where} --help has no example:\n{text}"
        assert example[1].strip().startswith(f"verilearn {where}"), (where, example[1])
        args = parser.parse_args(shlex.split(example[1])[1:])  # the example is a real call
        assert args.handler, where
    top = parser.format_help()
    assert "examples:" in top and all(f"    {name}" in top for name in ("demo", "report", "gate"))


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["reprot"], "did you mean 'report'?"),
        (["inspcet", "questions"], "did you mean 'inspect'?"),
        (["sandbox", "exce", "f.py"], "did you mean 'exec'?"),
        (["report", "--format", "tabel"], "did you mean 'table'?"),
    ],
)
def test_a_mistyped_command_names_the_closest_one(
    argv: list[str], hint: str, capsys: pytest.CaptureFixture
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert hint in err and "invalid choice" in err, err


def test_a_command_far_from_every_name_gets_the_list_and_no_guess(
    capsys: pytest.CaptureFixture,
) -> None:
    with pytest.raises(SystemExit):
        main(["zzzzzz"])
    err = capsys.readouterr().err
    assert "did you mean" not in err and "choose from demo, report" in err, err
