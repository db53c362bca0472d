"""Load: 64 writers and 200 watchers against the API server process over HTTPS. Every watcher must
see every acknowledged write, in resourceVersion order; the writes' p50/p99 latency and the
server's RSS over the run are reported, and the RSS must stay flat (the writers cycle a bounded
set of objects, so a growing server is a leak).

Short: 15 s (``make test``); full: 600 s (``make reliability``).

The test's own timeout is its duration plus ten minutes, whatever ``--timeout`` or the ini file
say: pytest-timeout's default method raises ``Failed`` from a SIGALRM handler into whatever Python
code runs at that moment, which in an event loop is usually one of its ~265 tasks. Under the
project's 600-s default a full run (about 11 minutes) was cut that way, and when the alarm landed
in a watcher, that watcher ended silently: one of 200 short by an exact prefix, no re-open, its
connection closed by its own ``finally`` (issue 14; ``make reliability``'s ``--timeout=3600``
runs never showed it). So the tasks run in a ``TaskGroup``, and a task or loop callback that ends
by anything but the test's own cancel fails the test with that exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from pumice.client.kubeconfig import connect

from ._procs import rss_kib, start_apiserver, stop
from .conftest import size

NS = "default"
WRITERS = 64
WATCHERS = 200
OBJECTS_PER_WRITER = 4
DURATION = int(os.environ.get("PUMICE_LOAD_SECONDS") or size(15, 600))  # seconds of writes


@pytest.mark.timeout(DURATION + 600)
async def test_64_writers_200_watchers_every_event_in_order(tmp_path: Path, report: Any) -> None:
    duration = DURATION
    proc, _ = start_apiserver(tmp_path, extra=("--no-crds",))
    kubeconfig = tmp_path / "kubeconfig"
    writer_clients = [connect(kubeconfig) for _ in range(8)]
    watch_clients = [connect(kubeconfig) for _ in range(WATCHERS)]
    cms = writer_clients[0].scheme.by_api_version_kind("v1", "ConfigMap")
    acked: list[int] = []
    latencies: list[float] = []
    seen: list[list[int]] = [[] for _ in range(WATCHERS)]
    rss: list[int] = []
    errors: list[str] = []
    reopened: list[str] = []
    died: list[str] = []
    ending = False
    stop_at = time.monotonic() + duration
    try:
        start_rv = (await writer_clients[0].list(cms, NS)).resource_version

        async def watcher(i: int) -> None:
            # a watcher that ends by anything but the test's own cancel at the end is reported (and
            # fails the group); in the runs that lost one of 200, pytest-timeout's alarm ended it
            try:
                await watch(i)
            except BaseException as e:
                if not ending:
                    died.append(f"watcher {i}: {type(e).__name__}: {e!r}")
                raise
            if not ending:
                died.append(f"watcher {i}: returned")

        async def watch(i: int) -> None:
            # as an informer does: a watch that ends is opened again from the last version seen
            # (counted); an ERROR (410: events were lost) ends the watcher and fails the test
            rv = start_rv
            while True:
                try:
                    async for ev in watch_clients[i].watch(cms, NS, resource_version=rv):
                        if ev.type == "ERROR":
                            errors.append(f"watcher {i}: {ev.object}")
                            return
                        if ev.type in ("ADDED", "MODIFIED", "DELETED"):
                            rv = str(ev.object["metadata"]["resourceVersion"])
                            # a ConfigMap's DELETE answers a Status without a resourceVersion (as
                            # kube-apiserver's does), so deletes acknowledge none: compare the rest
                            if ev.type != "DELETED":
                                seen[i].append(int(rv))
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    reopened.append(f"watcher {i}: {type(e).__name__}: {e}")
                    await asyncio.sleep(0.2)
                    continue
                reopened.append(f"watcher {i}: stream ended")

        async def writer(w: int) -> None:
            client = writer_clients[w % len(writer_clients)]
            step = 0
            while time.monotonic() < stop_at:
                name = f"w{w}-{step % OBJECTS_PER_WRITER}"
                phase = (step // OBJECTS_PER_WRITER) % 3  # create, update, delete the bounded set in turn
                t0 = time.monotonic()
                if phase == 0:
                    obj = await client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                               "metadata": {"name": name, "namespace": NS}, "data": {"s": str(step)}})
                elif phase == 1:
                    obj = await client.patch(cms, name, {"data": {"s": str(step)}}, NS)
                else:
                    obj = await client.delete(cms, name, NS)
                latencies.append(time.monotonic() - t0)
                rv = (obj.get("metadata") or {}).get("resourceVersion") if isinstance(obj, dict) else None
                if rv:
                    acked.append(int(rv))
                step += 1
                await asyncio.sleep(0.05)

        async def sample_rss() -> None:
            while True:
                rss.append(rss_kib(proc.pid))
                await asyncio.sleep(1)

        # an exception that is not an Exception (pytest-timeout's Failed, KeyboardInterrupt) raised
        # into a loop callback is logged and dropped by asyncio: keep it to fail the test with
        loop = asyncio.get_running_loop()
        dropped: list[BaseException] = []

        def on_loop_error(lp: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            exc = context.get("exception")
            if isinstance(exc, BaseException) and not isinstance(exc, Exception):
                dropped.append(exc)
            lp.default_exception_handler(context)

        loop.set_exception_handler(on_loop_error)
        # a task that ends by anything but the cancel below cancels the group and the test fails
        # with its exception
        async with asyncio.TaskGroup() as group:
            watchers = [group.create_task(watcher(i)) for i in range(WATCHERS)]
            sampler = group.create_task(sample_rss())
            await asyncio.sleep(1)  # watches open
            await asyncio.gather(*(writer(w) for w in range(WRITERS)))
            want = sorted(acked)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and any(len(s) < len(want) for s in seen) and not dropped:
                await asyncio.sleep(0.2)
            ending = True
            for t in [*watchers, sampler]:
                t.cancel()
        if dropped:
            raise dropped[0]
    finally:
        asyncio.get_running_loop().set_exception_handler(None)
        for c in [*writer_clients, *watch_clients]:
            with contextlib.suppress(Exception):
                await c.close()
        stop(proc)

    complete = sum(1 for s in seen if s == want)
    lat = sorted(latencies)
    p50 = lat[len(lat) // 2] * 1000
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
    third = max(len(rss) // 3, 1)
    rss_start = statistics.median(rss[:third]) / 1024
    rss_end = statistics.median(rss[-third:]) / 1024
    report(duration_s=duration, writers=WRITERS, watchers=WATCHERS, writes=len(acked),
           writes_per_s=round(len(acked) / duration, 1), p50_ms=round(p50, 1), p99_ms=round(p99, 1),
           watchers_complete_in_order=complete, watches_reopened=len(reopened), watchers_died=len(died), rss_start_mib=round(rss_start, 1), rss_end_mib=round(rss_end, 1))
    assert len(want) == len(set(want)), "two writes acknowledged with one resourceVersion"
    assert not errors, errors[:3]
    behind = [(i, len(s), s == want[:len(s)], s[-1] if s else None) for i, s in enumerate(seen) if s != want]
    assert complete == WATCHERS, (behind[:5], len(want), want[-1], reopened[:3], died[:3])
    assert rss_end <= rss_start * 1.25 + 30, (rss_start, rss_end)
