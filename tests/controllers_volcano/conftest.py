from __future__ import annotations

import pytest

from pumice.testing.fake_client import FakeClient
from pumice.testing.volcano_controllers import volcano_scheme


@pytest.fixture
def client() -> FakeClient:
    return FakeClient(volcano_scheme())
