"""The Volcano scheduler's cache does not hand out a snapshot once one of its informers stopped
for good (a MemoryError, FATAL_TYPES): the cycle raises it and the scheduler ends, instead of
scheduling on objects that no longer follow the API."""

from __future__ import annotations

import asyncio

import pytest

from pumice._util.clock import LoopClock
from pumice.scheduler.volcano.cache.live import SchedulerCache
from pumice.testing.cluster import local_cluster


async def test_a_snapshot_after_an_informer_ran_out_of_memory_raises_it() -> None:
    async with local_cluster() as c:
        cache = SchedulerCache(c.client, clock=LoopClock())

        def out_of_memory(obj: dict) -> None:
            if obj["metadata"]["name"] == "boom":
                raise MemoryError("injected")

        cache.informers["Namespace"].add_event_handler(on_add=out_of_memory)
        await cache.start()
        cache.snapshot()  # fine so far
        await c.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "boom"}})
        for _ in range(100):
            if cache.factory.failure is not None:
                break
            await asyncio.sleep(0.01)
        with pytest.raises(MemoryError, match="injected"):
            cache.snapshot()
        await cache.stop()


class _OutOfMemoryRecorder:
    """An EventRecorder whose writer ended with a MemoryError: event() raises it."""

    def event(self, *args: object) -> asyncio.Future[None]:
        raise MemoryError("injected")


def _pod_group() -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "default", "uid": "u1"}}


@pytest.mark.looptime
async def test_a_memory_error_recording_an_event_ends_the_write_and_the_next_close_wait_raises_it() -> None:
    """Review 18 R-2: the cache's Event writes caught the recorder's MemoryError with `except
    Exception`, logged it and went on (every later event() raising it again). Now the write task
    ends with it and wait_close_writes (awaited by the scheduler after each session) raises it."""
    from pumice.testing.fake_client import FakeClient

    clock = LoopClock()
    cache = SchedulerCache(FakeClient(clock=clock), clock=clock)
    assert cache.event_kind is not None
    cache._recorder = _OutOfMemoryRecorder()  # type: ignore[assignment]
    with pytest.raises(MemoryError, match="injected"):
        await cache._event(_pod_group(), "Normal", "Evict", "reason")
    write = cache._spawn(cache._event(_pod_group(), "Warning", "Unschedulable", "message"))
    await asyncio.gather(write, return_exceptions=True)
    with pytest.raises(MemoryError, match="injected"):
        await cache.wait_close_writes()


@pytest.mark.looptime
async def test_a_memory_error_recording_a_configmap_event_or_syncing_the_configmap_ends_the_scheduler(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 18 R-2: the scheduler's ConfigMap Event and its ConfigMap sync logged a MemoryError
    (`except Exception`) and went on; both raise it now, so run() ends with it."""
    from pumice.scheduler.volcano.scheduler import Scheduler
    from pumice.testing.fake_client import FakeClient

    clock = LoopClock()
    sched = Scheduler(FakeClient(clock=clock), clock=clock, publish_conf=True)
    sched._recorder = _OutOfMemoryRecorder()  # type: ignore[assignment]
    cm = {"metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"}}
    with pytest.raises(MemoryError, match="injected"):
        await sched._conf_map_event(cm, "SchedulerConfigurationOverwritten", "message")

    async def out_of_memory(self: Scheduler) -> None:
        raise MemoryError("injected")

    monkeypatch.setattr(Scheduler, "sync_conf_map", out_of_memory)
    with pytest.raises(MemoryError, match="injected"):
        await sched._sync_conf_map_logged()


def _cache_whose_patches_run_out_of_memory() -> SchedulerCache:
    """A SchedulerCache over a FakeClient whose every patch raises MemoryError("injected")."""
    from pumice.testing.fake_client import FakeClient

    clock = LoopClock()
    client = FakeClient(clock=clock)

    async def out_of_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError("injected")

    client.patch = out_of_memory  # type: ignore[method-assign,assignment]
    return SchedulerCache(client, clock=clock)


@pytest.mark.looptime
async def test_a_memory_error_writing_a_pod_group_status_ends_the_write_and_the_next_close_wait_raises_it() -> None:
    """The cache's status writes (PodGroup, Queue, NodeShard, Pod condition, bind, evict) caught
    a MemoryError with `except Exception`, logged it and went on; the write task ends with it now."""
    cache = _cache_whose_patches_run_out_of_memory()
    cache._close_write(cache._patch_pg(_pod_group(), {"phase": "Running"}))
    with pytest.raises(MemoryError, match="injected"):
        await cache.wait_close_writes()


@pytest.mark.looptime
async def test_a_memory_error_in_a_write_task_makes_the_next_snapshot_raise_it() -> None:
    """Review 19 R-11: pumice simulate's TriggeredLoop never calls wait_close_writes, so a write
    task's MemoryError was kept in ``failure`` and dropped without a word; every loop takes a
    snapshot per session, and the snapshot now raises it."""
    cache = _cache_whose_patches_run_out_of_memory()
    await cache.start()
    write = cache._spawn(cache._patch_pg(_pod_group(), {"phase": "Running"}))
    await asyncio.gather(write, return_exceptions=True)
    with pytest.raises(MemoryError, match="injected"):
        cache.snapshot()
    await cache.stop()


@pytest.mark.looptime
async def test_an_ordinary_error_escaping_a_write_task_is_logged_with_the_task_and_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    """Review 19 R-11: an exception a write did not catch was marked retrieved by the done
    callback and lost (before 1b6b00b asyncio at least printed it)."""
    from pumice.testing.fake_client import FakeClient

    clock = LoopClock()
    cache = SchedulerCache(FakeClient(clock=clock), clock=clock)

    async def broken_write() -> None:
        raise ValueError("a bug in a write")

    write = cache._spawn(broken_write())
    await asyncio.gather(write, return_exceptions=True)
    rec = next(r for r in caplog.records if "a bug in a write" in r.getMessage())
    assert rec.getMessage() == "scheduler cache: volcano cache broken_write failed: ValueError: a bug in a write"
    assert rec.exc_info is not None and rec.levelname == "ERROR"
    assert cache.failure is None
    cache.snapshot()  # not a reason to stop scheduling
