"""`make cluster-up` / `cluster-down` with the home under a 0700 directory (a clone under
/root): Postgres, run as the `postgres` user when we are root, cannot enter the home, so
its data directory lives in that user's home, linked from `<home>/cluster/pg`, and
`make cluster-clean` removes it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import pytest
from cluster_support import REPO, Cluster, running_cluster

pytestmark = [pytest.mark.slow]


def _make(cluster: Cluster, target: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "-s", target], cwd=REPO, env=cluster.env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def _psql(cluster: Cluster, sql: str) -> str:
    url = urlparse(cluster.env["VERILEARN_POSTGRES_URL"])
    pg_bin = sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1]
    out = subprocess.run(
        [pg_bin / "psql", "-h", url.hostname, "-p", str(url.port), "-U", url.username,
         "-d", url.path.lstrip("/"), "-tAc", sql],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    return out.stdout.strip()


def test_cluster_up_and_down_with_the_home_under_a_closed_directory() -> None:
    with running_cluster(workers=1, base_mode=0o700) as cluster:
        assert cluster.base.stat().st_mode & 0o777 == 0o700
        pg = cluster.cluster_dir / "pg"
        data = pg.resolve()
        if os.getuid() == 0:  # as another user, Postgres runs as that user, inside the home
            assert pg.is_symlink() and not data.is_relative_to(cluster.base), data
            assert data.owner() == "postgres" and (data / "PG_VERSION").is_file()
        assert _psql(cluster, "SELECT current_database()") == "verilearn"
        again = _make(cluster, "cluster-up")  # idempotent, and quiet
        assert again.returncode == 0, again.stdout + again.stderr
        assert "postgres: already running" in again.stdout
        down = _make(cluster, "cluster-down")
        assert down.returncode == 0 and "postgres: stopped" in down.stdout, down.stderr
        up = _make(cluster, "cluster-up")  # the same data directory is started again
        port = urlparse(cluster.env["VERILEARN_POSTGRES_URL"]).port
        assert f"postgres: started on 127.0.0.1:{port} ({data})" in up.stdout, up.stdout
        for run in (again, down, up):
            assert "Warning" not in run.stdout + run.stderr
            assert "leaked" not in run.stdout + run.stderr
    assert not data.exists(), f"make cluster-clean left {data}"
