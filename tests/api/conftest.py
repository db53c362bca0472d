from __future__ import annotations

from pathlib import Path

import pytest

from pumice.testing.paths import shared_dir

SHARED = shared_dir()
KUBERAY = SHARED / "samples" / "kuberay"
VOLCANO = SHARED / "samples" / "volcano"


@pytest.fixture
def shared() -> Path:
    return SHARED
