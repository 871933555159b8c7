"""The bwrap jail's limits as the jailed command sees them (issue 25 items 1 and 5).

bwrap's rlimits are set from the host while bwrap waits on `--block-fd` (`BwrapGate`, no
`preexec_fn`), and bwrap is born in the jail's cgroups (`JailCgroup.launcher`): every
rlimit and both cgroups (memory and pids) must still hold for the command itself and for
what it forks. The cgroup layout is the one this machine has:
v2 (one group with `memory.max`, `memory.swap.max`, `pids.max`) or v1 (a group in each of
the `memory` and `pids` hierarchies); the test checks that one.
"""

from __future__ import annotations

import json
import os
import resource
import threading
import time
import uuid
from pathlib import Path

import pytest
from refactor_support import refactor_config

from verilearn_assets.core.isolation.cgroups import CGROUP_ROOT, JailCgroup
from verilearn_assets.refactor.verify.runner import apply_action, cleanup, prepare_workspace

PROBE = """
import json, os, resource, sys, time
def look():
    limits = {name: resource.getrlimit(getattr(resource, name))
              for name in ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NOFILE",
                           "RLIMIT_CORE")}
    with open("/proc/self/cgroup") as fh:
        groups = [line.strip() for line in fh]
    return {"limits": limits, "cgroup": groups}
def hold():  # both processes alive until the host has looked at them (the 'seen' file)
    open(f"ready-{os.getpid()}", "w").close()
    for _ in range(400):
        if os.path.exists("seen"):
            return
        time.sleep(0.01)
r, w = os.pipe()
child = os.fork()
if child == 0:  # what a forked process of the command has
    os.write(w, json.dumps(look()).encode())
    hold()
    os._exit(0)
hold()
os.waitpid(child, 0)
print(json.dumps({"self": look(), "child": json.loads(os.read(r, 65536))}))
# MARKER
"""


def _host_view(marker: str) -> dict[int, tuple[str, list[str]]]:
    """Host pid → (its program, its /proc/<pid>/cgroup lines), for every host process
    whose command line holds `marker` (bwrap's two processes and the probe's two)."""
    out: dict[int, tuple[str, list[str]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read()
            if marker.encode() not in argv:
                continue
            with open(f"/proc/{entry}/cgroup") as fh:
                out[int(entry)] = (Path(argv.split(b"\0")[0].decode()).name, fh.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return out


def test_bwrap_command_and_its_children_have_every_limit(tmp_path: Path) -> None:
    """Every rlimit inside, and, seen from the host while they run, the command and its
    forked child both in the jail's memory and pids cgroups. Inside, the jail's cgroup
    is the root of its cgroup namespace (bwrap is born in it: `JailCgroup.launcher`): it
    reads `/`, no host cgroup name."""
    if os.geteuid() != 0:
        pytest.skip("cgroups need root here")
    v2 = (CGROUP_ROOT / "cgroup.controllers").exists()
    probe = JailCgroup(16, 64)
    try:
        expected_layout = (
            [CGROUP_ROOT / probe.paths[0].name]
            if v2
            else [CGROUP_ROOT / "pids" / probe.paths[0].name,
                  CGROUP_ROOT / "memory" / probe.paths[0].name]
        )  # fmt: skip
        assert probe.paths == expected_layout, (v2, probe.paths)
        if v2:
            assert (probe.paths[0] / "memory.max").read_text().strip() == str(64 << 20)
            assert (probe.paths[0] / "pids.max").read_text().strip() == "16"
        else:
            assert (probe.paths[0] / "pids.max").read_text().strip() == "16"
            limit = (probe.paths[1] / "memory.limit_in_bytes").read_text().strip()
            assert limit == str(64 << 20)
    finally:
        probe.remove()
    config = refactor_config(
        "bwrap", tmp_path, cpu_s=7, memory_mb=300, file_size_mb=5, open_files=99, pids=40,
        require_cgroup=True,
    )  # fmt: skip
    marker = f"probe-{uuid.uuid4().hex}"
    ws = prepare_workspace("t-limits", {"mod.py": "x = 1\n"}, config)
    host: dict[int, tuple[str, list[str]]] = {}

    def watch() -> None:  # the host's look, once both processes said they are there
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if len(list(ws.tree.glob("ready-*"))) == 2:
                host.update(_host_view(marker))
                break
            time.sleep(0.01)
        (ws.tree / "seen").touch()

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        code = PROBE.replace("MARKER", marker)
        step = apply_action(ws, {"kind": "command", "argv": ["python", "-c", code]})
    finally:
        watcher.join()
        cleanup(ws)
    assert step.exit_code == 0, step
    seen = json.loads(step.stdout)
    expected = {
        "RLIMIT_CPU": [7, 7],
        "RLIMIT_AS": [300 << 20, 300 << 20],
        "RLIMIT_FSIZE": [5 << 20, 5 << 20],
        "RLIMIT_NOFILE": [99, 99],
        "RLIMIT_CORE": [0, 0],
    }
    wanted = ["0::"] if v2 else [":memory:", ":pids:"]
    for who in ("self", "child"):
        assert seen[who]["limits"] == expected, (who, seen[who])
        for marker_line in wanted:
            line = next(g for g in seen[who]["cgroup"] if marker_line in g)
            assert line.endswith(":/"), (who, line)  # its namespace's root, nothing above
    programs = sorted(program for program, _ in host.values())
    assert programs.count("bwrap") == 2, host  # seen from the host: bwrap's two ...
    assert len([p for p in programs if p.startswith("python")]) == 2, host  # ... the probe's
    for pid, (_, lines) in host.items():
        for marker_line in wanted:
            line = next(g for g in lines if marker_line in g)
            assert "verilearn-refactor-" in line, (pid, marker_line, lines)
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] != 99  # the host kept its own


def test_a_bwrap_that_cannot_set_up_says_why_and_leaves_nothing(tmp_path: Path) -> None:
    """bwrap dying during its own setup (here: a mount source that does not exist), before
    or after its sandbox child exists: its own message comes back as the command's
    failure, and no descriptor of the gate stays open."""
    from verilearn_assets.core.isolation.run import BwrapGate
    from verilearn_assets.refactor.verify.jail import _run_local

    config = refactor_config("bwrap", tmp_path)
    fds = len(os.listdir("/proc/self/fd"))
    for unshare in ([], ["--unshare-all"]):
        gate = BwrapGate()
        command = ["bwrap", *unshare, "--ro-bind", "/", "/", "--ro-bind", str(tmp_path / "gone"),
                   "/x", *gate.args(), "--", "/bin/echo", "ran"]  # fmt: skip
        try:
            done = _run_local(config, command, None, {"PATH": "/usr/bin:/bin"}, 10, (), gate)
        finally:
            gate.close()
        assert done.exit_code != 0 and done.stdout == "", done
        assert done.stderr.startswith("bwrap: Can't find source path"), done
    assert len(os.listdir("/proc/self/fd")) == fds


def test_the_cgroup_launcher_runs_nothing_when_it_cannot_join(tmp_path: Path) -> None:
    """`JailCgroup.launcher`: a cgroup that is gone by the time the command starts (here:
    removed) ends the launcher with `JOIN_FAILED` and a message naming the file; the
    command never runs. Joined, the command runs inside the cgroup."""
    if os.geteuid() != 0:
        pytest.skip("cgroups need root here")
    import subprocess

    from verilearn_assets.core.isolation.cgroups import JOIN_FAILED

    group = JailCgroup(16, 64, prefix="verilearn-launcher-test")
    try:
        if not group.paths:
            pytest.skip("no cgroup on this machine")
        inside = subprocess.run(
            group.launcher(["/bin/cat", "/proc/self/cgroup"]), capture_output=True, text=True
        )
        assert inside.returncode == 0, inside
        assert group.paths[0].name in inside.stdout, inside.stdout
    finally:
        group.remove()
    flag = tmp_path / "ran"
    gone = subprocess.run(group.launcher(["/bin/touch", str(flag)]), capture_output=True, text=True)
    assert gone.returncode == JOIN_FAILED, gone
    assert "cannot join the cgroup" in gone.stderr and group.join_files()[0] in gone.stderr
    assert not flag.exists()
