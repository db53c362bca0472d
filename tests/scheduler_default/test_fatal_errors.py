"""A MemoryError in the default scheduler (FATAL_TYPES) ends it: run() raises it, instead of the
scheduling loop or an informer ending alone while run() waits on for a stop."""

from __future__ import annotations

import asyncio

import pytest

from pumice.scheduler.default.scheduler import DefaultScheduler
from pumice.testing.cluster import local_cluster


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}


async def test_a_memory_error_in_a_scheduling_cycle_ends_run(monkeypatch: pytest.MonkeyPatch) -> None:
    async def out_of_memory(self: DefaultScheduler) -> None:
        raise MemoryError("injected")

    monkeypatch.setattr(DefaultScheduler, "schedule_one", out_of_memory)
    async with local_cluster(install_crds=False) as cluster:
        sched = DefaultScheduler(cluster.new_client(), seed=1)
        with pytest.raises(MemoryError, match="injected"):
            await asyncio.wait_for(sched.run(), 30)


async def test_a_memory_error_in_an_informer_it_owns_ends_run() -> None:
    async with local_cluster(install_crds=False) as cluster:
        sched = DefaultScheduler(cluster.new_client(), seed=1)

        def out_of_memory(obj: dict) -> None:
            raise MemoryError("injected")

        sched._pods.add_event_handler(on_add=out_of_memory)
        await cluster.client.create(_pod("p"))  # listed at start: the informer ends before it syncs
        run = asyncio.ensure_future(sched.run())
        with pytest.raises(MemoryError, match="injected"):
            await asyncio.wait_for(run, 30)


def _node(name: str) -> dict:
    res = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": res, "capacity": res, "conditions": [{"type": "Ready", "status": "True"}]}}


def _gated_pod(name: str) -> dict:
    p = _pod(name)
    p["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    return p


class _GatedWrites:
    """Holds DefaultScheduler._write_pod_scheduled until ``release`` is set (an API server that
    answers late), then runs it or raises ``error``; ``done`` is set once it returned or raised."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, error: BaseException | None = None) -> None:
        self.entered, self.release, self.done = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self.started = asyncio.Event()
        real_write, real_start = DefaultScheduler._write_pod_scheduled, DefaultScheduler.start

        async def _write_pod_scheduled(sched: DefaultScheduler, *a: object, **k: object) -> None:
            self.entered.set()
            await self.release.wait()
            try:
                if error is not None:
                    raise error
                await real_write(sched, *a, **k)
            finally:
                self.done.set()

        async def start(sched: DefaultScheduler) -> None:
            await real_start(sched)
            # run() goes on to wait on its loops without suspending first: when the test sees
            # this event, run() is already waiting
            self.started.set()

        monkeypatch.setattr(DefaultScheduler, "_write_pod_scheduled", _write_pod_scheduled)
        monkeypatch.setattr(DefaultScheduler, "start", start)


async def _wait_bound(client: object, name: str) -> str | None:
    from pumice.api.scheme import POD

    for _ in range(600):
        pod = await client.get(POD, name, "default")  # type: ignore[attr-defined]
        if pod["spec"].get("nodeName"):
            return str(pod["spec"]["nodeName"])
        await asyncio.sleep(0.05)
    return None


async def test_a_one_shot_write_ending_normally_does_not_stop_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 18 R-14: run() waited on every task in _tasks, the one-shot PodScheduled write of a
    scheduling-gated Pod listed at start among them; when that write ended normally run() stopped
    the scheduler and returned, and later Pods were never bound."""
    gate = _GatedWrites(monkeypatch)
    async with local_cluster(install_crds=False) as cluster:
        await cluster.client.create(_node("n1"))
        await cluster.client.create(_gated_pod("gated"))
        sched = DefaultScheduler(cluster.new_client(), seed=1)
        run = asyncio.ensure_future(sched.run())
        await asyncio.wait_for(gate.entered.wait(), 30)
        await asyncio.wait_for(gate.started.wait(), 30)  # run() waits, the write still pending
        gate.release.set()
        await gate.done.wait()
        await cluster.client.create(_pod("p"))
        assert await _wait_bound(cluster.client, "p") == "n1"
        assert not run.done()
        await sched.stop()
        await asyncio.wait_for(run, 30)


async def test_a_memory_error_in_a_one_shot_write_ends_run(monkeypatch: pytest.MonkeyPatch) -> None:
    gate = _GatedWrites(monkeypatch, MemoryError("injected"))
    gate.release.set()
    async with local_cluster(install_crds=False) as cluster:
        await cluster.client.create(_gated_pod("gated"))
        sched = DefaultScheduler(cluster.new_client(), seed=1)
        with pytest.raises(MemoryError, match="injected"):
            await asyncio.wait_for(sched.run(), 30)


async def test_an_ordinary_error_in_a_one_shot_write_is_logged_and_run_goes_on(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    gate = _GatedWrites(monkeypatch, TimeoutError("timed out (transient)"))
    async with local_cluster(install_crds=False) as cluster:
        await cluster.client.create(_node("n1"))
        await cluster.client.create(_gated_pod("gated"))
        sched = DefaultScheduler(cluster.new_client(), seed=1)
        run = asyncio.ensure_future(sched.run())
        await asyncio.wait_for(gate.started.wait(), 30)
        gate.release.set()
        await gate.done.wait()
        await cluster.client.create(_pod("p"))
        assert await _wait_bound(cluster.client, "p") == "n1"
        assert not run.done()
        assert "scheduler: scheduler _write_pod_scheduled failed: TimeoutError: timed out (transient)" in caplog.text
        await sched.stop()
        await asyncio.wait_for(run, 30)


async def test_a_transport_error_in_a_bind_requeues_the_pod_and_frees_its_node() -> None:
    """Review 19 R-1: a bind raising a transport error (not an ApiError) left the Pod assumed on
    its Node and never queued again. Upstream handleBindingCycleError undoes any bind error:
    forget the assumption, requeue with backoff, FailedScheduling Event."""
    import httpx2

    async with local_cluster(install_crds=False) as cluster:
        await cluster.client.create(_node("n1"))
        client = cluster.new_client()
        real_bind, calls = client.bind, []

        async def bind(*a: object, **k: object) -> None:
            calls.append(a)
            if len(calls) == 1:
                raise httpx2.ReadTimeout("timed out (transient)")
            await real_bind(*a, **k)  # type: ignore[arg-type]

        client.bind = bind  # type: ignore[method-assign]
        sched = DefaultScheduler(client, seed=1)
        run = asyncio.ensure_future(sched.run())
        p = _pod("p")
        p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3"}}
        await cluster.client.create(p)
        assert await _wait_bound(cluster.client, "p") == "n1"
        assert len(calls) == 2  # the retry fitted: the first assumption's 3 cpu were forgotten
        assert not run.done()
        await sched.stop()
        await asyncio.wait_for(run, 30)


async def _wait_pod_scheduled(client: object, name: str) -> dict | None:
    """The Pod's PodScheduled condition once it is False, or None after 30 s."""
    from pumice.api.scheme import POD

    for _ in range(600):
        pod = await client.get(POD, name, "default")  # type: ignore[attr-defined]
        for cond in (pod.get("status") or {}).get("conditions") or []:
            if cond["type"] == "PodScheduled" and cond["status"] == "False":
                return dict(cond)
        await asyncio.sleep(0.05)
    return None


async def test_a_failed_bind_writes_pod_scheduled_false_with_the_bind_plugins_error() -> None:
    """Review 20 V-5: a failed bind sent only an Event ("Binding rejected: ..."). Upstream
    handleBindingCycleError hands it to the FailureHandler, whose Event and PodScheduled=False
    (reason SchedulerError) both say ``running Bind plugin "DefaultBinder": <error>``."""
    import httpx2

    from pumice.api.scheme import EVENT

    async with local_cluster(install_crds=False) as cluster:
        await cluster.client.create(_node("n1"))
        client = cluster.new_client()

        async def bind(*a: object, **k: object) -> None:
            raise httpx2.ReadTimeout("timed out")

        client.bind = bind  # type: ignore[method-assign]
        sched = DefaultScheduler(client, seed=1)
        run = asyncio.ensure_future(sched.run())
        await cluster.client.create(_pod("p"))
        cond = await _wait_pod_scheduled(cluster.client, "p")
        assert cond is not None and cond["reason"] == "SchedulerError"
        assert cond["message"] == 'running Bind plugin "DefaultBinder": timed out'
        await sched.recorder.flush()  # the Event is written by the recorder's own task
        events = (await cluster.client.list(EVENT, "default")).items
        assert any(e["reason"] == "FailedScheduling" and e["message"] == cond["message"] for e in events)
        await sched.stop()
        await asyncio.wait_for(run, 30)


async def test_a_bug_in_the_bind_path_is_logged_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """Review 20 V-5: a KeyError from the bind (a pumice bug, BUG_TYPES) was logged at INFO with
    no traceback, against pumice._util.errors' rule that bugs are logged with theirs."""
    async with local_cluster(install_crds=False) as cluster:
        await cluster.client.create(_node("n1"))
        client = cluster.new_client()

        async def bind(*a: object, **k: object) -> None:
            raise KeyError("injected")

        client.bind = bind  # type: ignore[method-assign]
        sched = DefaultScheduler(client, seed=1)
        run = asyncio.ensure_future(sched.run())
        await cluster.client.create(_pod("p"))
        assert await _wait_pod_scheduled(cluster.client, "p") is not None
        records = [r for r in caplog.records if r.getMessage().startswith("binding default/p to n1 failed: KeyError")]
        assert records and records[0].levelname == "ERROR" and records[0].exc_info is not None
        await sched.stop()
        await asyncio.wait_for(run, 30)
