"""Fixtures for the API server tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest

from pumice.testing.cluster import LocalCluster, local_cluster


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
