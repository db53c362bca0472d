from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pumice.node.agent import NodeAgent
from pumice.testing.fake_client import FakeClient

ROOT = os.geteuid() == 0


@pytest.fixture
def data_dir() -> Any:
    # Not under /tmp: as root every Pod gets a private /tmp that would hide it.
    base = Path("/var/tmp") if ROOT else Path(tempfile.gettempdir())
    d = Path(tempfile.mkdtemp(prefix="pumice-node-test-", dir=base))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
async def client() -> AsyncIterator[FakeClient]:
    c = FakeClient(graceful_pod_deletion=True)
    yield c
    await c.close()


@pytest.fixture
async def agent(client: FakeClient, data_dir: Path) -> AsyncIterator[NodeAgent]:
    a = NodeAgent(client, runtime="process", data_dir=data_dir, node_names=["node-0"], node_cpu="4",
                  node_memory="8Gi", backoff_base=0.2, backoff_max=1.0, lease_renew_interval=None,
                  stop_grace=2.0)
    await a.start()
    yield a
    await a.stop()
