"""The vcjob controller's watches enqueue a Job exactly where upstream's informer handlers do
(volcano pkg/controllers/job/job_controller_handler.go): a Job's creation and its spec or phase
changes, not its deletion (deleteJob only drops it from the controller's cache); every event of
a Pod it controls; a PodGroup's phase changes only (no add or delete handler); Commands."""

from __future__ import annotations

from typing import Any

from test_job_cache_reads import Lister, job_obj, reconciler
from test_job_lifecycle import vcjob

from pumice.api import Obj, scheme
from pumice.api.meta import deep_copy
from pumice.client.informer import EventHandlerRegistration
from pumice.controllers.volcano.job.controller import _Memory
from pumice.controllers.volcano.wiring import VolcanoOptions, setup_job_controller
from pumice.runtime.controller import Controller
from pumice.runtime.manager import Manager
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient
from pumice.testing.volcano_controllers import volcano_scheme


def _job_controller() -> tuple[Manager, Controller, dict[str, EventHandlerRegistration]]:
    mgr = Manager(FakeClient(volcano_scheme()))
    setup_job_controller(mgr, VolcanoOptions())
    ctrl = next(c for c in mgr.controllers if c.name == "volcano-job")
    return mgr, ctrl, {w.informer.kind.kind: ctrl._handlers(w) for w in ctrl.watches}


async def _drain(ctrl: Controller) -> list[Request]:
    """The Requests queued since the last drain."""
    out = []
    while len(ctrl.queue):
        req = await ctrl.queue.get()
        ctrl.queue.done(req)
        out.append(req)
    return out


def _with(obj: Obj, **changes: Any) -> Obj:
    out = deep_copy(obj)
    for path, value in changes.items():
        node = out
        *parents, last = path.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return out


async def test_job_events_enqueue_on_creation_spec_and_phase_changes_only() -> None:
    _mgr, ctrl, h = _job_controller()
    job = job_obj(1)
    job["status"] = {"state": {"phase": "Pending"}, "pending": 0}
    cases = [
        (lambda: h["Job"].on_add(job), 1),
        (lambda: h["Job"].on_update(job, _with(job, status__pending=1)), 0),  # its own status echo
        (lambda: h["Job"].on_update(job, _with(job, status__state={"phase": "Running"})), 1),
        (lambda: h["Job"].on_update(job, _with(job, spec__minAvailable=1)), 1),
        (lambda: h["Job"].on_update(job, _with(job, metadata__deletionTimestamp="2024-01-01T00:00:00Z")), 0),
        (lambda: h["Job"].on_update(job, _with(job, metadata__labels={"a": "b"})), 0),
        (lambda: h["Job"].on_delete(job), 0),
    ]
    for i, (event, want) in enumerate(cases):
        event()
        assert await _drain(ctrl) == [Request("default", "j1")] * want, i


async def test_podgroup_events_enqueue_on_phase_changes_only_and_pod_events_always() -> None:
    _mgr, ctrl, h = _job_controller()
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "j1-u1", "namespace": "default", "uid": "pg1",
                       "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j1",
                                            "uid": "u1", "controller": True}]},
          "spec": {"minMember": 1}, "status": {"phase": "Pending"}}
    h["PodGroup"].on_add(pg)
    assert await _drain(ctrl) == []
    h["PodGroup"].on_update(pg, _with(pg, status__conditions=[{"type": "Unschedulable", "status": "True"}]))
    assert await _drain(ctrl) == []
    h["PodGroup"].on_update(pg, _with(pg, status__phase="Inqueue"))
    assert await _drain(ctrl) == [Request("default", "j1")]
    h["PodGroup"].on_delete(pg)
    assert await _drain(ctrl) == []
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "j1-a-0", "namespace": "default", "uid": "p1", "resourceVersion": "3",
                        "ownerReferences": pg["metadata"]["ownerReferences"]}, "spec": {}, "status": {"phase": "Pending"}}
    for event in (lambda: h["Pod"].on_add(pod), lambda: h["Pod"].on_update(pod, _with(pod, spec__nodeName="n1")),
                  lambda: h["Pod"].on_delete(pod)):
        event()
        assert await _drain(ctrl) == [Request("default", "j1")]


def test_the_jobs_deletion_makes_the_controller_forget_it() -> None:
    mgr, ctrl, _h = _job_controller()
    forgets = [reg.on_delete for reg in mgr.informers.informer(ctrl.watches[0].informer.kind)._handlers]
    assert ctrl.reconciler.forget in forgets  # type: ignore[attr-defined]
    r = reconciler(None, Lister())
    job, other = job_obj(3, uid="u1"), job_obj(3, uid="u2")
    r._mem["default/j1"] = ("u1", _Memory())
    r._remember_write(job)
    r.forget(other)  # the last state of another Job of that name: not this one's memory
    assert "default/j1" in r._mem and "default/j1" in r._written
    r.forget(job)
    assert r._mem == {} and r._written == {}


async def test_a_reconcile_that_ends_after_its_jobs_deletion_keeps_no_memory_of_it() -> None:
    client = FakeClient(volcano_scheme())
    await client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                         "spec": {"weight": 1}, "status": {"state": "Open"}})
    created = await client.create(vcjob("j1"))
    jobs = Lister(created)
    r = reconciler(client, jobs, queues=Lister(await client.get(scheme.QUEUE, "default")))
    real_update_status = client.update_status

    async def deleted_meanwhile(obj: Obj) -> Obj:  # the Job's delete event arrives during the write
        out = await real_update_status(obj)
        del jobs.objs[("default", "j1")]
        r.forget(created)
        return out

    client.update_status = deleted_meanwhile  # type: ignore[method-assign]
    await r.reconcile(Request("default", "j1"))
    assert r._mem == {}
