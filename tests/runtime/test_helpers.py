"""controllerutil helpers, expectations and the event recorder.

Ports cases of controller-runtime pkg/controller/controllerutil/controllerutil_test.go
(SetControllerReference, CreateOrUpdate, finalizers), kubernetes pkg/controller
controller_utils_test.go (TestControllerExpectations, TestUIDExpectations) and client-go
tools/record events_cache_test.go (TestEventCorrelator).
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from pumice._util.clock import FakeClock, LoopClock
from pumice.api.scheme import EVENT
from pumice.runtime import (
    AlreadyOwnedError,
    EventRecorder,
    Expectations,
    add_finalizer,
    create_or_update,
    has_finalizer,
    remove_finalizer,
    set_controller_reference,
    set_owner_reference,
)
from pumice.testing.fake_client import FakeClient

from .conftest import CONFIGMAP, configmap, deployment


def owned(name: str = "child", ns: str = "default") -> dict[str, Any]:
    return configmap(name, ns)


def an_owner(name: str = "web", ns: str = "default", uid: str = "uid-1") -> dict[str, Any]:
    d = deployment(name, ns)
    d["metadata"]["uid"] = uid
    return d


# -- owner references -----------------------------------------------------------------------


def test_set_controller_reference_adds_a_controller_ref_and_is_idempotent() -> None:
    obj = owned()
    assert set_controller_reference(an_owner(), obj) is True
    assert obj["metadata"]["ownerReferences"] == [{
        "apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "uid-1",
        "controller": True, "blockOwnerDeletion": True,
    }]
    assert set_controller_reference(an_owner(), obj) is False


def test_set_controller_reference_refuses_a_second_controller() -> None:
    obj = owned()
    set_controller_reference(an_owner("a", uid="u-a"), obj)
    with pytest.raises(AlreadyOwnedError, match="already owned by another Deployment controller 'a'"):
        set_controller_reference(an_owner("b", uid="u-b"), obj)


def test_set_controller_reference_refuses_cross_namespace_owners() -> None:
    with pytest.raises(ValueError, match="cross-namespace"):
        set_controller_reference(an_owner(ns="other"), owned())


def test_set_owner_reference_keeps_an_existing_controller_ref() -> None:
    obj = owned()
    set_controller_reference(an_owner("a", uid="u-a"), obj)
    assert set_owner_reference(an_owner("b", uid="u-b"), obj) is True
    refs = obj["metadata"]["ownerReferences"]
    assert [(r["name"], r.get("controller")) for r in refs] == [("a", True), ("b", None)]


def test_finalizer_helpers_report_changes() -> None:
    obj = owned()
    assert not has_finalizer(obj, "ray.io/gcs-ft-redis-cleanup-finalizer")
    assert add_finalizer(obj, "ray.io/gcs-ft-redis-cleanup-finalizer") is True
    assert add_finalizer(obj, "ray.io/gcs-ft-redis-cleanup-finalizer") is False
    assert has_finalizer(obj, "ray.io/gcs-ft-redis-cleanup-finalizer")
    assert remove_finalizer(obj, "ray.io/gcs-ft-redis-cleanup-finalizer") is True
    assert remove_finalizer(obj, "ray.io/gcs-ft-redis-cleanup-finalizer") is False
    assert obj["metadata"]["finalizers"] == []


# -- create_or_update ---------------------------------------------------------------------------


async def test_create_or_update_creates_then_updates_then_writes_nothing() -> None:
    fake = FakeClient(clock=LoopClock())
    want = {"k": "v1"}

    def mutate(cm: dict[str, Any]) -> None:
        cm["data"] = dict(want)
        cm["metadata"].setdefault("labels", {})["app"] = "web"

    obj, op = await create_or_update(fake, configmap("cfg"), mutate)
    assert op == "created"
    assert obj["data"] == {"k": "v1"}

    want["k"] = "v2"
    obj, op = await create_or_update(fake, configmap("cfg"), mutate)
    assert op == "updated"
    assert (await fake.get(CONFIGMAP, "cfg", "default"))["data"] == {"k": "v2"}

    writes_before = len(fake.writes())
    obj, op = await create_or_update(fake, configmap("cfg"), mutate)
    assert op == "unchanged"
    assert len(fake.writes()) == writes_before, "a second run with no change makes no writes"


async def test_create_or_update_accepts_async_mutate_and_rejects_renames() -> None:
    fake = FakeClient(clock=LoopClock())

    async def mutate(cm: dict[str, Any]) -> None:
        cm["data"] = {"a": "b"}

    _, op = await create_or_update(fake, configmap("cfg"), mutate)
    assert op == "created"

    def rename(cm: dict[str, Any]) -> None:
        cm["metadata"]["name"] = "other"

    with pytest.raises(ValueError, match="must not change"):
        await create_or_update(fake, configmap("cfg"), rename)


# -- expectations -------------------------------------------------------------------------------


def test_expectations_hold_until_creations_are_observed() -> None:
    exp = Expectations(FakeClock())
    assert exp.satisfied("default/rs"), "never set: the controller may act"
    exp.expect_creations("default/rs", 2)
    assert not exp.satisfied("default/rs")
    exp.creation_observed("default/rs")
    assert not exp.satisfied("default/rs")
    assert exp.pending("default/rs") == (1, 0)
    exp.creation_observed("default/rs")
    assert exp.satisfied("default/rs")


def test_expectations_count_each_deleted_uid_once() -> None:
    exp = Expectations(FakeClock())
    exp.expect_deletions("default/rs", ["u1", "u2"])
    exp.deletion_observed("default/rs", "u1")
    exp.deletion_observed("default/rs", "u1")
    exp.deletion_observed("default/rs", "unrelated")
    assert not exp.satisfied("default/rs")
    exp.deletion_observed("default/rs", "u2")
    assert exp.satisfied("default/rs")


def test_expectations_expire_after_five_minutes() -> None:
    clock = FakeClock()
    exp = Expectations(clock)
    exp.expect_creations("default/rs", 3)
    clock.advance(299)
    assert not exp.satisfied("default/rs")
    clock.advance(2)
    assert exp.satisfied("default/rs")


def test_deleted_expectations_are_satisfied() -> None:
    exp = Expectations(FakeClock())
    exp.expect_creations("default/rs", 1)
    exp.delete("default/rs")
    assert exp.satisfied("default/rs")
    with pytest.raises(ValueError):
        exp.expect_creations("default/rs", -1)


# -- events -------------------------------------------------------------------------------------


async def events_of(fake: FakeClient) -> list[dict[str, Any]]:
    return (await fake.list(EVENT, "default")).items


async def test_event_recorder_writes_a_core_v1_event() -> None:
    fake = FakeClient(clock=LoopClock())
    obj = await fake.create(configmap("cfg"))
    rec = EventRecorder(fake, "toy-controller", clock=LoopClock(1_700_000_000.0))
    written = await rec.event(obj, "Normal", "Created", "created head pod")
    assert written is not None
    name = written["metadata"]["name"]
    assert name.startswith("cfg.")
    int(name.split(".", 1)[1], 16)
    [ev] = await events_of(fake)
    assert ev["involvedObject"] == {
        "kind": "ConfigMap", "namespace": "default", "name": "cfg", "uid": obj["metadata"]["uid"],
        "apiVersion": "v1", "resourceVersion": obj["metadata"]["resourceVersion"],
    }
    assert (ev["type"], ev["reason"], ev["message"], ev["count"]) == ("Normal", "Created", "created head pod", 1)
    assert ev["source"] == {"component": "toy-controller"}
    assert ev["firstTimestamp"] == ev["lastTimestamp"]


@pytest.mark.looptime
async def test_identical_events_are_aggregated_into_one_with_a_count() -> None:
    fake = FakeClient(clock=LoopClock())
    obj = await fake.create(configmap("cfg"))
    rec = EventRecorder(fake, "toy-controller", clock=LoopClock(1_700_000_000.0))
    for _ in range(3):
        rec.event(obj, "Warning", "FailedCreate", "quota exceeded")
        await asyncio.sleep(5)
    await rec.flush()
    [ev] = await events_of(fake)
    assert ev["count"] == 3
    assert ev["lastTimestamp"] > ev["firstTimestamp"]
    patches = [a for a in fake.writes() if a[0] == "patch"]
    assert len(patches) == 2


async def test_events_with_different_messages_are_combined_after_ten() -> None:
    fake = FakeClient(clock=LoopClock())
    obj = await fake.create(configmap("cfg"))
    rec = EventRecorder(fake, "toy-controller", clock=LoopClock())
    for i in range(12):
        rec.event(obj, "Warning", "FailedCreate", f"attempt {i}")
    await rec.flush()
    evs = await events_of(fake)
    plain = [e for e in evs if not e["message"].startswith("(combined from similar events)")]
    combined = [e for e in evs if e["message"].startswith("(combined from similar events)")]
    assert len(plain) == 9
    assert len(combined) == 1
    assert combined[0]["count"] == 3
    assert combined[0]["message"] == "(combined from similar events): attempt 11"


async def test_spam_filter_drops_events_past_the_burst() -> None:
    fake = FakeClient(clock=LoopClock())
    obj = await fake.create(configmap("cfg"))
    rec = EventRecorder(fake, "toy-controller", clock=LoopClock())
    results = [rec.event(obj, "Normal", "Same", "same message") for _ in range(30)]
    await rec.flush()
    assert sum(1 for r in results if r.result() is None) == 5
    [ev] = await events_of(fake)
    assert ev["count"] == 25


async def test_event_recorder_rejects_unknown_types() -> None:
    rec = EventRecorder(FakeClient(), "x")
    with pytest.raises(ValueError, match="Normal"):
        rec.event(configmap("a"), "Info", "R", "m")


async def test_a_patch_of_a_deleted_event_creates_it_again() -> None:
    fake = FakeClient(clock=LoopClock())
    obj = await fake.create(configmap("cfg"))
    rec = EventRecorder(fake, "c", clock=LoopClock())
    first = await rec.event(obj, "Normal", "R", "m")
    assert first is not None
    await fake.delete(EVENT, first["metadata"]["name"], "default")
    again = await rec.event(copy.deepcopy(obj), "Normal", "R", "m")
    assert again is not None and again["count"] == 2
    assert len(await events_of(fake)) == 1


@pytest.mark.looptime
async def test_two_recorders_naming_events_in_the_same_clock_tick_both_write_and_patch_their_own() -> None:
    """On a virtual clock a Job and a RayJob both named ``train`` get events in the same tick: the
    second create clashed (409) and the event was dropped with a warning."""
    fake = FakeClient(clock=LoopClock())
    job = await fake.create(configmap("train"))
    other = await fake.create({**configmap("train"), "kind": "Secret"})
    a = EventRecorder(fake, "job-controller", clock=LoopClock(1_700_000_000.0))
    b = EventRecorder(fake, "rayjob-controller", clock=LoopClock(1_700_000_000.0))
    first = await a.event(job, "Normal", "SuccessfulCreate", "one")
    second = await b.event(other, "Normal", "Created", "two")
    assert first is not None and second is not None
    assert first["metadata"]["name"] != second["metadata"]["name"]
    again = await b.event(other, "Normal", "Created", "two")
    assert again is not None and again["metadata"]["name"] == second["metadata"]["name"] and again["count"] == 2
    assert a.dropped == b.dropped == 0
    assert sorted(e["message"] for e in await events_of(fake)) == ["one", "two"]


async def test_events_past_the_queue_bound_are_dropped_before_the_correlator() -> None:
    """client-go's broadcaster holds at most 1000 events (DropIfChannelFull): a burst recorded
    faster than it is written loses what comes past the bound, which never counts for the
    correlator; once written out, events are queued again."""
    from pumice.runtime.events import MAX_QUEUED_EVENTS

    fake = FakeClient(clock=LoopClock())
    rec = EventRecorder(fake, "burst", clock=LoopClock())
    objs = [configmap(f"cm-{i}") for i in range(MAX_QUEUED_EVENTS + 5)]
    results = [rec.event(o, "Warning", "FailedScheduling", "no room") for o in objs]  # no write ran yet
    await rec.flush()
    assert [r.result() is None for r in results].count(True) == 5 == rec.dropped
    assert len(await events_of(fake)) == MAX_QUEUED_EVENTS
    again = await rec.event(objs[-1], "Warning", "FailedScheduling", "no room")
    assert again is not None and again["count"] == 1  # the dropped one never reached the logger


async def test_the_spam_filter_keeps_one_bucket_per_event_type() -> None:
    """Newest client-go getSpamKey includes the event type: a Warning about an object whose
    Normal events used up their burst is still written."""
    fake = FakeClient(clock=LoopClock())
    obj = await fake.create(configmap("cfg"))
    rec = EventRecorder(fake, "c", clock=LoopClock())
    normals = [rec.event(obj, "Normal", "Tick", f"tick {i}") for i in range(26)]
    warning = rec.event(obj, "Warning", "Broken", "it broke")
    await rec.flush()
    assert [r.result() is None for r in normals].count(True) == 1
    assert warning.result() is not None and warning.result()["reason"] == "Broken"


async def test_concurrent_writers_write_events_at_once_and_each_events_writes_in_order() -> None:
    """With ``writers`` > 1 events about different objects are written concurrently, while one
    Event's create comes before its count patches."""

    class Slow:
        def __init__(self, inner: FakeClient) -> None:
            self.inner, self.in_flight, self.most, self.log = inner, 0, 0, []

        async def _call(self, verb: str, name: str, call: Any) -> Any:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            await asyncio.sleep(0.01)
            self.log.append((verb, name))
            self.in_flight -= 1
            return await call

        async def create(self, obj: dict[str, Any], **kw: Any) -> Any:
            return await self._call("create", obj["metadata"]["name"], self.inner.create(obj, **kw))

        async def patch(self, kind: Any, name: str, patch: Any, namespace: str | None = None, **kw: Any) -> Any:
            return await self._call("patch", name, self.inner.patch(kind, name, patch, namespace, **kw))

    fake = FakeClient(clock=LoopClock())
    slow = Slow(fake)
    rec = EventRecorder(slow, "c", clock=LoopClock(), writers=8)  # type: ignore[arg-type]
    for i in range(16):
        for _ in range(3):
            rec.event(configmap(f"cm-{i}"), "Warning", "FailedScheduling", "no room")
    await rec.flush()
    assert slow.most > 1
    evs = await events_of(fake)
    assert len(evs) == 16 and all(e["count"] == 3 for e in evs)
    for e in evs:
        mine = [verb for verb, name in slow.log if name == e["metadata"]["name"]]
        assert mine == ["create", "patch", "patch"]


async def test_a_memory_error_while_writing_an_event_is_raised_by_the_next_event() -> None:
    """The writer dropped the Event on any failure and went on, a MemoryError too; now the writer
    ends with it, the event's future holds it, and the next event() raises it (so the reconcile
    that records it fails, and its controller and manager stop)."""
    fake = FakeClient(clock=LoopClock())
    obj = await fake.create(configmap("cfg"))

    async def create_out_of_memory(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError("injected")

    fake.create = create_out_of_memory  # type: ignore[method-assign]
    rec = EventRecorder(fake, "c", clock=LoopClock())
    with pytest.raises(MemoryError, match="injected"):
        await rec.event(obj, "Normal", "R", "m")
    with pytest.raises(MemoryError, match="injected"):
        rec.event(obj, "Normal", "R2", "m2")
    await rec.close()


@pytest.mark.looptime
async def test_events_queued_behind_a_writer_that_died_of_a_memory_error_resolve_with_it() -> None:
    """Review 18 R-2: when a writer ended with a MemoryError, the Events still queued on it kept
    futures that never resolved, so awaiting one hung for ever. Each now raises the MemoryError."""
    fake = FakeClient(clock=LoopClock())
    obj = await fake.create(configmap("cfg"))
    release = asyncio.Event()

    async def create_out_of_memory(*args: Any, **kwargs: Any) -> Any:
        await release.wait()  # both Events are queued before the first write fails
        raise MemoryError("injected")

    fake.create = create_out_of_memory  # type: ignore[method-assign]
    rec = EventRecorder(fake, "c", clock=LoopClock(), writers=1)
    first = rec.event(obj, "Normal", "R1", "m")
    second = rec.event(obj, "Normal", "R2", "m")
    release.set()
    with pytest.raises(MemoryError, match="injected"):
        await first
    with pytest.raises(MemoryError, match="injected"):
        await asyncio.wait_for(second, 60)
    await asyncio.wait_for(rec.flush(), 60)
    assert rec._queued == 0
    with pytest.raises(MemoryError, match="injected"):
        rec.event(obj, "Normal", "R3", "m")
    await rec.close()
