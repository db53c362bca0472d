"""``pumice up`` runs with :data:`pumice.cli.up.UP_GC_THRESHOLD` (review 13 L5): the collector's
young-generation threshold that keeps full passes, which stop every thread, rare (ff46de8)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pumice.cli import up as up_cli
from pumice.cli.main import main


def test_pumice_up_runs_its_loop_under_the_raised_gc_threshold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, ...]] = []

    def run(coro: Any) -> None:  # stands in for the control plane: records what it would run under
        seen.append(gc.get_threshold())
        coro.close()

    before = gc.get_threshold()
    monkeypatch.setattr(up_cli.asyncio, "run", run)
    try:
        r = CliRunner().invoke(main, ["up", "--runtime", "simulated", "--data-dir", str(tmp_path / "d"), "--port", "0"])
    finally:
        gc.set_threshold(*before)
    assert r.exit_code == 0, r.output
    assert seen == [up_cli.UP_GC_THRESHOLD]
    assert up_cli.UP_GC_THRESHOLD[0] > 700  # raised above CPython's default young threshold
