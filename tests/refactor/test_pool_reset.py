"""A pooled Docker container's reset (`pid1.reset`) wipes only where something is left, so
it lists before it forks: what a workspace's commands hide there must still make it wipe.

The cheapest hostile answer to a listing-based reset: entries the next workspace could
read but the listing might miss or skip. Here a command hides data in a mode-000 folder
in /dev/shm and in /tmp, and leaves a System V message queue and semaphore set (no shared
memory segment, which the pool test already plants): the next workspace in the same
container finds none of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from backends import require_backend
from refactor_support import refactor_config

from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.verify.runner import apply_action, cleanup, prepare_workspace

HIDE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
assert libc.msgget(0x5EED, 0o1600) >= 0, ctypes.get_errno()  # IPC_CREAT | 0600
assert libc.semget(0x5EED, 1, 0o1600) >= 0, ctypes.get_errno()
for top in ('/dev/shm', '/tmp'):
    os.makedirs(f'{top}/hidden/deeper')
    open(f'{top}/hidden/deeper/secret', 'w').write('KEY')
    os.chmod(f'{top}/hidden/deeper', 0)
    os.chmod(f'{top}/hidden', 0)
print('hidden', flush=True)
"""

LOOK = """
import os
mounts = {line.split()[1] for line in open('/proc/self/mounts')}
def left(d):
    return [n for n in os.listdir(d) if os.path.join(d, n) not in mounts
            and not any(m.startswith(os.path.join(d, n) + '/') for m in mounts)]
print('shm', os.listdir('/dev/shm'), 'tmp', left('/tmp'))
for kind in ('msg', 'sem', 'shm'):
    print(kind, open(f'/proc/sysvipc/{kind}').read().splitlines()[1:])
"""


@pytest.fixture
def docker_config(tmp_path: Path) -> RefactorConfig:
    require_backend("docker")
    return refactor_config("docker", tmp_path, action_timeout_s=15)


def test_reset_wipes_what_a_workspace_hid_for_the_next(docker_config: RefactorConfig) -> None:
    from verilearn_assets.core.isolation.docker_pool import drain

    assert docker_config.docker.lifetime == "pool"
    drain()
    first = prepare_workspace("t-hide-1", {"a.py": "A = 1\n"}, docker_config)
    container_id = first.jail.container_id
    try:
        hid = apply_action(first, {"kind": "command", "argv": ["python", "-c", HIDE]})
        assert hid.exit_code == 0 and "hidden" in hid.stdout, hid
    finally:
        cleanup(first)
    second = prepare_workspace("t-hide-2", {"b.py": "B = 1\n"}, docker_config)
    try:
        assert second.jail.container_id == container_id  # the same container, reset
        seen = apply_action(second, {"kind": "command", "argv": ["python", "-c", LOOK]})
    finally:
        cleanup(second)
        drain()
    assert seen.exit_code == 0, seen
    lines = seen.stdout.splitlines()
    assert lines[0] == "shm [] tmp []", seen.stdout
    assert lines[1:] == ["msg []", "sem []", "shm []"], seen.stdout
