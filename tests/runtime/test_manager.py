"""Manager lifecycle: runnables with and without the leader, graceful shutdown, failures, health
endpoints, and run_controller_manager with the setups it is given."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2 as httpx
import pytest

from pumice._util.clock import LoopClock
from pumice.runtime import Manager, Request, Result
from pumice.runtime.run import run_controller_manager
from pumice.testing.fake_client import FakeClient

from .conftest import CONFIGMAP, SECRET, configmap, eventually


async def test_runnables_run_until_stop_and_in_flight_reconciles_finish() -> None:
    fake = FakeClient(clock=LoopClock())
    mgr = Manager(fake, graceful_shutdown_timeout=5)
    ticks: list[str] = []
    finished: list[str] = []
    started_reconcile = asyncio.Event()

    async def ticker() -> None:
        try:
            while True:
                ticks.append("t")
                await asyncio.sleep(0.01)
        finally:
            ticks.append("stopped")

    class Slow:
        async def reconcile(self, req: Request) -> Result:
            started_reconcile.set()
            await asyncio.sleep(0.2)
            finished.append(req.name)
            return Result()

    mgr.add_runnable(ticker, needs_leader=False)
    mgr.controller("slow").for_(CONFIGMAP).complete(Slow())
    await fake.create(configmap("a"))
    task = asyncio.create_task(mgr.start())
    await started_reconcile.wait()
    mgr.stop()
    await task
    assert finished == ["a"], "the in-flight reconcile finished before shutdown"
    assert ticks[-1] == "stopped"
    assert all(not inf.running for inf in mgr.informers.informers())


async def test_a_failing_runnable_stops_the_manager_and_is_raised() -> None:
    mgr = Manager(FakeClient())

    async def broken() -> None:
        raise RuntimeError("runnable bug")

    mgr.add_runnable(broken)
    with pytest.raises(RuntimeError, match="runnable bug"):
        await asyncio.wait_for(mgr.start(), 10)


async def test_stop_before_start_returns_at_once() -> None:
    mgr = Manager(FakeClient())
    mgr.stop()
    await asyncio.wait_for(mgr.start(), 5)


async def test_health_endpoints_report_liveness_readiness_and_metrics() -> None:
    fake = FakeClient(clock=LoopClock())
    mgr = Manager(fake, health_port=0)
    gate = asyncio.Event()
    real_list = fake.list

    async def slow_list(*a: Any, **kw: Any) -> Any:
        await gate.wait()
        return await real_list(*a, **kw)

    fake.list = slow_list  # type: ignore[method-assign]
    mgr.controller("h").for_(CONFIGMAP).complete(_Noop())
    dashboard_up = False
    mgr.add_readyz_check("dashboard", lambda: dashboard_up)
    task = asyncio.create_task(mgr.start())
    await eventually(lambda: mgr._health is not None and mgr.health_port not in (0, None))
    base = f"http://127.0.0.1:{mgr.health_port}"
    async with httpx.AsyncClient() as http:
        assert (await http.get(f"{base}/healthz")).text == "ok"
        not_ready = await http.get(f"{base}/readyz")
        assert not_ready.status_code == 503
        assert "informers-synced" in not_ready.text
        gate.set()
        await mgr.wait_started()
        still = await http.get(f"{base}/readyz")
        assert still.status_code == 503 and "[-]dashboard failed" in still.text
        dashboard_up = True
        ready = await http.get(f"{base}/readyz")
        assert (ready.status_code, ready.text) == (200, "ok")
        metrics = (await http.get(f"{base}/metrics")).text
        assert 'controller_runtime_max_concurrent_reconciles{controller="h"} 1.0' in metrics
        assert "workqueue_depth" in metrics
    mgr.stop()
    await task


class _Noop:
    async def reconcile(self, req: Request) -> Result:
        return Result()


def test_unknown_controller_groups_are_refused_with_the_known_ones() -> None:
    from pumice.cli._controllers import controller_setups

    with pytest.raises(ValueError, match="known"):
        controller_setups(["nope"])


async def test_run_controller_manager_runs_a_group_until_stopped() -> None:
    seen: list[str] = []

    class Toy:
        async def reconcile(self, req: Request) -> Result:
            seen.append(req.name)
            return Result()

    def setup(mgr: Manager, **kw: Any) -> None:
        mgr.controller("toy").for_(CONFIGMAP).complete(Toy())

    fake = FakeClient(clock=LoopClock())
    await fake.create(configmap("x"))
    stop = asyncio.Event()
    task = asyncio.create_task(run_controller_manager(fake, [setup], leader_elect=False, stop_event=stop))
    await eventually(lambda: seen == ["x"])
    stop.set()
    await asyncio.wait_for(task, 10)


@pytest.mark.looptime
async def test_a_kind_that_never_syncs_fails_the_manager_with_a_clear_error() -> None:
    from pumice.api.scheme import ResourceKind
    from pumice.client.base import ApiError
    from pumice.runtime import CacheSyncTimeout

    fake = FakeClient(clock=LoopClock())
    missing = ResourceKind("ray.io", "v1", "RayCluster", "rayclusters")

    def no_crd(verb: str, plural: str, ns: str, name: str) -> None:
        if plural == "rayclusters":
            raise ApiError(404, "NotFound", "the server could not find the requested resource")

    fake.interceptor = no_crd
    mgr = Manager(fake, clock=LoopClock(), cache_sync_timeout=120)
    mgr.controller("raycluster").for_(missing).owns(CONFIGMAP).complete(_Noop())
    with pytest.raises(CacheSyncTimeout, match=r"rayclusters\.ray\.io .*CRD may be missing"):
        await mgr.start()


def test_the_cli_reports_bad_input_in_one_line(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from pumice.cli.controller_manager import command

    bad = tmp_path / "kubeconfig"
    bad.write_text("just a string\n")
    runner = CliRunner()
    result = runner.invoke(command, ["--kubeconfig", str(bad), "--no-leader-elect"])
    assert result.exit_code == 1
    assert "cannot use kubeconfig" in result.output
    result = runner.invoke(command, ["--kubeconfig", str(bad), "--controllers", "kube,nope"])
    assert result.exit_code == 2
    assert "unknown controllers ['nope']" in result.output
    result = runner.invoke(command, ["--kubeconfig", str(bad), "--lease-duration", "1"])
    assert result.exit_code == 2
    assert "lease-duration > renew-deadline" in result.output


async def test_a_stop_ends_an_in_flight_reconcile_at_its_next_api_call_and_event_writes_go_on() -> None:
    """controller-runtime cancels the reconciles' context at shutdown, so a long reconcile (the
    vcjob controller creating a wide job's Pods one by one) ends at its next client call instead
    of running until the graceful timeout. The Events the reconcile recorded, even after it was told
    to stop, are still written (the recorder's writer is no part of the reconcile)."""
    from pumice.api.scheme import EVENT
    from pumice.client.base import ContextCanceled
    from pumice.runtime.events import EventRecorder

    fake = FakeClient(clock=LoopClock())
    mgr = Manager(fake, graceful_shutdown_timeout=600)
    recorder = EventRecorder(fake, "creator")
    first = asyncio.Event()
    ended: list[str] = []

    class Creator:
        async def reconcile(self, req: Request) -> Result:
            try:
                for i in range(1000):
                    await fake.create(configmap(f"{req.name}-{i}"))
                    if i == 0:
                        recorder.event(configmap(req.name), "Normal", "Created", "first one created")
                        first.set()
                    await asyncio.sleep(0.01)
            except ContextCanceled:
                ended.append("canceled")
                recorder.event(configmap(req.name), "Warning", "Stopped", "stopped after a few")
                raise
            ended.append("finished")
            return Result()

    mgr.controller("creator").for_(CONFIGMAP).complete(Creator())
    await fake.create(configmap("a"))
    task = asyncio.create_task(mgr.start())
    await first.wait()
    mgr.stop()
    await asyncio.wait_for(task, 60)
    await recorder.flush()
    created = [o for o in (await fake.list(CONFIGMAP, "default")).items if o["metadata"]["name"].startswith("a-")]
    assert ended == ["canceled"] and 1 <= len(created) < 1000
    events = sorted(o["reason"] for o in (await fake.list(EVENT, "default")).items)
    assert events == ["Created", "Stopped"]
    with pytest.raises(ContextCanceled):  # only the stopping controller's tasks are refused
        await _in_a_stopping_scope(fake)
    assert await fake.create(configmap("after-stop"))


async def _in_a_stopping_scope(fake: FakeClient) -> None:
    from pumice.client.base import cancel_scope

    async def call() -> None:
        cancel_scope(lambda: True)
        await fake.create(configmap("refused"))

    await asyncio.create_task(call())


class _Fatal(BaseException):
    """Neither an Exception nor a cancellation (asyncio's loop re-raises KeyboardInterrupt and
    SystemExit itself)."""


@pytest.mark.parametrize("error", [MemoryError("injected"), _Fatal("injected")], ids=["MemoryError", "BaseException"])
async def test_a_reconcile_that_cannot_go_on_is_not_retried_and_stops_the_manager(error: BaseException) -> None:
    """An out-of-memory reconcile was requeued with backoff for ever (the run never advanced):
    now it ends the controller and the manager raises it, naming the controller, as a failed
    runnable. The same for a BaseException that is no cancellation."""
    fake = FakeClient(clock=LoopClock())
    mgr = Manager(fake)
    calls: list[str] = []

    class OutOfMemory:
        async def reconcile(self, req: Request) -> Result:
            calls.append(req.name)
            raise error

    mgr.controller("oom").for_(CONFIGMAP).complete(OutOfMemory())
    await fake.create(configmap("a"))
    with pytest.raises(type(error), match="injected"):
        await asyncio.wait_for(mgr.start(), 10)
    assert (calls, mgr.failed_runnable) == (["a"], "controller-oom")


async def test_a_memory_error_in_an_informer_handler_stops_the_manager() -> None:
    """A map function (run by the informer's handler) that ran out of memory was logged and the
    event dropped, the manager running on; now the informer ends and the manager raises it."""
    fake = FakeClient(clock=LoopClock())
    mgr = Manager(fake)

    class Nothing:
        async def reconcile(self, req: Request) -> Result:
            return Result()

    def out_of_memory(obj: Any) -> list[Request]:
        raise MemoryError("injected")

    mgr.controller("oom").for_(SECRET).watches(CONFIGMAP, map_fn=out_of_memory).complete(Nothing())
    run = asyncio.ensure_future(mgr.start())
    await asyncio.wait_for(mgr.wait_started(), 10)
    await fake.create(configmap("a"))  # comes through the watch: the informer's task calls the map function
    with pytest.raises(MemoryError, match="injected"):
        await asyncio.wait_for(run, 10)
    assert mgr.failed_runnable == "informer-configmaps"
