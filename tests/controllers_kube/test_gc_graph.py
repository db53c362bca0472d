"""The garbage collector's graph: which events queue an attemptToDelete (unit level, no server)."""

from __future__ import annotations

from typing import Any

from pumice._util.clock import FakeClock
from pumice.api import Obj
from pumice.api.scheme import POD, REPLICA_SET
from pumice.controllers.kube.garbagecollector import FOREGROUND, GarbageCollector


def obj(kind: str, name: str, uid: str, *, owners: tuple[str, ...] = (), deleting: bool = False,
        finalizers: tuple[str, ...] = (), rv: str = "1") -> Obj:
    md: dict[str, Any] = {"name": name, "namespace": "default", "uid": uid, "resourceVersion": rv}
    if owners:
        md["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": o, "uid": o,
                                  "controller": True} for o in owners]
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if finalizers:
        md["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": kind, "metadata": md}


def queued(gc: GarbageCollector) -> list[tuple[str, str]]:
    return list(gc.queue._queue)


def collector() -> GarbageCollector:
    return GarbageCollector(client=None, informers=None, clock=FakeClock())  # type: ignore[arg-type]


def test_a_dependent_whose_owner_is_known_and_live_is_not_queued() -> None:
    gc = collector()
    gc._upsert(REPLICA_SET, obj("ReplicaSet", "rs", "rs"))
    gc._upsert(POD, obj("Pod", "p", "p", owners=("rs",)))
    assert queued(gc) == []
    assert gc.dependents["rs"] == {"p"}


def test_a_dependent_whose_owner_is_not_in_the_graph_is_queued() -> None:
    gc = collector()
    gc._upsert(POD, obj("Pod", "p", "p", owners=("rs",)))
    assert queued(gc) == [("delete", "p")]


def test_the_owners_removal_queues_the_dependent_that_was_not_queued_at_its_add() -> None:
    gc = collector()
    rs = obj("ReplicaSet", "rs", "rs")
    gc._upsert(REPLICA_SET, rs)
    gc._upsert(POD, obj("Pod", "p", "p", owners=("rs",)))
    assert queued(gc) == []
    gc._remove(rs)
    assert queued(gc) == [("delete", "p")]


def test_an_owner_deleted_in_the_foreground_makes_its_new_dependent_queued() -> None:
    gc = collector()
    gc._upsert(REPLICA_SET, obj("ReplicaSet", "rs", "rs", deleting=True, finalizers=(FOREGROUND,)))
    assert queued(gc) == [("owner", "rs")]
    gc._upsert(POD, obj("Pod", "p", "p", owners=("rs",)))
    assert queued(gc) == [("owner", "rs"), ("delete", "p")]


def test_a_dependent_that_gains_an_unknown_owner_is_queued_and_one_that_keeps_its_owners_is_not() -> None:
    gc = collector()
    gc._upsert(REPLICA_SET, obj("ReplicaSet", "rs", "rs"))
    gc._upsert(POD, obj("Pod", "p", "p", owners=("rs",)))
    gc._upsert(POD, obj("Pod", "p", "p", owners=("rs",), rv="2"))  # a status change: owners unchanged
    assert queued(gc) == []
    gc._upsert(POD, obj("Pod", "p", "p", owners=("rs", "gone"), rv="3"))
    assert queued(gc) == [("delete", "p")]
    assert gc.graph["p"].resource_version == "3"
