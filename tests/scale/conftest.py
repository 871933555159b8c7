"""Session cluster for tests/scale: started once, stopped at the end of the session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cluster_support import Cluster, running_cluster

ENV_KEYS = (
    "VERILEARN_HOME",
    "DAGSTER_HOME",
    "VERILEARN_CONFIG_DIR",
    "VERILEARN_BROKER_URL",
    "VERILEARN_BACKEND_URL",
    "VERILEARN_POSTGRES_URL",
    "VERILEARN_CELERY_WORKERS",
)


@pytest.fixture(scope="session")
def session_cluster() -> Iterator[Cluster]:
    """Redis, Postgres and two Celery workers on free loopback ports, for the session."""
    with running_cluster(workers=2) as c:
        yield c


@pytest.fixture
def cluster(session_cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Cluster:
    """The session cluster; during the test this process sees the same configuration (home,
    config dir, URLs) as the workers. Only during it: a test after this folder's, in the
    same session, must see its own configuration, not the cluster's narrowed one."""
    for key in ENV_KEYS:
        monkeypatch.setenv(key, session_cluster.env[key])
    return session_cluster
