"""One container per workspace: commands cannot leave anything to the next, none leak."""

from __future__ import annotations

import gc
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from backends import require_backend
from refactor_support import refactor_config

from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.verify.runner import (
    TestSpec,
    apply_action,
    cleanup,
    prepare_workspace,
    run_tests,
)

FILES = {"pkg/__init__.py": "", "pkg/mod.py": "X = 1\n"}


def _host_processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _leave_behind(marker: str) -> str:
    """A command that returns at once, leaving a detached sleeper, a running fork bomb and
    a file in /tmp (= $HOME) behind it."""
    return textwrap.dedent(
        f"""
        import os, time
        MARK = {marker!r}
        open('/tmp/planted', 'w').write(MARK)
        if os.fork() == 0:          # a daemon in its own session: sleeps
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        if os.fork() == 0:          # a fork bomb in another session
            os.setsid()
            while True:
                try:
                    os.fork()
                except OSError:
                    time.sleep(0.01)
        time.sleep(0.5)             # let both get going
        print('left', flush=True)
        """
    )


LOOK = """
import os
me = os.getpid()
seen = []
for p in os.listdir('/proc'):
    if p.isdigit() and int(p) not in (1, me, os.getppid()):
        try:
            seen.append(open(f'/proc/{p}/cmdline', 'rb').read().replace(b'\\0', b' ').decode())
        except OSError:
            pass
print('others', len([s for s in seen if 'MARK' in s]))
print('planted', os.path.exists('/tmp/planted'))
"""


@pytest.mark.parametrize("backend_name", ["docker", "bwrap"])
def test_a_command_leaves_nothing_to_the_next(backend_name: str, tmp_path: Path) -> None:
    require_backend(backend_name)
    config = refactor_config(backend_name, tmp_path, action_timeout_s=15, pids=48)
    marker = f"mark-{uuid.uuid4().hex}"
    ws = prepare_workspace("t-leftover", FILES, config)
    try:
        first = apply_action(
            ws, {"kind": "command", "argv": ["python", "-c", _leave_behind(marker)]}
        )
        assert first.exit_code == 0 and "left" in first.stdout, first
        # a fresh process in the same workspace sees none of it
        second = apply_action(ws, {"kind": "command", "argv": ["python", "-c", LOOK]})
        assert second.exit_code == 0, second
        assert "others 0" in second.stdout and "planted False" in second.stdout, second.stdout
        assert _host_processes_with(marker) == []
        # a command killed at its timeout takes its group with it; the workspace goes on
        spin = TestSpec(argv=["python", "-c", f"# {marker}\nwhile True: pass"], timeout_s=2)
        assert run_tests(ws, spin, use_cache=False).status == "timeout"
        assert _host_processes_with(marker) == []
        after = run_tests(ws, TestSpec(argv=["python", "-c", "print(1)"]), use_cache=False)
        assert after.status == "passed", after
        if backend_name == "docker":
            assert ws.jail is not None and ws.jail.started == 1  # one container throughout
    finally:
        cleanup(ws)


def _container_exists(container_id: str) -> bool:
    import docker

    from verilearn_assets.core.isolation.docker import docker_client

    client = docker_client()
    try:
        client.api.inspect_container(container_id)
        return True
    except docker.errors.NotFound:
        return False
    finally:
        client.close()


LIST = """import os
for d, _, fs in sorted(os.walk('.')):
    for f in sorted(fs):
        print(os.path.relpath(os.path.join(d, f)))
"""


def _own_containers() -> list[str]:
    """Refactor workspace containers this process started and that still exist."""
    from verilearn_assets.core.isolation.docker import docker_client, labelled
    from verilearn_assets.core.isolation.docker import owner as _owner
    from verilearn_assets.refactor.verify.docker_jail import LABEL, OWNER_LABEL

    client = docker_client()
    try:
        found = labelled(client, f"{LABEL}=workspace", f"{OWNER_LABEL}={_owner()}")
        return [c.short_id for c in found]
    finally:
        client.close()


@pytest.fixture
def docker_config(tmp_path: Path) -> RefactorConfig:
    require_backend("docker")
    return refactor_config("docker", tmp_path, action_timeout_s=15)


def test_container_lives_as_long_as_its_workspace(docker_config: RefactorConfig) -> None:
    from verilearn_assets.core.isolation.docker_pool import drain

    docker_config = docker_config.model_copy(
        update={"docker": docker_config.docker.model_copy(update={"lifetime": "workspace"})}
    )
    ws = prepare_workspace("t-life", FILES, docker_config)
    container_id = ws.jail.container_id
    assert _container_exists(container_id)
    # the next workspace gets its own container (started ahead: a spare), never this one
    second = prepare_workspace("t-life-2", FILES, docker_config)
    assert second.jail.container_id != container_id and second.jail.started == 1
    assert second.jail.from_spare and not ws.jail.from_spare
    assert (second.tree / "pkg" / "mod.py").read_text() == "X = 1\n"
    listing = apply_action(second, {"kind": "command", "argv": ["python", "-c", LIST]})
    assert listing.stdout.split() == ["pkg/__init__.py", "pkg/mod.py"], listing
    second_id = second.jail.container_id
    cleanup(ws)
    cleanup(second)
    drain()  # removals run in the background; the idle spare goes too
    assert not _container_exists(container_id) and not _container_exists(second_id)
    assert _own_containers() == []
    # a workspace dropped without cleanup (a crash path) takes its container with it
    dropped = prepare_workspace("t-drop", FILES, docker_config)
    container_id = dropped.jail.container_id
    del dropped
    gc.collect()
    assert not _container_exists(container_id)


def test_container_of_a_killed_process_is_reaped(docker_config: RefactorConfig) -> None:
    from verilearn_assets.core.isolation.docker import docker_client
    from verilearn_assets.core.isolation.docker_pool import POOL_PREFIX, reap_idle_dirs
    from verilearn_assets.core.procs import state
    from verilearn_assets.refactor.verify.docker_jail import reap_orphans

    script = textwrap.dedent(
        f"""
        import os, signal
        from verilearn_assets.refactor.config import RefactorConfig
        from verilearn_assets.refactor.verify.runner import prepare_workspace
        config = RefactorConfig.model_validate_json({docker_config.model_dump_json()!r})
        from verilearn_assets.refactor.verify.runner import cleanup
        pooled = prepare_workspace("t-pooled", {{"a.py": "A = 1\\n"}}, config)
        ws = prepare_workspace("t-orphan", {{"a.py": "A = 1\\n"}}, config)
        print(pooled.jail.container_id, ws.jail.container_id, flush=True)
        cleanup(pooled)  # lifetime: pool: kept idle over a .pool-<pid>-* directory
        os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no finalizer, no atexit
        """
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    out = ""
    try:
        out = owner.stdout.read()  # up to its death
        # Left unreaped: the owner stays a zombie, as a dead worker does until whatever
        # adopted it reaps it; `kill -0` would still find it.
        deadline = time.monotonic() + 10
        while state(owner.pid) != "Z":
            assert time.monotonic() < deadline, "the owner never died"
            time.sleep(0.05)
        ids = out.split()[-2:]
        assert len(ids) == 2 and all(_container_exists(i) for i in ids), out
        root = Path(docker_config.workspace_root)
        assert [d.name for d in root.glob(f"{POOL_PREFIX}*")], "the idle container's directory"
        client = docker_client()
        try:
            assert {i[:12] for i in ids} <= set(reap_orphans(client))
        finally:
            client.close()
        assert not any(_container_exists(i) for i in ids)
        assert reap_idle_dirs(root) and not list(root.glob(f"{POOL_PREFIX}*"))
    finally:
        owner.wait()
    assert owner.returncode == -9, out


def test_wedged_container_is_killed_and_replaced(
    docker_config: RefactorConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the in-container runner cannot answer (here: the container frozen), the host
    kills the container at timeout + grace; the next command gets a fresh one."""
    from verilearn_assets.core.isolation import docker_pool as docker_jail

    monkeypatch.setattr(docker_jail, "HOST_GRACE_S", 1.0)
    ws = prepare_workspace("t-wedge", FILES, docker_config)
    try:
        frozen = ws.jail.container_id
        ws.jail.client.api.pause(frozen)
        stuck = ws.jail.run([sys.executable, "-c", "print(1)"], 1.0)
        assert stuck.timed_out and "no answer" in stuck.stderr, stuck
        assert not _container_exists(frozen)
        again = run_tests(ws, TestSpec(argv=["python", "-c", "print(2)"]), use_cache=False)
        assert again.status == "passed" and ws.jail.started == 2
        assert (ws.tree / "pkg" / "mod.py").read_text() == "X = 1\n"  # the files stayed
    finally:
        cleanup(ws)


PLANT = """
import ctypes, ctypes.util, os, time
libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
assert libc.shmget(0x5EED, 4096, 0o1600) >= 0, ctypes.get_errno()  # IPC_CREAT | 0600
open('/tmp/planted', 'w').write('a')
open('/dev/shm/planted', 'w').write('a')
if os.fork() == 0:
    os.setsid()
    time.sleep(600)
    os._exit(0)
print('planted', flush=True)
"""

SEE = """
import os
print('files', sorted(os.listdir('.')))
mounts = [line.split()[1] for line in open('/proc/self/mounts')]
def left(d):  # what is in d, but the read-only mounts and the folders leading to them
    out = []
    for n in os.listdir(d):
        p = os.path.join(d, n)
        if p in mounts or n.startswith('.step-'):  # .step-*: this command's own output
            continue
        out += left(p) if any(m.startswith(p + '/') for m in mounts) else [p]
    return out
print('tmp', left('/tmp'), 'shm', os.listdir('/dev/shm'))
print('ro', open(RO).read())
print('ipc', open('/proc/sysvipc/shm').read().splitlines()[1:])
print('procs', [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid())])
"""


def test_pooled_container_serves_the_next_workspace_fresh(
    docker_config: RefactorConfig,
) -> None:
    """`lifetime: pool`: the next workspace reuses the container (no start, no removal),
    and finds nothing of the last one: no files, no /tmp or /dev/shm entries, no System V
    segment, no process. A container whose reset fails is never pooled."""
    from verilearn_assets.core.isolation.docker_pool import _IDLE, drain

    assert docker_config.docker.lifetime == "pool"  # the repository's default
    # a read-only host path under /tmp, as the host runtime is when the repository is
    # cloned there: its mount point stays, and the reset does not walk into it
    outer = Path(tempfile.mkdtemp(prefix="vl-ro-", dir="/tmp"))  # a folder on the way
    ro = outer / "runtime"
    ro.mkdir()
    (ro / "kept.txt").write_text("kept")
    outer.chmod(0o755)
    (ro / "kept.txt").chmod(0o644)
    paths = [*docker_config.system_ro_paths, str(ro)]
    docker_config = docker_config.model_copy(update={"system_ro_paths": paths})
    see = SEE.replace("RO", repr(str(ro / "kept.txt")))
    drain()
    first = prepare_workspace("t-pool-1", {"secret.py": "KEY = 1\n"}, docker_config)
    container_id = first.jail.container_id
    planted = apply_action(first, {"kind": "command", "argv": ["python", "-c", PLANT]})
    assert planted.exit_code == 0 and "planted" in planted.stdout, planted
    first_root = first.root
    cleanup(first)
    assert not first_root.exists() and len(_IDLE) == 1 and _container_exists(container_id)

    second = prepare_workspace("t-pool-2", FILES, docker_config)
    try:
        assert second.jail.container_id == container_id and second.jail.served == 2
        seen = apply_action(second, {"kind": "command", "argv": ["python", "-c", see]})
        assert seen.exit_code == 0, seen
        assert "files ['pkg']" in seen.stdout, seen.stdout
        assert "tmp [] shm []" in seen.stdout and "ipc []" in seen.stdout, seen.stdout
        assert "ro kept" in seen.stdout, seen.stdout
        assert "procs []" in seen.stdout, seen.stdout
        listing = apply_action(second, {"kind": "command", "argv": ["python", "-c", LIST]})
        assert listing.stdout.split() == ["pkg/__init__.py", "pkg/mod.py"], listing
        # a container that cannot be reset (here: its PID 1 gone) is dropped, not pooled
        second.jail.client.api.kill(container_id)
    finally:
        cleanup(second)
    assert _IDLE == []
    drain()
    assert not _container_exists(container_id) and _own_containers() == []
    shutil.rmtree(outer)


def test_the_pool_keeps_at_most_pool_size_idle_containers(docker_config: RefactorConfig) -> None:
    """`pool_size: 1`: of two workspaces ended, one container waits idle for the next and
    the other is removed with its directories; nothing is left under the workspace root
    but the idle one's."""
    from verilearn_assets.core.isolation.docker_pool import _IDLE, POOL_PREFIX, drain

    drain()
    docker = docker_config.docker.model_copy(update={"pool_size": 1})
    docker_config = docker_config.model_copy(update={"docker": docker})
    first = prepare_workspace("t-cap-1", FILES, docker_config)
    second = prepare_workspace("t-cap-2", FILES, docker_config)
    ids = [first.jail.container_id, second.jail.container_id]
    cleanup(first)
    cleanup(second)
    assert [s.container_id for _, s, _ in _IDLE] == [ids[0]]
    root = Path(docker_config.workspace_root)
    assert len(list(root.glob(f"{POOL_PREFIX}*"))) == 1
    assert not first.root.exists() and not second.root.exists()
    drain()
    assert not any(_container_exists(i) for i in ids) and _own_containers() == []
