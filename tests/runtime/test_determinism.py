"""Same scenario, same clock epoch: the same reconciles in the same order and the same writes
(STYLE rule 9; trio's test_scheduler_determinism in spirit)."""

from __future__ import annotations

import asyncio
from typing import Any

import looptime

from pumice._util.clock import LoopClock
from pumice.api.scheme import EVENT
from pumice.runtime import Manager, Request, Result, create_or_update, set_controller_reference
from pumice.testing.fake_client import FakeClient

from .conftest import CONFIGMAP, SECRET, configmap


async def scenario() -> tuple[list[str], list[tuple[str, str, str, str]], list[dict[str, Any]]]:
    clock = LoopClock(epoch=1_700_000_000.0)
    fake = FakeClient(clock=clock)
    mgr = Manager(fake, clock=clock, identity="det")
    order: list[str] = []
    cms = mgr.informers.informer(CONFIGMAP).lister
    recorder = mgr.event_recorder("det-controller")

    class Child:
        async def reconcile(self, req: Request) -> Result:
            order.append(req.name)
            cm = cms.get(req.namespace, req.name)
            if cm is None:
                return Result()
            await asyncio.sleep(0.1 * (len(req.name) % 3))

            def mutate(s: dict[str, Any]) -> None:
                set_controller_reference(cm, s)
                s["data"] = dict(cm.get("data") or {})

            _, op = await create_or_update(fake, {"apiVersion": "v1", "kind": "Secret", "metadata": {
                "name": req.name, "namespace": req.namespace}}, mutate)
            if op != "unchanged":
                recorder.event(cm, "Normal", "Synced", f"secret {op}")
            return Result(requeue_after=30) if req.name.endswith("0") else Result()

    mgr.controller("child").for_(CONFIGMAP).owns(SECRET).with_options(max_concurrent_reconciles=3).complete(Child())
    for i in range(6):
        await fake.create(configmap(f"cm{i}" + "x" * i, data={"i": str(i)}))
    task = asyncio.create_task(mgr.start())
    await mgr.wait_started()
    await asyncio.sleep(5)
    live = await fake.get(CONFIGMAP, "cm2xx", "default")
    live["data"] = {"i": "changed"}
    await fake.update(live)
    await asyncio.sleep(100)
    mgr.stop()
    await task
    events = sorted((await fake.list(EVENT, "default")).items, key=lambda e: e["metadata"]["name"])
    return order, fake.actions, events


def run_fresh() -> tuple[list[str], list[tuple[str, str, str, str]], list[dict[str, Any]]]:
    """Run the scenario on a new virtual-time loop starting at 0 (a fresh process, in effect)."""
    loop = looptime.new_event_loop(start=0.0)
    try:
        return loop.run_until_complete(scenario())
    finally:
        loop.close()


def test_a_scenario_run_twice_gives_the_same_reconciles_and_writes() -> None:
    first = run_fresh()
    second = run_fresh()
    assert first[0] == second[0]
    assert first[1] == second[1]
    assert first[2] == second[2]
    assert len(first[0]) > 6, "the scenario did reconcile (including requeues)"
