from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pumice.controllers.volcano import admission_plugins
from pumice.testing.cluster import local_cluster
from pumice.testing.volcano_controllers import MiniKubelet, running_controllers


@contextlib.asynccontextmanager
async def volcano_cluster(**options: Any) -> AsyncIterator[Any]:
    """local_cluster with the Volcano admission plugins, the Volcano controllers and a node agent."""
    mutating, validating = admission_plugins()
    async with contextlib.AsyncExitStack() as stack:
        c = await stack.enter_async_context(local_cluster(admission=[*mutating, *validating]))
        c.mgr = await stack.enter_async_context(running_controllers(c.client, **options))
        kubelet = MiniKubelet(c.client)
        kubelet.start()
        stack.push_async_callback(kubelet.stop)
        c.kubelet = kubelet
        yield c


@pytest.fixture
async def cluster() -> AsyncIterator[Any]:
    async with volcano_cluster() as c:
        yield c
