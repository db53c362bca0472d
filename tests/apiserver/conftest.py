"""Fixtures for the API server tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from pumice.testing.cluster import LocalCluster, local_cluster


@pytest.fixture
async def cluster() -> AsyncIterator[LocalCluster]:
    async with local_cluster() as c:
        yield c
