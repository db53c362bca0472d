"""A Volcano Job that never went through the admission webhook (a real cluster where it is not
installed) is still handled safely by the job controller (issue 13 item 1): the webhook's CREATE
defaults are derived in the controller, so a task without a name gets stable Pods instead of a
create/delete loop, and a job the webhook would refuse gets a Warning event instead of waiting in
silence. The FakeClient runs no admission at all."""

from __future__ import annotations

import asyncio
from typing import Any

from pumice.api import scheme
from pumice.controllers.volcano.job.controller import INVALID_JOB_REASON
from pumice.testing.fake_client import FakeClient
from pumice.testing.volcano_controllers import eventually, running_controllers, volcano_scheme


def raw_job(name: str, tasks: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    """A Job as a user writes it, with none of the webhook's defaults."""
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "volcano", "tasks": tasks, **spec}}


def task(replicas: int, **kw: Any) -> dict[str, Any]:
    c = {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "1"]}]}
    return {"replicas": replicas, "template": {"spec": c}, **kw}


async def test_a_task_without_a_name_gets_stable_pods_not_a_create_delete_loop() -> None:
    client = FakeClient(volcano_scheme())
    async with running_controllers(client):
        created = await client.create(raw_job("unnamed", [task(2)]))
        pg = f"unnamed-{created['metadata']['uid']}"
        await eventually(lambda: _exists(client, scheme.POD_GROUP, pg))
        await client.patch(scheme.POD_GROUP, pg, {"status": {"phase": "Inqueue"}}, "default")

        async def two_pods() -> bool:
            return sorted(p["metadata"]["name"] for p in (await client.list(scheme.POD, "default")).items) == [
                "unnamed-default0-0", "unnamed-default0-1"]

        await eventually(two_pods)
        client.compact()
        before = [w for w in client.writes() if w[1] == "pods"]
        await asyncio.sleep(1.0)  # a loop would keep creating and deleting Pods meanwhile
        after = [w for w in client.writes() if w[1] == "pods"]
        assert after == before
        assert not [w for w in after if w[0] == "delete"]


async def test_min_available_above_replicas_gets_a_warning_event_and_no_pods() -> None:
    client = FakeClient(volcano_scheme())
    async with running_controllers(client):
        await client.create(raw_job("toomany", [task(2, name="w", minAvailable=3)]))

        async def warned() -> bool:
            events = (await client.list(scheme.EVENT, "default")).items
            return any(e.get("reason") == INVALID_JOB_REASON and "'minAvailable' is greater than 'replicas'"
                       in e.get("message", "") for e in events)

        await eventually(warned)
        assert (await client.list(scheme.POD, "default")).items == []


async def _exists(client: FakeClient, kind: Any, name: str) -> bool:
    try:
        await client.get(kind, name, "default")
        return True
    except Exception:
        return False
