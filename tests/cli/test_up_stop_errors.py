"""``pumice up`` stopping: a component that fails while it stops (the Volcano scheduler's last
writes, on its own thread since session 13) is logged with its name and reason, not dropped."""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pumice.cli.up import UpOptions, run_up
from pumice.testing.kube_control_plane import free_port
from pumice.testing.up import InProcessUp


@pytest.mark.timeout(180)
async def test_an_error_a_component_raises_while_stopping_is_logged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from pumice.scheduler import volcano

    async def fails_on_stop(api: Any, *, stop_event: asyncio.Event, **_: Any) -> None:
        await stop_event.wait()
        raise RuntimeError("last writes not sent: the API server went away")

    monkeypatch.setattr(volcano, "run", fails_on_stop)
    opts = UpOptions(data_dir=tmp_path / "data", port=free_port(), runtime="simulated", nodes=1, node_cpu="2",
                     node_memory="4Gi", network="host", pod_egress="none")
    up = await InProcessUp.start(partial(run_up, opts))
    with caplog.at_level(logging.ERROR, logger="pumice.up"):
        await up.stop()
    assert [r.getMessage() for r in caplog.records if r.name == "pumice.up"] == [
        "volcano-scheduler failed while stopping: RuntimeError: last writes not sent: the API server went away"]
