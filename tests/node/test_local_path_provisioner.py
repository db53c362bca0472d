"""The local-path provisioner's failures (review 19 R-14): a transport error while provisioning is
retried with backoff instead of ending run() (and with it the node agent); a FATAL_TYPES error in
one of its informers' handlers ends run() instead of leaving it waiting for ever."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pumice._util.clock import LoopClock
from pumice.api.scheme import PERSISTENT_VOLUME
from pumice.node.provisioner import PROVISIONER, LocalPathProvisioner
from pumice.testing.fake_client import FakeClient
from pumice.testing.node import wait_for

CLASS = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
         "provisioner": PROVISIONER, "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}


def claim(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default",
                         "annotations": {"volume.kubernetes.io/storage-provisioner": PROVISIONER}},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                     "resources": {"requests": {"storage": "1Gi"}}}}


def provisioner(client: FakeClient, clock: LoopClock) -> LocalPathProvisioner:
    return LocalPathProvisioner(client, Path("/nonexistent/pv"), clock, record_events=False, make_dirs=False)


async def _volumes(client: FakeClient) -> list[str]:
    return [v["metadata"]["name"] for v in (await client.list(PERSISTENT_VOLUME)).items]



def _volume_creates_fail_while(client: FakeClient, clock: LoopClock, failing: Callable[[list[float]], bool]) -> list[float]:
    """Make ``client``'s PersistentVolume creates raise a transient ReadTimeout while
    ``failing(tries)`` is true; return ``tries``, the clock's time of every PV create (seconds)."""
    import httpx2

    real_create, tries = client.create, []

    async def create(obj: Any, *a: Any, **k: Any) -> Any:
        if obj.get("kind") == "PersistentVolume":
            tries.append(clock.monotonic())
            if failing(tries):
                raise httpx2.ReadTimeout("timed out (transient)")
        return await real_create(obj, *a, **k)

    client.create = create  # type: ignore[method-assign]
    return tries

@pytest.mark.looptime
async def test_a_timeout_creating_a_volume_is_retried_and_run_goes_on() -> None:
    clock = LoopClock()
    client = FakeClient(clock=clock)
    tries = _volume_creates_fail_while(client, clock, lambda tries: len(tries) == 1)
    await client.create(CLASS)
    run = asyncio.ensure_future(provisioner(client, clock).run())
    await client.create(claim("data"))
    await wait_for(lambda: len(tries) == 2, timeout=60, interval=0.5)
    assert 15 <= tries[1] - tries[0] <= 16  # the external provisioner's first retry delay
    assert len(await _volumes(client)) == 1
    await client.create(claim("more"))  # and it still provisions later claims
    await wait_for(lambda: len(tries) == 3, timeout=10, interval=0.5)
    assert not run.done()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run


@pytest.mark.looptime
async def test_a_memory_error_in_the_claim_handler_ends_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def out_of_memory(self: LocalPathProvisioner, typ: str, pvc: Any) -> None:
        raise MemoryError("injected")

    monkeypatch.setattr(LocalPathProvisioner, "_on_claim", out_of_memory)
    clock = LoopClock()
    client = FakeClient(clock=clock)
    await client.create(CLASS)
    run = asyncio.ensure_future(provisioner(client, clock).run())
    await client.create(claim("data"))
    with pytest.raises(MemoryError, match="injected"):
        await asyncio.wait_for(run, 60)


@pytest.mark.looptime
async def test_a_claim_made_again_after_a_give_up_gets_its_own_retries(caplog: pytest.LogCaptureFixture) -> None:
    """Review 20 V-3: the claim queue was keyed by namespace/name and kept the failure count of a
    given-up claim after its deletion, so a new claim of the same name was given up at its first
    failure. Upstream keys the claim queue by the claim's UID."""
    from pumice.api.scheme import PERSISTENT_VOLUME_CLAIM
    from pumice.node.provisioner import FAILED_THRESHOLD

    clock = LoopClock()
    client = FakeClient(clock=clock)
    failing = True
    tries = _volume_creates_fail_while(client, clock, lambda _tries: failing)
    await client.create(CLASS)
    run = asyncio.ensure_future(provisioner(client, clock).run())
    await client.create(claim("data"))
    await wait_for(lambda: len(tries) == FAILED_THRESHOLD + 1, timeout=20_000, interval=10)
    await asyncio.sleep(2000)
    assert len(tries) == FAILED_THRESHOLD + 1  # given up
    # review 20 V-12: the lines said "retrying (failures: 0)" and "after 15 failures" at the
    # 16th; now the library's words for its numbers (retries so far, against the threshold)
    assert "retrying because failures < threshold (failures: 0, threshold: 15)" in caplog.text
    assert ("giving up on claim default/data because failures >= threshold (failures: 15, threshold: 15)"
            in caplog.text)
    await client.delete(PERSISTENT_VOLUME_CLAIM, "data", "default")
    await client.create(claim("data"))
    await wait_for(lambda: len(tries) == FAILED_THRESHOLD + 2, timeout=10, interval=0.5)
    failing = False  # one transient failure for the new claim, then the API is fine
    await wait_for(lambda: len(tries) == FAILED_THRESHOLD + 3, timeout=60, interval=0.5)
    assert 15 <= tries[-1] - tries[-2] <= 16
    assert len(await _volumes(client)) == 1
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
