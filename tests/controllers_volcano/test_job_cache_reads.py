"""The vcjob controller reads the Job and its PodGroup from the informer caches (as upstream reads
its job cache and PodGroup lister): its own last write stands in for an older cached version, a
write from a stale cache is refused with 409 and retried, and the derived parts (the webhook
defaults, the PodGroup spec it wants) are computed once per Job generation."""

from __future__ import annotations

from typing import Any

import pytest
from test_job_lifecycle import World, task, vcjob

from pumice._util.clock import FakeClock
from pumice.api import Obj, scheme
from pumice.api.meta import deep_copy
from pumice.client.base import is_conflict
from pumice.controllers.volcano.job import builders
from pumice.controllers.volcano.job.controller import JobReconciler, _Memory
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient
from pumice.testing.volcano_controllers import eventually, running_controllers, volcano_scheme


class Lister:
    """A hand-fed informer cache: ``get`` answers what the test put in (never a copy)."""

    def __init__(self, *objs: Obj) -> None:
        self.objs: dict[tuple[str, str], Obj] = {}
        for o in objs:
            self.put(o)

    def put(self, obj: Obj) -> None:
        md = obj["metadata"]
        self.objs[(md.get("namespace") or "", md["name"])] = obj

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self.objs.get((namespace or "", name))

    def list(self, namespace: str | None = None) -> list[Obj]:
        return [o for (ns, _), o in sorted(self.objs.items()) if namespace in (None, ns)]

    def __len__(self) -> int:
        return len(self.objs)

    def by_index(self, _index: str, uid: str) -> list[Obj]:
        return [o for o in self.list() if any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or [])]


def job_obj(rv: int, uid: str = "u1", generation: int = 1, **spec: Any) -> Obj:
    j = vcjob("j1", **spec)
    j["metadata"].update(uid=uid, resourceVersion=str(rv), generation=generation)
    return j


def reconciler(client: Any, jobs: Lister, **listers: Lister) -> JobReconciler:
    return JobReconciler(client, jobs=jobs, pods=listers.get("pods", Lister()), podgroups=listers.get("podgroups", Lister()),
                         queues=listers.get("queues", Lister()), commands=Lister(),
                         priorityclasses=listers.get("priorityclasses", Lister()), clock=FakeClock())


def test_the_jobs_own_later_write_stands_in_for_an_older_cached_version_until_the_cache_catches_up() -> None:
    cached = job_obj(5)
    jobs = Lister(cached)
    r = reconciler(None, jobs)
    mine = job_obj(7)
    r._remember_write(mine)
    assert r.current_job("default", "j1") is mine
    caught_up = job_obj(7)
    jobs.put(caught_up)
    assert r.current_job("default", "j1") is caught_up
    assert r._written == {}


def test_an_older_write_never_replaces_a_newer_cached_job_nor_one_of_another_uid() -> None:
    jobs = Lister(job_obj(9))
    r = reconciler(None, jobs)
    r._remember_write(job_obj(7))
    assert r.current_job("default", "j1")["metadata"]["resourceVersion"] == "9"
    recreated = job_obj(3, uid="u2")
    jobs.put(recreated)
    r._remember_write(job_obj(8))
    assert r.current_job("default", "j1") is recreated


def test_a_job_gone_from_the_cache_is_gone_even_after_a_write() -> None:
    jobs = Lister(job_obj(5))
    r = reconciler(None, jobs)
    r._remember_write(job_obj(6))
    jobs.objs.clear()
    assert r.current_job("default", "j1") is None
    assert r._written == {}


def test_writes_the_cache_has_seen_are_swept_once_the_map_doubles() -> None:
    jobs = Lister()
    r = reconciler(None, jobs)
    for i in range(200):
        j = vcjob(f"j{i}")
        j["metadata"].update(uid=f"u{i}", resourceVersion="5")
        jobs.put(j)
        r._remember_write(j)  # the cache already has this version
    assert len(r._written) < 64


def test_the_defaults_are_derived_once_per_generation() -> None:
    r = reconciler(None, Lister())
    raw = job_obj(5, maxRetry=0)
    raw["spec"]["queue"] = ""
    first, problem = r.defaulted(raw)
    assert problem == "" and first["spec"]["queue"] == "default" and raw["spec"]["queue"] == ""
    again, _ = r.defaulted(deep_copy(raw) | {"status": {"state": {"phase": "Running"}}})
    assert again["spec"] is first["spec"] and again["status"]["state"]["phase"] == "Running"
    bumped = deep_copy(raw)
    bumped["metadata"]["generation"] = 2
    bumped["spec"]["queue"] = "q2"
    assert r.defaulted(bumped)[0]["spec"]["queue"] == "q2"


def test_the_wanted_podgroup_spec_follows_the_generation_and_the_task_priorities() -> None:
    pcs = Lister({"metadata": {"name": "high"}, "value": 10})
    c = {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}
    low = task("a", 1)
    high = {"name": "b", "replicas": 1, "template": {"spec": {**c, "priorityClassName": "high"}}}
    high["template"]["spec"]["containers"] = [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "3"}}}]
    job = job_obj(5, tasks=[low, high], minAvailable=1)
    r = reconciler(None, Lister(), priorityclasses=pcs)
    assert r.wanted_podgroup_spec(job)["minResources"]["cpu"] == "3"  # the high-priority task first
    pcs.objs.clear()
    assert r.wanted_podgroup_spec(job)["minResources"]["cpu"] == "1"
    assert r.wanted_podgroup_spec(job) == builders.build_podgroup(job)["spec"]


@pytest.mark.parametrize("change", ["none", "minAvailable", "replicas", "priorityClassName", "minTaskMember-missing"])
def test_podgroup_spec_update_with_a_given_want_is_the_update_without_it(change: str) -> None:
    job = job_obj(5, tasks=[task("a", 2), task("b", 1)])
    pg = builders.build_podgroup(job)
    pg["metadata"].update(uid="pg", resourceVersion="3")
    if change == "minAvailable":
        job["spec"]["minAvailable"] = 1
    elif change == "replicas":
        job["spec"]["tasks"][0]["replicas"] = 4
        job["spec"]["tasks"][0]["minAvailable"] = 4
    elif change == "priorityClassName":
        job["spec"]["priorityClassName"] = "p"
    elif change == "minTaskMember-missing":
        del pg["spec"]["minTaskMember"]
    before = deep_copy(pg)
    want = builders.build_podgroup(job)["spec"]
    frozen_want = deep_copy(want)
    got = builders.podgroup_spec_update(pg, job, want=want)
    assert got == builders.podgroup_spec_update(pg, job)
    assert (got is None) == (change == "none")
    assert pg == before and want == frozen_want  # neither input is changed
    if got is not None:
        got["spec"]["minResources"]["cpu"] = "999"
        assert want == frozen_want  # the answer shares nothing with the remembered want


async def test_a_status_write_from_a_stale_cache_is_refused_with_a_conflict_and_succeeds_once_the_cache_catches_up() -> None:
    client = FakeClient(volcano_scheme())
    await client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                         "spec": {"weight": 1}, "status": {"state": "Open"}})
    created = await client.create(vcjob("j1"))
    stale = deep_copy(created)
    fresh = await client.update_status({**deep_copy(created), "status": {"state": {"phase": "Pending"}, "minAvailable": 2}})
    jobs = Lister(stale)
    queues = Lister(await client.get(scheme.QUEUE, "default"))
    r = reconciler(client, jobs, queues=queues)
    with pytest.raises(Exception) as e:
        await r.reconcile(Request("default", "j1"))
    assert is_conflict(e.value)
    jobs.put(fresh)
    await r.reconcile(Request("default", "j1"))
    pgs = (await client.list(scheme.POD_GROUP, "default")).items
    assert [pg["metadata"]["name"] for pg in pgs] == [builders.podgroup_name(created)]


async def test_reconciles_of_a_running_job_read_no_job_or_podgroup_from_the_api(client: FakeClient) -> None:
    gets: list[str] = []
    real_get = client.get

    async def counting_get(kind: Any, name: str, namespace: str | None = None) -> Obj:
        gets.append(kind.kind)
        return await real_get(kind, name, namespace)

    client.get = counting_get  # type: ignore[method-assign]
    async with running_controllers(client):
        w = World(client)
        await w.start(vcjob("j1"))
        gets.clear()  # from here on: the PodGroup's phase change, the Pods' creation and their events
        await eventually(lambda: w.n_pods(2))
    assert gets == []


async def test_the_memory_of_a_job_is_dropped_with_it_and_starts_afresh_for_a_new_uid_under_its_name() -> None:
    client = FakeClient(volcano_scheme())
    await client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                         "spec": {"weight": 1}, "status": {"state": "Open"}})
    j1, j10 = await client.create(vcjob("j1")), await client.create(vcjob("j10"))
    jobs = Lister(j1, j10)
    r = reconciler(client, jobs, queues=Lister(await client.get(scheme.QUEUE, "default")))
    for name in ("j1", "j10"):
        jobs.put(await client.get(scheme.VCJOB, name, "default"))
        await r.reconcile(Request("default", name))
    assert set(r._mem) == {"default/j1", "default/j10"}
    r._mem["default/j1"][1].killed.add("pod-of-the-old-j1")
    del jobs.objs[("default", "j1")]
    await r.reconcile(Request("default", "j1"))
    assert set(r._mem) == {"default/j10"}  # j10's memory is not j1's, though its key starts with it
    # j1 made again (another uid); a memory left from the old one, as when its removal was never
    # reconciled, is not the new one's
    r._mem["default/j1"] = (j1["metadata"]["uid"], _Memory(killed={"pod-of-the-old-j1"}))
    await client.delete(scheme.VCJOB, "j1", "default")
    again = await client.create(vcjob("j1"))
    assert again["metadata"]["uid"] != j1["metadata"]["uid"]
    jobs.put(again)
    await r.reconcile(Request("default", "j1"))
    uid, mem = r._mem["default/j1"]
    assert uid == again["metadata"]["uid"] and "pod-of-the-old-j1" not in mem.killed


def test_the_podgroup_min_resources_are_remembered_by_every_value_they_are_computed_from() -> None:
    def job(requests: dict[str, Any], *, replicas: int = 2, min_available: int = 2, init: list | None = None) -> Obj:
        spec: Obj = {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": requests}}]}
        if init is not None:
            spec["initContainers"] = init
        return job_obj(5, tasks=[{"name": "t", "replicas": replicas, "template": {"spec": spec}}],
                       minAvailable=min_available)

    assert builders.pg_min_resources(job({"cpu": "1"})) == {"cpu": "2"}
    assert builders.pg_min_resources(job({"cpu": "2"})) == {"cpu": "4"}  # the same shape, another value
    assert builders.pg_min_resources(job({"cpu": "2"}, min_available=1)) == {"cpu": "2"}
    assert builders.pg_min_resources(job({"cpu": "2"}, replicas=3, min_available=3)) == {"cpu": "6"}
    # 1 and True are equal keys but not equal quantities (True is no quantity: not counted)
    assert builders.pg_min_resources(job({"cpu": True})) == {}
    assert builders.pg_min_resources(job({"cpu": 1})) == {"cpu": "2"}
    init = [{"name": "i", "image": "busybox", "resources": {"requests": {"cpu": "3"}}}]
    assert builders.pg_min_resources(job({"cpu": "1"}, init=init)) == {"cpu": "6"}
    assert builders.pg_min_resources(job({"cpu": "1"}, init=[{**init[0], "restartPolicy": "Always"}])) == {"cpu": "8"}
    # an unhashable value (refused by the schema) is computed, not remembered
    assert builders.pg_min_resources(job({"cpu": "1", "memory": {"odd": 1}})) == {"cpu": "2"}
    # stale values: an answer changed by its reader, and a template changed in place
    got = builders.pg_min_resources(job({"cpu": "1"}))
    got["cpu"] = "999"
    assert builders.pg_min_resources(job({"cpu": "1"})) == {"cpu": "2"}
    j = job({"cpu": "1"})
    assert builders.pg_min_resources(j) == {"cpu": "2"}
    j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "5"
    assert builders.pg_min_resources(j) == {"cpu": "10"}


def test_the_created_podgroup_has_the_wanted_spec_and_shares_nothing_with_it() -> None:
    job = job_obj(5, tasks=[task("a", 2)])
    r = reconciler(None, Lister())
    want = r.wanted_podgroup_spec(job)
    frozen = deep_copy(want)
    pg = builders.build_podgroup(job, spec=want)
    assert pg == builders.build_podgroup(job) and pg["spec"] == frozen
    pg["spec"]["minResources"]["cpu"] = "999"
    assert want == frozen


async def test_a_reconcile_never_changes_the_cached_job_its_status_or_podgroup() -> None:
    client = FakeClient(volcano_scheme())
    await client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                         "spec": {"weight": 1}, "status": {"state": "Open"}})
    created = await client.create(vcjob("j1", plugins={"env": []}))
    jobs = Lister(created)
    r = reconciler(client, jobs, queues=Lister(await client.get(scheme.QUEUE, "default")))
    await r.reconcile(Request("default", "j1"))  # Pending, with the env plugin's record
    pending = await client.get(scheme.VCJOB, "j1", "default")
    assert pending["status"]["controlledResources"] == {"plugin-env": "env"}
    pg = (await client.list(scheme.POD_GROUP, "default")).items[0]
    pg = await client.update({**pg, "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                              "status": {"phase": "Inqueue"}})
    jobs.put(pending)
    podgroups = Lister(pg)
    r.podgroups = podgroups
    before_job, before_pg = deep_copy(pending), deep_copy(pg)
    await r.reconcile(Request("default", "j1"))  # the Pods are made and counted
    assert pending == before_job and pg == before_pg
    counted = await client.get(scheme.VCJOB, "j1", "default")
    assert counted["status"]["pending"] == 2 and counted["status"]["controlledResources"] == {"plugin-env": "env"}
    # the Pods run: the phase moves to Running on the status the step owns
    pods = Lister()
    for p in (await client.list(scheme.POD, "default")).items:
        pods.put(await client.update_status({**p, "apiVersion": "v1", "kind": "Pod", "status": {"phase": "Running"}}))
    r.pods = pods
    jobs.put(counted)
    before_job = deep_copy(counted)
    await r.reconcile(Request("default", "j1"))
    assert counted == before_job
    running = await client.get(scheme.VCJOB, "j1", "default")
    assert running["status"]["state"]["phase"] == "Running" and running["status"]["running"] == 2
    # a kill step changes the phase on its own copy too
    completing = await client.update_status({**running, "status": {**running["status"], "state": {"phase": "Completing"}}})
    jobs.put(completing)
    r.pods = Lister()
    before_job = deep_copy(completing)
    await r.reconcile(Request("default", "j1"))
    assert completing == before_job
    assert (await client.get(scheme.VCJOB, "j1", "default"))["status"]["state"]["phase"] == "Completed"


def test_a_pod_with_a_job_version_that_is_no_number_is_neither_remembered_nor_gone() -> None:
    job = job_obj(5)
    r = reconciler(None, Lister(job))

    def pod(name: str, version: str, phase: str = "Running") -> Obj:
        return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                             "annotations": {"volcano.sh/job-version": version, "volcano.sh/task-spec": "t"}},
                "status": {"phase": phase}}

    mem = _Memory(pods={"j1-t-0": ("uid-j1-t-0", "Running", 0), "j1-t-1": ("uid-j1-t-1", "Running", 0)})
    events, new = r.observe(job, [pod("j1-t-0", "x"), pod("j1-t-1", "0")], None, mem)
    assert events == [] and set(new.pods) == {"j1-t-1"}
    events, new = r.observe(job, [pod("j1-t-1", "0", "Succeeded")], None, mem)
    assert [(e.event, e.pod) for e in events] == [("OutOfSync", "j1-t-1"), ("PodEvicted", "j1-t-0")]  # 1 of 2 done


async def test_a_retry_after_a_failed_claim_name_write_takes_the_claim_its_first_try_made() -> None:
    """The claim is made, then the Job's spec write is refused (a stale cache); the retry draws
    the same seeded name, finds the claim this Job controls and takes it: one claim, not two."""
    client = FakeClient(volcano_scheme())
    await client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                         "spec": {"weight": 1}, "status": {"state": "Open"}})
    claim_spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    created = await client.create(vcjob("j1", volumes=[{"mountPath": "/data", "volumeClaim": claim_spec}]))
    stale = deep_copy(created)
    fresh = await client.update_status({**deep_copy(created), "status": {"state": {"phase": "Pending"}, "minAvailable": 2}})
    jobs = Lister(stale)
    r = reconciler(client, jobs, queues=Lister(await client.get(scheme.QUEUE, "default")))
    with pytest.raises(Exception) as e:
        await r.reconcile(Request("default", "j1"))
    assert is_conflict(e.value)
    assert len((await client.list(scheme.PERSISTENT_VOLUME_CLAIM, "default")).items) == 1
    jobs.put(fresh)
    await r.reconcile(Request("default", "j1"))
    claims = (await client.list(scheme.PERSISTENT_VOLUME_CLAIM, "default")).items
    job = await client.get(scheme.VCJOB, "j1", "default")
    assert [c["metadata"]["name"] for c in claims] == [job["spec"]["volumes"][0]["volumeClaimName"]]
    assert claims[0]["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
