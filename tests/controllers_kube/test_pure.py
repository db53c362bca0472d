"""Pure helpers of the workload controllers: deletion order, intstr scaling, hashes, rollout math."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.api import Obj
from pumice.api.meta import with_condition
from pumice.controllers.kube.deployment import (
    build_new_replica_set,
    equal_ignore_hash,
    new_rs_replicas,
    resolve_fenceposts,
)
from pumice.controllers.kube.podutil import compute_hash, deletion_order
from pumice.runtime import TerminalError


def pod(name: str, *, node: str = "", phase: str = "Running", ready: bool = True, created: str = "2024-01-01T00:00:00Z",
        ready_since: str = "2024-01-01T00:00:00Z", restarts: int = 0) -> Obj:
    return {"metadata": {"name": name, "creationTimestamp": created},
            "spec": {"nodeName": node} if node else {},
            "status": {"phase": phase,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "lastTransitionTime": ready_since}],
                       "containerStatuses": [{"name": "c", "restartCount": restarts}]}}


def test_surplus_pods_go_unscheduled_then_pending_then_not_ready_then_newest() -> None:
    pods = [
        pod("old-ready", node="n1", created="2024-01-01T00:00:00Z"),
        pod("new-ready", node="n2", created="2024-01-02T00:00:00Z"),
        pod("not-ready", node="n3", ready=False),
        pod("pending", node="n4", phase="Pending", ready=False),
        pod("unscheduled", phase="Pending", ready=False),
    ]
    assert [p["metadata"]["name"] for p in deletion_order(pods)] == [
        "unscheduled", "pending", "not-ready", "new-ready", "old-ready"]


def test_pods_doubled_up_on_a_node_go_before_lonely_ones() -> None:
    pods = [pod("alone", node="n1", created="2024-01-03T00:00:00Z"), pod("a", node="n2"), pod("b", node="n2")]
    assert deletion_order(pods)[0]["metadata"]["name"] in ("a", "b")


def test_more_restarts_go_first_among_equal_pods() -> None:
    pods = [pod("calm", node="n1"), pod("crashy", node="n2", restarts=5)]
    assert deletion_order(pods)[0]["metadata"]["name"] == "crashy"


def dep(replicas: int, surge: Any = None, unavailable: Any = None) -> Obj:
    ru: Obj = {}
    if surge is not None:
        ru["maxSurge"] = surge
    if unavailable is not None:
        ru["maxUnavailable"] = unavailable
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1", "annotations": {"team": "a"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": ru},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}}}


def test_fenceposts_default_to_25_percent_and_never_both_zero() -> None:
    assert resolve_fenceposts(dep(10)) == (3, 2)
    assert resolve_fenceposts(dep(3, surge=0, unavailable=0)) == (0, 1)
    assert resolve_fenceposts({"spec": {"replicas": 3, "strategy": {"type": "Recreate"}}}) == (0, 0)
    with pytest.raises(TerminalError):
        resolve_fenceposts(dep(3, surge="lots"))


def test_new_replica_set_grows_within_max_surge() -> None:
    d = dep(4, surge=1, unavailable=0)
    old = {"spec": {"replicas": 4}}
    new = {"spec": {"replicas": 0}}
    assert new_rs_replicas(d, [old, new], new) == 1
    assert new_rs_replicas(d, [{"spec": {"replicas": 3}}, {"spec": {"replicas": 2}}], {"spec": {"replicas": 2}}) == 2


def test_new_replica_set_carries_hash_revision_and_owner() -> None:
    d = dep(3)
    h = compute_hash(d["spec"]["template"])
    rs = build_new_replica_set(d, h, 2, 1)
    assert rs["metadata"]["name"] == f"web-{h}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": h}
    assert rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == h
    assert rs["metadata"]["annotations"] == {"team": "a", "deployment.kubernetes.io/revision": "2",
                                             "deployment.kubernetes.io/desired-replicas": "3",
                                             "deployment.kubernetes.io/max-replicas": "4"}
    assert rs["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert equal_ignore_hash(rs["spec"]["template"], d["spec"]["template"])


def test_template_hash_is_stable_and_changes_with_the_template_or_collisions() -> None:
    t = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}
    assert compute_hash(t) == compute_hash({"spec": {"containers": [{"name": "c"}]}, "metadata": {"labels": {"a": "b"}}})
    assert compute_hash(t) != compute_hash(t, 1)
    assert set(compute_hash(t)) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_condition_transition_time_moves_only_when_status_flips() -> None:
    conds = with_condition([], {"type": "Available", "status": "True", "reason": "A"}, "t1")
    conds = with_condition(conds, {"type": "Available", "status": "True", "reason": "B"}, "t2")
    assert conds[0]["lastTransitionTime"] == "t1" and conds[0]["reason"] == "B"
    conds = with_condition(conds, {"type": "Available", "status": "False", "reason": "B"}, "t3")
    assert conds[0]["lastTransitionTime"] == "t3"


def test_an_unchanged_condition_with_a_new_probe_time_is_not_a_change() -> None:
    conds = with_condition([], {"type": "Suspended", "status": "True", "reason": "JobSuspended",
                                      "lastProbeTime": "t1"}, "t1")
    again = with_condition(conds, {"type": "Suspended", "status": "True", "reason": "JobSuspended",
                                         "lastProbeTime": "t2"}, "t2")
    assert again == conds


def _rs(name: str, replicas: int, created: str, max_replicas: int, available: int = 0) -> Obj:
    return {"metadata": {"name": name, "creationTimestamp": created,
                         "annotations": {"deployment.kubernetes.io/max-replicas": str(max_replicas),
                                         "deployment.kubernetes.io/desired-replicas": "10"}},
            "spec": {"replicas": replicas}, "status": {"availableReplicas": available}}


def test_scaling_mid_rollout_is_spread_proportionally() -> None:
    from pumice.controllers.kube.deployment import is_scaling_event, proportional_sizes

    d = dep(20, surge=3, unavailable=2)
    old = _rs("old", 8, "2024-01-01T00:00:00Z", 13)
    new = _rs("new", 5, "2024-01-02T00:00:00Z", 13)
    assert is_scaling_event(d, [old, new])
    # allowed 23, current 13: +10 split 8*23/13 -> 14 (+6), 5*23/13 -> 9 (+4)
    assert proportional_sizes(d, new, [old]) == {"old": 14, "new": 9}


def test_scaling_with_one_active_replicaset_sets_it_directly() -> None:
    from pumice.controllers.kube.deployment import proportional_sizes

    d = dep(5)
    new = _rs("new", 3, "2024-01-02T00:00:00Z", 4)
    assert proportional_sizes(d, new, [_rs("old", 0, "2024-01-01T00:00:00Z", 4)]) == {"new": 5}
