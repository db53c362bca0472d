"""``pumice.testing.up.InProcessUp``: ``pumice up`` in the test's loop (review 13 L6: the start-up
and stop lines that eight tests repeated)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from pumice.cli.up import UpOptions, run_up
from pumice.client.kubeconfig import connect
from pumice.testing.kube_control_plane import free_port
from pumice.testing.up import InProcessUp


def _opts(tmp_path: Path, port: int) -> UpOptions:
    return UpOptions(data_dir=tmp_path / "data", port=port, runtime="simulated", nodes=1, node_cpu="2",
                     node_memory="4Gi", network="host", pod_egress="none")


@pytest.mark.timeout(180)
async def test_start_returns_the_kubeconfig_of_a_serving_api_and_stop_ends_the_task(tmp_path: Path) -> None:
    up = await InProcessUp.start(partial(run_up, _opts(tmp_path, free_port())))
    try:
        client = connect(up.kubeconfig)
        try:
            assert (await client.request("GET", "/version"))["gitVersion"].startswith("v1.")
        finally:
            await client.close()
    finally:
        await up.stop()
    assert up.task.done() and up.task.exception() is None


async def test_start_raises_what_run_up_raised_before_serving(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError, match=r"cannot listen on 127\.0\.0\.1:"):
            await InProcessUp.start(partial(run_up, _opts(tmp_path, taken.getsockname()[1])))


async def test_a_start_that_times_out_tells_how_run_up_then_ended() -> None:
    async def answers_never(stop_event: asyncio.Event, on_ready: Callable[[Path], None]) -> None:
        await stop_event.wait()
        raise RuntimeError("stopped badly")

    with pytest.raises(TimeoutError, match=r"did not answer within 0\.01 s") as err:
        await InProcessUp.start(answers_never, timeout=0.01)
    assert err.value.__notes__ == ["pumice up then ended with: RuntimeError('stopped badly')"]


async def test_a_run_up_that_ends_without_answering_is_not_called_a_timeout() -> None:
    async def ends_at_once(stop_event: asyncio.Event, on_ready: Callable[[Path], None]) -> None:
        return None

    with pytest.raises(RuntimeError, match="pumice up ended before its API server answered"):
        await InProcessUp.start(ends_at_once, timeout=60)


@pytest.mark.timeout(180)
async def test_component_statuses_report_each_part_pumice_up_runs(tmp_path: Path) -> None:
    up = await InProcessUp.start(partial(run_up, _opts(tmp_path, free_port())))
    try:
        client = connect(up.kubeconfig)
        try:
            items = (await client.request("GET", "/api/v1/componentstatuses"))["items"]
        finally:
            await client.close()
    finally:
        await up.stop()
    assert {i["metadata"]["name"]: i["conditions"][0]["status"] for i in items} == {
        "controller-manager": "True", "node-agent": "True", "scheduler": "True", "storage": "True",
        "volcano-scheduler": "True"}
