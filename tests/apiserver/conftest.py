"""Fixtures for the API server tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest

from pumice.testing.cluster import HttpServer, LocalCluster, local_cluster
from pumice.testing.kubectl import Kubectl


@pytest.fixture
async def cluster() -> AsyncIterator[LocalCluster]:
    async with local_cluster() as c:
        yield c


@pytest.fixture
async def http(cluster: LocalCluster) -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP client of ``cluster``'s API server over ASGI, with its bearer token."""
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=cluster.app), base_url="http://apiserver",
                                  headers={"Authorization": f"Bearer {cluster.server.token}"}) as c:
        yield c


@pytest.fixture(scope="module")
def kubectl(srv: HttpServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    """Real kubectl against the module's own ``srv`` (each module serves its own API server)."""
    cache = tmp_path_factory.mktemp("kubecache")
    return Kubectl(srv.kubeconfig, cache, cache_dir=cache / "cache")
