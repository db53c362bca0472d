from __future__ import annotations

from pathlib import Path

import pytest


def _shared() -> Path:
    try:
        from pumice.testing.paths import shared_dir  # type: ignore[import-not-found]

        return Path(shared_dir())
    except ImportError:
        candidate = Path(__file__).resolve().parents[2] / ".." / "shared"
        return candidate if candidate.is_dir() else Path("/work/shared")


SHARED = _shared()
KUBERAY = SHARED / "samples" / "kuberay"
VOLCANO = SHARED / "samples" / "volcano"


@pytest.fixture
def shared() -> Path:
    return SHARED
