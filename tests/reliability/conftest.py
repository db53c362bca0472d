"""The reliability suite (issue 14): crash safety, component faults, load, bad input, security.

Every test has a short size that runs in ``make test`` and a full size that runs with
``PUMICE_RELIABILITY=full`` (``make reliability``). Figures go to stdout and, with
``PUMICE_RELIABILITY_REPORT=<file>``, into that JSON file (one key per test).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

FULL = os.environ.get("PUMICE_RELIABILITY") == "full"


def size(short: int, full: int) -> int:
    """The short figure in ``make test``, the full one under ``PUMICE_RELIABILITY=full``."""
    return full if FULL else short


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Any:
    """``report(**figures)``: print the figures and add them to the report file."""

    def write(**figures: Any) -> None:
        name = request.node.name
        print(f"\nRELIABILITY {name}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))
        path = os.environ.get("PUMICE_RELIABILITY_REPORT")
        if path:
            p = Path(path)
            data = json.loads(p.read_text()) if p.exists() else {}
            data[name] = {"full": FULL, **figures}
            p.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")

    return write
