"""Session cluster for tests/scale: started once, stopped at the end of the session."""

from __future__ import annotations

import os
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
def cluster() -> Iterator[Cluster]:
    """Redis, Postgres and two Celery workers on free loopback ports; this process sees the
    same configuration (home, config dir, URLs) as the workers."""
    saved = {k: os.environ.get(k) for k in ENV_KEYS}
    with running_cluster(workers=2) as c:
        os.environ.update({k: c.env[k] for k in ENV_KEYS})
        try:
            yield c
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
