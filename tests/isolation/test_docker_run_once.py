"""`core.isolation.docker.run_once`, one command in a fresh container, through its client:
the refactor runner with `docker.lifetime: command`. Its output comes back, a busy loop
ends at the time limit, and no container is left either way."""

from __future__ import annotations

from pathlib import Path

from backends import require_backend


def test_lifetime_command_runs_each_command_in_a_fresh_container(tmp_path: Path) -> None:
    require_backend("docker")
    from verilearn_assets.core.isolation.docker import docker_client, labelled
    from verilearn_assets.refactor.config import load_refactor_config
    from verilearn_assets.refactor.verify.docker_jail import LABEL
    from verilearn_assets.refactor.verify.runner import apply_action, cleanup, prepare_workspace

    base = load_refactor_config()
    config = base.model_copy(
        update={
            "backend": "docker",
            "workspace_root": str(tmp_path / "workspaces"),
            "log_dir": str(tmp_path / "logs"),
            "test_cache": str(tmp_path / "test_cache.sqlite"),
            "docker": base.docker.model_copy(update={"lifetime": "command"}),
            "limits": base.limits.model_copy(update={"action_timeout_s": 3}),
        }
    )
    client = docker_client()
    before = {c.id for c in labelled(client, f"{LABEL}=step")}
    ws = prepare_workspace("t-once", {"mod.py": "x = 1\n"}, config)
    try:
        hostname = "import socket; print(socket.gethostname())"
        names = [
            apply_action(ws, {"kind": "command", "argv": ["python", "-c", hostname]})
            for _ in range(2)
        ]
        assert all(n.exit_code == 0 and n.stdout.strip() for n in names), names
        assert names[0].stdout.strip() != names[1].stdout.strip()  # two containers
        busy = apply_action(ws, {"kind": "command", "argv": ["python", "-c", "while 1: pass"]})
        assert busy.status == "timeout", busy
    finally:
        cleanup(ws)
    try:
        assert {c.id for c in labelled(client, f"{LABEL}=step")} <= before
    finally:
        client.close()
