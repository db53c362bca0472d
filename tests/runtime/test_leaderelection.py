"""Leader election: two managers against one API, only the leader's controllers act; the standby
takes over within the lease duration once the leader stops renewing; a graceful stop hands over
at once. Virtual time (looptime); short durations.

Ports the scenarios of client-go tools/leaderelection/leaderelection_test.go (TestTryAcquireOrRenew:
"acquire from no object", "acquire from led, unacked object" (expired), "don't acquire from led,
acked object", "renew already acquired object") and controller-runtime's leader-election manager
tests.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pumice._util.clock import LoopClock, parse_rfc3339
from pumice.api.scheme import LEASE
from pumice.client.base import ApiError, detached_context
from pumice.runtime import LeaderElectionConfig, LeaderElectionLost, LeaderElector, Manager, Request, Result
from pumice.testing.fake_client import FakeClient

from .conftest import CONFIGMAP, configmap, eventually

DURATIONS = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 1.0}


class Partitionable:
    """One process's view of the shared API: can be cut off from it."""

    def __init__(self, inner: FakeClient) -> None:
        self.inner = inner
        self.partitioned = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr) or name in ("watch",):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.partitioned:
                raise ApiError(503, "ServiceUnavailable", "partitioned")
            return await attr(*args, **kwargs)

        return call

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.watch(*args, **kwargs)


class Toy:
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def reconcile(self, req: Request) -> Result:
        self.seen.append(req.name)
        return Result()


def make(client: Any, identity: str) -> tuple[Manager, Toy]:
    mgr = Manager(client, clock=LoopClock(), leader_election=True, identity=identity,
                  leader_election_id="toy-lock", leader_election_namespace="kube-system",
                  graceful_shutdown_timeout=1, **DURATIONS)
    toy = Toy()
    mgr.controller("toy").for_(CONFIGMAP).complete(toy)
    return mgr, toy


async def lease(fake: FakeClient) -> dict[str, Any]:
    return (await fake.get(LEASE, "toy-lock", "kube-system"))["spec"]


@pytest.mark.looptime
async def test_only_the_leader_reconciles() -> None:
    fake = FakeClient(clock=LoopClock())
    a, toy_a = make(fake, "a")
    ta = asyncio.create_task(a.start())
    await a.wait_started()
    b, toy_b = make(fake, "b")
    tb = asyncio.create_task(b.start())
    await b.wait_standby()
    for i in range(3):
        await fake.create(configmap(f"cm{i}"))
    await eventually(lambda: len(toy_a.seen) == 3)
    await asyncio.sleep(30)
    assert toy_b.seen == []
    assert a.is_leader and not b.is_leader
    spec = await lease(fake)
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 4
    assert spec["leaseTransitions"] == 0
    assert parse_rfc3339(spec["renewTime"]) > parse_rfc3339(spec["acquireTime"]), "the leader renews"
    b.stop()
    a.stop()
    await asyncio.gather(ta, tb)


@pytest.mark.looptime
async def test_standby_takes_over_within_the_lease_duration_after_the_leader_stops_renewing() -> None:
    fake = FakeClient(clock=LoopClock())
    view_a = Partitionable(fake)
    a, toy_a = make(view_a, "a")
    ta = asyncio.create_task(a.start())
    await a.wait_started()
    b, toy_b = make(fake, "b")
    tb = asyncio.create_task(b.start())
    await b.wait_standby()
    await asyncio.sleep(10)

    loop = asyncio.get_running_loop()
    last_renew = parse_rfc3339((await lease(fake))["renewTime"])
    view_a.partitioned = True  # "a" can no longer renew (a dead or cut-off leader)
    cut_at = loop.time()
    await asyncio.wait_for(b.wait_started(), 60)
    took = loop.time() - cut_at
    assert took <= DURATIONS["lease_duration"] + 1.2 * DURATIONS["retry_period"], took

    with pytest.raises(LeaderElectionLost):
        await ta  # "a" gave up after renew_deadline and stopped its controllers
    assert not a.is_leader

    spec = await lease(fake)
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert parse_rfc3339(spec["acquireTime"]) > last_renew
    seen_a = list(toy_a.seen)
    await fake.create(configmap("after-failover"))
    await eventually(lambda: "after-failover" in toy_b.seen)
    assert toy_a.seen == seen_a
    b.stop()
    await tb


@pytest.mark.looptime
async def test_a_graceful_stop_releases_the_lease_for_a_fast_handover() -> None:
    fake = FakeClient(clock=LoopClock())
    a, _ = make(fake, "a")
    ta = asyncio.create_task(a.start())
    await a.wait_started()
    b, _ = make(fake, "b")
    tb = asyncio.create_task(b.start())
    await b.wait_standby()
    await asyncio.sleep(5)
    a.stop()
    await ta
    spec = await lease(fake)
    assert spec["holderIdentity"] == ""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await asyncio.wait_for(b.wait_started(), 30)
    assert loop.time() - t0 <= 1.2 * DURATIONS["retry_period"]
    b.stop()
    await tb


@pytest.mark.looptime
async def test_a_candidate_does_not_take_a_lease_that_is_being_renewed() -> None:
    fake = FakeClient(clock=LoopClock())
    cfg = dict(name="l", namespace="kube-system", **DURATIONS)
    a = LeaderElector(fake, LeaderElectionConfig(identity="a", **cfg))  # type: ignore[arg-type]
    b = LeaderElector(fake, LeaderElectionConfig(identity="b", **cfg))  # type: ignore[arg-type]
    assert await a.try_acquire_or_renew(), "acquire from no object"
    a.is_leader = True
    assert not await b.try_acquire_or_renew(), "don't acquire from a led, fresh object"
    await asyncio.sleep(2)
    assert await a.try_acquire_or_renew(), "renew an already acquired object"
    await asyncio.sleep(3)
    assert not await b.try_acquire_or_renew(), "b sees the renewed record now, on its own clock"
    await asyncio.sleep(3.5)
    assert not await b.try_acquire_or_renew(), "3.5 s since b saw a change: not expired"
    await asyncio.sleep(1.0)
    assert await b.try_acquire_or_renew(), "acquire from a led, expired object"
    spec = (await fake.get(LEASE, "l", "kube-system"))["spec"]
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("b", 1)


def test_leader_election_config_validates_timings() -> None:
    with pytest.raises(ValueError, match="lease_duration"):
        LeaderElectionConfig("l", "ns", "me", lease_duration=5, renew_deadline=5, retry_period=1)
    with pytest.raises(ValueError, match="retry_period"):
        LeaderElectionConfig("l", "ns", "me", lease_duration=15, renew_deadline=2, retry_period=2)
    with pytest.raises(ValueError, match="identity"):
        LeaderElectionConfig("l", "ns", "", lease_duration=15, renew_deadline=10, retry_period=2)


@pytest.mark.looptime
async def test_the_lease_is_released_only_after_in_flight_reconciles_finish() -> None:
    fake = FakeClient(clock=LoopClock())
    holder_when_done: list[str] = []
    started = asyncio.Event()

    class Slow:
        async def reconcile(self, req: Request) -> Result:
            started.set()
            await asyncio.sleep(5)
            # read as an outside observer: the stopping reconcile's own API calls are refused
            observer = asyncio.create_task(lease(fake), context=detached_context())
            holder_when_done.append((await observer)["holderIdentity"])
            return Result()

    mgr = Manager(fake, clock=LoopClock(), leader_election=True, identity="a",
                  leader_election_id="toy-lock", graceful_shutdown_timeout=30, **DURATIONS)
    mgr.controller("slow").for_(CONFIGMAP).complete(Slow())
    await fake.create(configmap("x"))
    task = asyncio.create_task(mgr.start())
    await started.wait()
    mgr.stop()
    await task
    assert holder_when_done == ["a"], "still holding the Lease while the reconcile ran"
    assert (await lease(fake))["holderIdentity"] == ""


@pytest.mark.looptime
async def test_losing_the_lease_cancels_in_flight_reconciles_at_once() -> None:
    fake = FakeClient(clock=LoopClock())
    view = Partitionable(fake)
    finished: list[str] = []
    started = asyncio.Event()

    class Long:
        async def reconcile(self, req: Request) -> Result:
            started.set()
            await asyncio.sleep(3600)
            finished.append(req.name)
            return Result()

    mgr = Manager(view, clock=LoopClock(), leader_election=True, identity="a",
                  leader_election_id="toy-lock", graceful_shutdown_timeout=600, **DURATIONS)
    mgr.controller("long").for_(CONFIGMAP).complete(Long())
    await fake.create(configmap("x"))
    task = asyncio.create_task(mgr.start())
    await started.wait()
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    view.partitioned = True
    with pytest.raises(LeaderElectionLost):
        await task
    assert finished == []
    assert loop.time() - t0 < 60, "not held for the graceful timeout"


class OutOfMemory(Partitionable):
    """A view whose get, create and update (the elector's calls) raise MemoryError once ``oom`` is set."""

    oom = False

    def __getattr__(self, name: str) -> Any:
        call = super().__getattr__(name)
        if name not in ("get", "create", "update"):
            return call

        async def lease_call(*args: Any, **kwargs: Any) -> Any:
            if self.oom:
                raise MemoryError("injected")
            return await call(*args, **kwargs)

        return lease_call


@pytest.mark.looptime
async def test_a_memory_error_while_renewing_stops_the_manager_with_it_not_as_a_lost_lease() -> None:
    """A renewal that ran out of memory was logged and counted as a failed round: the Lease
    "was lost" and the manager raised LeaderElectionLost (a restarted process campaigns again).
    A MemoryError is fatal (FATAL_TYPES): the manager raises it, naming leader-election."""
    fake = FakeClient(clock=LoopClock())
    view = OutOfMemory(fake)
    mgr, _ = make(view, "a")
    task = asyncio.create_task(mgr.start())
    await mgr.wait_started()
    view.oom = True
    with pytest.raises(MemoryError, match="injected"):
        await asyncio.wait_for(task, 60)
    assert mgr.failed_runnable == "leader-election"
