"""The loopback NDIF (:mod:`interp.testing.loopback`): a server process where this library cannot
be imported, reached through nnsight's own ``RemoteBackend`` client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from interp.testing.loopback import Loopback, local_repo_ids, loopback_ndif


@pytest.fixture(scope="session")
def ndif() -> Iterator[Loopback]:
    with loopback_ndif() as server:
        yield server


@pytest.fixture(autouse=True)
def _local_ids() -> Iterator[None]:
    with local_repo_ids():
        yield
