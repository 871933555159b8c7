"""One jail per (client, backend) for the module: the hostile suite runs against each."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from isolation_clients import CLIENTS, LIMITED, Jailed, open_client


def _ids(pair: tuple[str, str]) -> str:
    return "-".join(pair)


@pytest.fixture(scope="module", params=CLIENTS, ids=_ids)
def jailed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Jailed]:
    client, backend = request.param
    yield from open_client(client, backend, tmp_path_factory.mktemp(f"iso-{client}-{backend}"))


@pytest.fixture(scope="module", params=LIMITED, ids=_ids)
def limited(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Jailed]:
    """The clients whose jail carries time, memory and pids limits (every one)."""
    client, backend = request.param
    yield from open_client(client, backend, tmp_path_factory.mktemp(f"lim-{client}-{backend}"))
