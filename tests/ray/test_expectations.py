"""Scale expectations (reference §2.6) and determinism of a whole RayJob scenario."""

from __future__ import annotations

from pumice.controllers.ray.expectations import ScaleExpectations

from .test_rayjob import Harness


async def test_a_create_is_satisfied_once_the_pod_is_seen_or_after_30_seconds() -> None:
    seen: set[str] = set()

    async def exists(ns: str, name: str) -> bool:
        return name in seen

    e = ScaleExpectations()
    e.expect("ns", "c", "g", "p1", "create", now=100.0)
    assert not await e.is_satisfied("ns", "c", "g", 101.0, exists)
    seen.add("p1")
    assert await e.is_satisfied("ns", "c", "g", 101.0, exists)
    e.expect("ns", "c", "g", "p2", "create", now=100.0)
    assert not await e.is_satisfied("ns", "c", "g", 129.0, exists)
    assert await e.is_satisfied("ns", "c", "g", 130.0, exists)


async def test_a_delete_is_satisfied_only_when_the_pod_is_gone() -> None:
    present = {"p1"}

    async def exists(ns: str, name: str) -> bool:
        return name in present

    e = ScaleExpectations()
    e.expect("ns", "c", "g", "p1", "delete", now=0.0)
    assert not await e.is_satisfied("ns", "c", "g", 1000.0, exists)  # terminating is not gone
    present.clear()
    assert await e.is_satisfied("ns", "c", "g", 1000.0, exists)
    assert await e.is_satisfied("ns", "c", "other-group", 0.0, exists)


async def test_dropping_a_cluster_forgets_its_records() -> None:
    async def never(ns: str, name: str) -> bool:
        return False

    e = ScaleExpectations()
    e.expect("ns", "c", "", "head", "create", now=0.0)
    e.delete_cluster("ns", "c")
    assert await e.is_satisfied("ns", "c", "", 0.0, never)


async def run_scenario() -> tuple[list[tuple[str, str, str, str]], dict]:
    h = Harness()
    await h.create(backoffLimit=1)
    first = await h.to_running()
    h.dash.set_job_status(first["jobId"], "FAILED")
    await h.submitter_finished()
    for _ in range(3):
        await h.step()
    await h.to_running()
    return h.client.writes(), await h.status()


async def test_the_same_scenario_twice_gives_the_same_writes_and_names() -> None:
    writes_a, status_a = await run_scenario()
    writes_b, status_b = await run_scenario()
    assert writes_a == writes_b
    assert status_a == status_b
