"""Controllers built with the builder: for_/owns/watches wiring, predicates, outcome mapping,
concurrency, metrics. Against the in-memory FakeClient, on looptime where delays matter.

Ports the outcome table of controller-runtime pkg/internal/controller/controller_test.go
("should requeue ... with rate limiting", "should not requeue on TerminalError",
"should requeue after RequeueAfter").
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import REGISTRY

from pumice._util.clock import LoopClock
from pumice.client.base import ApiError
from pumice.runtime import (
    GenerationChangedPredicate,
    Manager,
    Request,
    Result,
    TerminalError,
)
from pumice.runtime import metrics as m
from pumice.testing.fake_client import FakeClient

from .conftest import CONFIGMAP, DEPLOYMENT, SECRET, configmap, deployment, eventually, secret


class Toy:
    """Records every reconcile; behaviour per name comes from ``script``."""

    def __init__(self, script: dict[str, list[Any]] | None = None) -> None:
        self.calls: list[tuple[str, float]] = []
        self.script = script or {}

    async def reconcile(self, req: Request) -> Result:
        self.calls.append((str(req), asyncio.get_running_loop().time()))
        steps = self.script.get(req.name)
        if steps:
            step = steps.pop(0)
            if isinstance(step, BaseException):
                raise step
            return step
        return Result()

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]


@pytest.fixture
async def fake() -> FakeClient:
    return FakeClient(clock=LoopClock())


class Running:
    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Manager:
        self.task = asyncio.create_task(self.mgr.start())
        await asyncio.wait_for(self.mgr.wait_started(), 30)
        return self.mgr

    async def __aexit__(self, *exc: object) -> None:
        self.mgr.stop()
        assert self.task is not None
        await self.task


@pytest.fixture
async def mgr(fake: FakeClient) -> AsyncIterator[Manager]:
    yield Manager(fake, clock=LoopClock(), graceful_shutdown_timeout=5)


async def test_toy_reconciler_sees_existing_and_new_objects_once_each(fake: FakeClient, mgr: Manager) -> None:
    await fake.create(configmap("a"))
    toy = Toy()
    mgr.controller("toy").for_(CONFIGMAP).complete(toy)
    async with Running(mgr):
        await eventually(lambda: toy.names() == ["default/a"])
        await fake.create(configmap("b"))
        await eventually(lambda: toy.names() == ["default/a", "default/b"])
        await fake.delete(CONFIGMAP, "a", "default")
        await eventually(lambda: toy.names()[-1] == "default/a")


async def test_owns_enqueues_the_controller_owner_of_the_for_kind_only(fake: FakeClient, mgr: Manager) -> None:
    owner = await fake.create(configmap("owner"))
    other_owner = await fake.create(secret("not-a-configmap"))
    toy = Toy()
    mgr.controller("owner").for_(CONFIGMAP).owns(SECRET).complete(toy)
    async with Running(mgr):
        await eventually(lambda: toy.names() == ["default/owner"])
        toy.calls.clear()
        await fake.create(secret("child", owner=owner))
        await eventually(lambda: toy.names() == ["default/owner"])
        toy.calls.clear()
        await fake.create(secret("plain-ref", owner=owner, controller=False))
        await fake.create(secret("other", owner=other_owner))
        await fake.create(configmap("marker"))  # the queue is FIFO: once "marker" ran, the rest did
        await eventually(lambda: "default/marker" in toy.names())
        assert toy.names() == ["default/marker"], "non-controller refs and other owner kinds enqueue nothing"


async def test_owns_enqueues_the_old_and_the_new_owner_when_an_update_moves_the_child(fake: FakeClient,
                                                                                     mgr: Manager) -> None:
    first = await fake.create(configmap("first"))
    second = await fake.create(configmap("second"))
    toy = Toy()
    mgr.controller("moved").for_(CONFIGMAP).owns(SECRET).complete(toy)
    async with Running(mgr):
        await eventually(lambda: sorted(toy.names()) == ["default/first", "default/second"])
        child = await fake.create(secret("child", owner=first))
        await eventually(lambda: toy.names().count("default/first") == 2)
        toy.calls.clear()
        child["data"] = {"k": "dg=="}  # an update that keeps the owner: the owner alone
        child = await fake.update(child)
        await fake.create(configmap("marker1"))
        await eventually(lambda: "default/marker1" in toy.names())
        assert toy.names() == ["default/first", "default/marker1"]
        toy.calls.clear()
        child["metadata"]["ownerReferences"] = secret("x", owner=second)["metadata"]["ownerReferences"]
        await fake.update(child)  # moved to another owner: both are reconciled
        await fake.create(configmap("marker2"))
        await eventually(lambda: "default/marker2" in toy.names())
        assert sorted(toy.names()) == ["default/first", "default/marker2", "default/second"]


async def test_watches_enqueues_what_the_map_function_returns(fake: FakeClient, mgr: Manager) -> None:
    toy = Toy()

    def by_label(obj: dict[str, Any]) -> list[Request]:
        target = (obj["metadata"].get("labels") or {}).get("target")
        return [Request(obj["metadata"]["namespace"], target)] if target else []

    mgr.controller("mapped").for_(DEPLOYMENT).watches(CONFIGMAP, by_label).complete(toy)
    async with Running(mgr):
        await fake.create(configmap("c1", labels={"target": "web"}))
        await eventually(lambda: toy.names() == ["default/web"])


async def test_generation_changed_predicate_drops_status_only_updates(fake: FakeClient, mgr: Manager) -> None:
    await fake.create(deployment("web"))
    toy = Toy()
    mgr.controller("gen").for_(DEPLOYMENT, predicates=[GenerationChangedPredicate()]).complete(toy)
    async with Running(mgr):
        await eventually(lambda: len(toy.calls) == 1)
        live = await fake.get(DEPLOYMENT, "web", "default")
        live["status"] = {"replicas": 1}
        await fake.update_status(live)
        live = await fake.get(DEPLOYMENT, "web", "default")
        live["metadata"]["labels"] = {"x": "y"}
        await fake.update(live)
        await asyncio.sleep(0.2)
        assert len(toy.calls) == 1
        live = await fake.get(DEPLOYMENT, "web", "default")
        live["spec"]["replicas"] = 3
        await fake.update(live)
        await eventually(lambda: len(toy.calls) == 2)


async def test_an_update_callable_works_as_a_predicate(fake: FakeClient, mgr: Manager) -> None:
    await fake.create(configmap("a", data={"v": "1"}))
    toy = Toy()
    mgr.controller("callable").for_(
        CONFIGMAP, predicates=lambda old, new: old.get("data") != new.get("data")
    ).complete(toy)
    async with Running(mgr):
        await eventually(lambda: len(toy.calls) == 1)
        live = await fake.get(CONFIGMAP, "a", "default")
        live["metadata"]["annotations"] = {"x": "y"}
        await fake.update(live)
        live = await fake.get(CONFIGMAP, "a", "default")
        live["data"] = {"v": "2"}
        await fake.update(live)
        await eventually(lambda: len(toy.calls) == 2)
        await asyncio.sleep(0.1)
        assert len(toy.calls) == 2


@pytest.mark.looptime
async def test_an_exception_requeues_with_per_item_backoff(fake: FakeClient, mgr: Manager) -> None:
    await fake.create(configmap("flaky"))
    toy = Toy({"flaky": [RuntimeError("1"), RuntimeError("2"), RuntimeError("3"), Result()]})
    ctrl = mgr.controller("backoff").for_(CONFIGMAP).complete(toy)
    errors0 = m.RECONCILE_ERRORS.labels("backoff").get()
    async with Running(mgr):
        await eventually(lambda: len(toy.calls) == 4, timeout=5)
        t = [c[1] for c in toy.calls]
        gaps = [round(b - a, 3) for a, b in itertools.pairwise(t)]
        assert gaps == [0.005, 0.01, 0.02]
        assert ctrl.queue.num_requeues(Request("default", "flaky")) == 0, "success forgets the backoff"
        await asyncio.sleep(60)
        assert len(toy.calls) == 4
    assert m.RECONCILE_ERRORS.labels("backoff").get() - errors0 == 3


@pytest.mark.looptime
async def test_an_expected_failure_logs_one_line_and_a_bug_its_traceback(
        fake: FakeClient, mgr: Manager, caplog: pytest.LogCaptureFixture) -> None:
    await fake.create(configmap("refused"))
    await fake.create(configmap("buggy"))
    denied = ApiError(400, "BadRequest", 'admission webhook "validatepodgroup.volcano.sh" denied the request')
    toy = Toy({"refused": [denied, Result()], "buggy": [TypeError("bad operand"), Result()]})
    mgr.controller("logs").for_(CONFIGMAP).complete(toy)
    with caplog.at_level("INFO", logger="pumice.runtime.controller"):
        async with Running(mgr):
            await eventually(lambda: len(toy.calls) == 4, timeout=5)
    failed = {r.getMessage().split(": ")[1]: r for r in caplog.records if "reconcile failed" in r.getMessage()}
    assert set(failed) == {"default/refused", "default/buggy"}
    assert failed["default/refused"].exc_info is None and failed["default/refused"].levelname == "ERROR"
    assert failed["default/refused"].getMessage().endswith(
        '(requeue #1): admission webhook "validatepodgroup.volcano.sh" denied the request')
    assert failed["default/buggy"].exc_info is not None and failed["default/buggy"].exc_info[0] is TypeError


@pytest.mark.looptime
async def test_a_retryable_failure_is_logged_at_info(
        fake: FakeClient, mgr: Manager, caplog: pytest.LogCaptureFixture) -> None:
    """Trial 4 N6: a race that heals on the retry (conflict, not found, not created yet) logged
    ERROR lines, several within 100 ms. It is INFO, with the object and the reason."""
    await fake.create(configmap("racing"))
    modified = ApiError(409, "Conflict", "Operation cannot be fulfilled on configmaps \"racing\": the object has "
                                         "been modified; please apply your changes to the latest version and try again")
    toy = Toy({"racing": [LookupError("found 0 head"), ApiError(404, "NotFound", 'configmaps "x" not found'),
                          modified, ApiError(409, "AlreadyExists", 'configmaps "x" already exists'), Result()]})
    mgr.controller("races").for_(CONFIGMAP).complete(toy)
    with caplog.at_level("INFO", logger="pumice.runtime.controller"):
        async with Running(mgr):
            await eventually(lambda: len(toy.calls) == 5, timeout=60)
    racing = [r for r in caplog.records if "default/racing" in r.getMessage()]
    assert [r.levelname for r in racing] == ["INFO"] * 4, [r.getMessage() for r in racing]
    assert [r.getMessage() for r in racing] == [
        "controller races: default/racing: not there yet, retrying (requeue #1): LookupError: found 0 head",
        'controller races: default/racing: not found, retrying (requeue #2): configmaps "x" not found',
        f"controller races: default/racing: conflict, retrying (requeue #3): {modified}",
        'controller races: default/racing: already exists, retrying (requeue #4): configmaps "x" already exists']


@pytest.mark.looptime
async def test_a_retryable_failure_that_lasts_is_an_error(
        fake: FakeClient, mgr: Manager, caplog: pytest.LogCaptureFixture) -> None:
    from pumice.runtime.controller import RETRYABLE_QUIET_REQUEUES

    await fake.create(configmap("stuck"))
    toy = Toy({"stuck": [*(LookupError("found 0 head") for _ in range(RETRYABLE_QUIET_REQUEUES + 1)), Result()]})
    mgr.controller("races").for_(CONFIGMAP).complete(toy)
    with caplog.at_level("INFO", logger="pumice.runtime.controller"):
        async with Running(mgr):
            await eventually(lambda: len(toy.calls) == RETRYABLE_QUIET_REQUEUES + 2, timeout=60)
    stuck = [r for r in caplog.records if "default/stuck" in r.getMessage()]
    levels = [r.levelname for r in stuck]
    assert levels == ["INFO"] * (RETRYABLE_QUIET_REQUEUES - 1) + ["ERROR"] * 2, levels
    assert stuck[-1].getMessage() == (f"controller races: default/stuck: reconcile failed (requeue "
                                      f"#{RETRYABLE_QUIET_REQUEUES + 1}): LookupError: found 0 head")


@pytest.mark.looptime
async def test_a_terminal_error_is_not_retried_but_counted(fake: FakeClient, mgr: Manager) -> None:
    await fake.create(configmap("bad"))
    toy = Toy({"bad": [TerminalError("invalid spec")]})
    mgr.controller("terminal").for_(CONFIGMAP).complete(toy)
    terminal0 = m.TERMINAL_RECONCILE_ERRORS.labels("terminal").get()
    error_total0 = m.RECONCILE_TOTAL.labels("terminal", "error").get()
    async with Running(mgr):
        await eventually(lambda: len(toy.calls) == 1)
        await asyncio.sleep(3600)
        assert len(toy.calls) == 1
        await fake.update({**(await fake.get(CONFIGMAP, "bad", "default")), "data": {"fixed": "1"}})
        await eventually(lambda: len(toy.calls) == 2), "a later event reconciles again"
    assert m.TERMINAL_RECONCILE_ERRORS.labels("terminal").get() - terminal0 == 1
    assert m.RECONCILE_TOTAL.labels("terminal", "error").get() - error_total0 == 1


@pytest.mark.looptime
async def test_requeue_after_reconciles_again_after_that_delay(fake: FakeClient, mgr: Manager) -> None:
    await fake.create(configmap("poll"))
    toy = Toy({"poll": [Result(requeue_after=30), Result(requeue_after=30), Result()]})
    mgr.controller("poll").for_(CONFIGMAP).complete(toy)
    requeue0 = m.RECONCILE_TOTAL.labels("poll", "requeue_after").get()
    success0 = m.RECONCILE_TOTAL.labels("poll", "success").get()
    async with Running(mgr):
        await asyncio.sleep(61)
        assert len(toy.calls) == 3
        t = [c[1] for c in toy.calls]
        assert [round(b - a, 3) for a, b in itertools.pairwise(t)] == [30.0, 30.0]
        await asyncio.sleep(300)
        assert len(toy.calls) == 3
    assert m.RECONCILE_TOTAL.labels("poll", "requeue_after").get() - requeue0 == 2
    assert m.RECONCILE_TOTAL.labels("poll", "success").get() - success0 == 1


@pytest.mark.looptime
async def test_a_manager_that_keeps_no_metrics_reconciles_alike_and_counts_nothing(fake: FakeClient) -> None:
    # a simulation's manager: the same reconciles, requeues and retries, no metric counted and no
    # clock read for the reconcile and queue times
    mgr = Manager(fake, clock=LoopClock(), graceful_shutdown_timeout=5, keep_metrics=False)
    await fake.create(configmap("lean"))
    toy = Toy({"lean": [Result(requeue_after=30), RuntimeError("boom"), Result()]})
    mgr.controller("lean").for_(CONFIGMAP).complete(toy)
    counted = [m.RECONCILE_TOTAL.labels("lean", r) for r in ("success", "requeue_after", "error")]
    before = [c.get() for c in (*counted, m.RECONCILE_ERRORS.labels("lean"))]
    async with Running(mgr):
        await asyncio.sleep(61)
        assert len(toy.calls) == 3
        t = [c[1] for c in toy.calls]
        assert round(t[1] - t[0], 3) == 30.0 and round(t[2] - t[1], 3) == 0.005  # the first backoff step
    assert [c.get() for c in (*counted, m.RECONCILE_ERRORS.labels("lean"))] == before
    assert REGISTRY.get_sample_value("controller_runtime_reconcile_time_seconds_count", {"controller": "lean"}) in (None, 0)
    assert REGISTRY.get_sample_value("workqueue_adds_total", {"name": "lean"}) in (None, 0)


@pytest.mark.looptime
async def test_max_concurrent_reconciles_runs_different_requests_in_parallel_never_the_same(
    fake: FakeClient, mgr: Manager
) -> None:
    active: set[str] = set()
    peak = 0
    overlaps: list[str] = []
    gauge: list[float | None] = []
    done: list[str] = []

    class Slow:
        async def reconcile(self, req: Request) -> Result:
            nonlocal peak
            if req.name in active:
                overlaps.append(req.name)
            active.add(req.name)
            peak = max(peak, len(active))
            gauge.append(REGISTRY.get_sample_value("controller_runtime_active_workers", {"controller": "parallel"}))
            await asyncio.sleep(1.0)
            active.discard(req.name)
            done.append(req.name)
            return Result()

    for i in range(6):
        await fake.create(configmap(f"cm{i}"))
    mgr.controller("parallel").for_(CONFIGMAP).with_options(max_concurrent_reconciles=3).complete(Slow())
    async with Running(mgr):
        for _ in range(3):  # updates while cm0 is being reconciled
            live = await fake.get(CONFIGMAP, "cm0", "default")
            live["data"] = {"n": str(len(done))}
            await fake.update(live)
            await asyncio.sleep(0.3)
        await eventually(lambda: len(done) >= 7, timeout=30)
        await asyncio.sleep(5)
    assert peak == 3
    assert overlaps == []
    assert m.MAX_CONCURRENT_RECONCILES.labels("parallel")._value.get() == 3
    assert max(gauge) == 3  # the active-workers gauge, read at scrape time, saw all three at once
    assert REGISTRY.get_sample_value("controller_runtime_active_workers", {"controller": "parallel"}) == 0


async def test_builder_reports_wiring_errors_at_complete(mgr: Manager) -> None:
    with pytest.raises(ValueError, match="for_\\(\\) was not called"):
        mgr.controller("none").owns(SECRET).complete(Toy())
    with pytest.raises(ValueError, match="more than once"):
        mgr.controller("twice").for_(CONFIGMAP).for_(SECRET).complete(Toy())
    with pytest.raises(ValueError, match="max_concurrent_reconciles"):
        mgr.controller("zero").for_(CONFIGMAP).with_options(max_concurrent_reconciles=0).complete(Toy())
    with pytest.raises(TypeError, match="no reconcile"):
        mgr.controller("noreconcile").for_(CONFIGMAP).complete(object())  # type: ignore[arg-type]
    mgr.controller("dup").for_(CONFIGMAP).complete(Toy())
    with pytest.raises(ValueError, match="already exists"):
        mgr.controller("dup").for_(CONFIGMAP).complete(Toy())


async def test_controllers_share_one_informer_per_kind(fake: FakeClient, mgr: Manager) -> None:
    a, b = Toy(), Toy()
    mgr.controller("a").for_(CONFIGMAP).complete(a)
    mgr.controller("b").for_(DEPLOYMENT).owns(CONFIGMAP).complete(b)
    assert len(mgr.informers.informers()) == 2
    async with Running(mgr):
        await fake.create(configmap("x"))
        await eventually(lambda: a.names() == ["default/x"])
    assert sum(1 for act in fake.actions if act[0] == "watch" and act[1] == "configmaps") == 1


def test_a_request_is_a_value_named_by_namespace_and_name() -> None:
    r = Request("default", "j1")
    assert r == Request(namespace="default", name="j1") and r != Request("default", "j2") and r != Request("other", "j1")
    # the work queue hashes it: the hash (and so the order of a set of Requests) is that of
    # the (namespace, name) pair, as it was for the dataclass before
    assert hash(r) == hash(("default", "j1")) and len({r, Request("default", "j1")}) == 1
    assert sorted([Request("b", "a"), Request("a", "z"), Request("a", "b")]) == [
        Request("a", "b"), Request("a", "z"), Request("b", "a")]
    assert str(r) == "default/j1" and str(Request("", "node-1")) == "node-1"
    assert repr(r) == "Request(namespace='default', name='j1')"
    assert Request.for_object({"metadata": {"namespace": "ns", "name": "x"}}) == Request("ns", "x")
    assert Request.for_object({"metadata": {"name": "cluster-wide"}}) == Request("", "cluster-wide")
    with pytest.raises(AttributeError):
        r.name = "j2"  # type: ignore[misc]
