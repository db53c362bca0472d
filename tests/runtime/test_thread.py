"""A component on its own thread and loop (``pumice.runtime.thread.run_in_thread``), and its
in-process client given the API server's loop (``in_process(..., loop=)``): what ``pumice up``
runs the Volcano scheduler with."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from pumice.api import scheme
from pumice.client.kube import Client
from pumice.client.kubeconfig import in_process
from pumice.runtime.thread import run_in_thread
from pumice.testing.cluster import local_cluster


def _cm(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"k": name}}


async def test_a_client_on_another_threads_loop_reads_writes_and_watches_the_in_process_server() -> None:
    async with local_cluster() as c:
        server_loop = asyncio.get_running_loop()
        seen: list[tuple[str, str]] = []
        threads: set[str] = set()

        async def component(stop: asyncio.Event) -> None:
            api = in_process(c.app, scheme=c.scheme, loop=server_loop)
            try:
                threads.add(threading.current_thread().name)
                await api.create(_cm("from-thread"))
                got = await api.get(scheme.CONFIG_MAP, "from-main", "default")
                assert got["data"] == {"k": "from-main"}
                events = api.watch(scheme.CONFIG_MAP, "default", read_only=True)
                async for ev in events:
                    seen.append((ev.type, ev.object["metadata"]["name"]))
                    if len(seen) == 3:
                        break
                await events.aclose()  # closes the server's stream on its loop
                await stop.wait()
            finally:
                await api.close()

        await c.client.create(_cm("from-main"))
        stop = asyncio.Event()
        runner = asyncio.create_task(run_in_thread(component, stop_event=stop, name="test-component"))
        for _ in range(500):
            if len(seen) == 2:
                break
            await asyncio.sleep(0.01)
        await c.client.create(_cm("later"))
        for _ in range(500):
            if len(seen) == 3:
                break
            await asyncio.sleep(0.01)
        stop.set()
        await asyncio.wait_for(runner, 30)
        assert threads == {"test-component"}
        assert sorted(seen[:2]) == [("ADDED", "from-main"), ("ADDED", "from-thread")]
        assert seen[2] == ("ADDED", "later")
        assert not any(t.name == "test-component" for t in threading.enumerate())


async def test_the_server_loop_answers_while_the_component_thread_holds_its_own_loop() -> None:
    async with local_cluster() as c:
        server_loop = asyncio.get_running_loop()
        busy, answered = threading.Event(), threading.Event()
        gave_up: list[bool] = []

        async def component(stop: asyncio.Event) -> None:
            busy.set()
            until = time.monotonic() + 60  # a liveness bound, not a performance claim
            while not answered.is_set() and time.monotonic() < until:
                sum(range(1000))  # synchronous work without an await, as a scheduling session
            gave_up.append(not answered.is_set())
            api = in_process(c.app, scheme=c.scheme, loop=server_loop)
            try:
                await api.create(_cm("after-the-work"))
            finally:
                await api.close()
            await stop.wait()

        stop = asyncio.Event()
        runner = asyncio.create_task(run_in_thread(component, stop_event=stop, name="busy-component"))
        await asyncio.to_thread(busy.wait, 10)
        for i in range(5):  # the thread's loop is held until these are answered
            await c.client.create(_cm(f"during-{i}"))
        answered.set()
        for _ in range(1000):
            if "after-the-work" in await _names(c.client):
                break
            await asyncio.sleep(0.01)
        stop.set()
        await asyncio.wait_for(runner, 30)
        assert gave_up == [False]
        assert {f"during-{i}" for i in range(5)} | {"after-the-work"} <= await _names(c.client)


async def _names(client: Client) -> set[str]:
    items = (await client.list(scheme.CONFIG_MAP, "default")).items
    return {cm["metadata"]["name"] for cm in items}


async def test_an_error_in_the_thread_is_raised_in_the_callers_task() -> None:
    async def component(stop: asyncio.Event) -> None:
        raise ValueError("bad configuration")

    with pytest.raises(ValueError, match="bad configuration"):
        await asyncio.wait_for(run_in_thread(component, stop_event=asyncio.Event(), name="failing"), 30)


async def test_setting_the_stop_event_ends_the_thread() -> None:
    stopped = threading.Event()

    async def component(stop: asyncio.Event) -> None:
        await stop.wait()
        stopped.set()

    stop = asyncio.Event()
    runner = asyncio.create_task(run_in_thread(component, stop_event=stop, name="stoppable"))
    await asyncio.sleep(0.05)
    assert not runner.done()
    stop.set()
    await asyncio.wait_for(runner, 30)
    assert stopped.is_set()
    assert not any(t.name == "stoppable" for t in threading.enumerate())
