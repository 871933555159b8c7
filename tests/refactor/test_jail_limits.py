"""The bwrap jail's limits as the jailed command sees them (issue 25 items 1 and 5).

bwrap's limits are set from the host while bwrap waits on `--block-fd` (`BwrapGate`, no
`preexec_fn`): every rlimit and both cgroups (memory and pids) must still hold for the
command itself and for what it forks. The cgroup layout is the one this machine has:
v2 (one group with `memory.max`, `memory.swap.max`, `pids.max`) or v1 (a group in each of
the `memory` and `pids` hierarchies); the test checks that one.
"""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path

import pytest
from refactor_support import refactor_config

from verilearn_assets.core.isolation.cgroups import CGROUP_ROOT, JailCgroup
from verilearn_assets.refactor.verify.runner import apply_action, cleanup, prepare_workspace

PROBE = """
import json, os, resource
def look():
    limits = {name: resource.getrlimit(getattr(resource, name))
              for name in ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NOFILE",
                           "RLIMIT_CORE")}
    with open("/proc/self/cgroup") as fh:
        groups = [line.strip() for line in fh]
    return {"limits": limits, "cgroup": groups}
r, w = os.pipe()
child = os.fork()
if child == 0:  # what a forked process of the command has
    os.write(w, json.dumps(look()).encode())
    os._exit(0)
os.waitpid(child, 0)
print(json.dumps({"self": look(), "child": json.loads(os.read(r, 65536))}))
"""


def test_bwrap_command_and_its_children_have_every_limit(tmp_path: Path) -> None:
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
    ws = prepare_workspace("t-limits", {"mod.py": "x = 1\n"}, config)
    try:
        step = apply_action(ws, {"kind": "command", "argv": ["python", "-c", PROBE]})
    finally:
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
    for who in ("self", "child"):
        assert seen[who]["limits"] == expected, (who, seen[who])
        lines = seen[who]["cgroup"]
        wanted = ["0::"] if v2 else [":memory:", ":pids:"]
        for marker in wanted:
            line = next(g for g in lines if marker in g)
            assert "verilearn-refactor-" in line, (who, marker, lines)
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
