"""``pumice explain`` analysis on object snapshots: each gate, with its numbers and remedy.
The verdicts come from running the scheduler's own session on the objects."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from pumice.cli.explain import command
from pumice.scheduler.volcano import default_conf, load_conf
from pumice.scheduler.volcano.explain import ExplainError, explain
from pumice.testing.volcano import node, pod, podgroup, queue

NS = "c1"
CONF = default_conf()
NO_OVERCOMMIT = load_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
""")


def gang(name: str, n: int, *, cpu: str = "1", q: str = "q1", phase: str = "Pending", min_member: int | None = None,
         **pod_kw: object) -> list[dict]:
    mm = n if min_member is None else min_member
    objs = [podgroup(name, namespace=NS, queue=q, min_member=mm, min_resources=f"{int(cpu) * mm},{mm}Gi",
                     phase=phase)]
    objs += [pod(f"{name}-{i}", namespace=NS, group=name, requests=f"{cpu},1Gi", **pod_kw) for i in range(n)]
    return objs


def test_closed_queue_is_named() -> None:
    objs = [node("n1"), queue("q1", state="Closed"), *gang("pg1", 2)]
    ex = explain(objs, "podgroup", "pg1", NS, CONF)
    assert ex.gate == "queue-closed"
    assert "queue q1 is Closed" in ex.reason and "OpenQueue" in ex.remedy


def test_missing_queue_is_named() -> None:
    objs = [node("n1"), *gang("pg1", 2, q="nope")]
    ex = explain(objs, "pg", "pg1", NS, CONF)
    assert ex.gate == "queue-missing" and ex.remedy == "create queue nope"


def test_queue_capability_refuses_enqueue_with_numbers() -> None:
    objs = [node("n1", "8,16Gi,pods=110"), queue("q1", capability="2,8Gi"), *gang("pg1", 3)]
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    assert ex.gate == "enqueue-quota", ex.render()
    assert "minResources cpu 3" in ex.reason and "capability cpu 2" in ex.reason
    assert "raise queue q1 capability.cpu to 3" in ex.remedy


def test_overcommit_refuses_enqueue_with_numbers() -> None:
    objs = [node("n1", "2,16Gi,pods=110"), queue("q1"), *gang("pg1", 3)]
    ex = explain(objs, "podgroup", "pg1", NS, CONF)
    assert ex.gate == "enqueue-overcommit", ex.render()
    assert "idle cpu 2400m" in ex.reason
    assert "gang short by 1 member:" in ex.reason
    # the 2-cpu Node can never hold 3 Pods of 1 cpu: freeing room is not offered (issue 14 item 14)
    assert "can never fit" in ex.reason and "frees" not in ex.remedy
    assert ex.remedy.startswith("Nodes with room for 1 more such Pods")


def test_overcommit_offers_freeing_room_when_the_gang_fits_an_empty_cluster() -> None:
    running = [pod(f"r{i}", namespace=NS, group="pg0", requests="1,1Gi", node="n1", phase="Running")
               for i in range(2)]
    objs = [node("n1", "4,16Gi,pods=110"), queue("q1"),
            podgroup("pg0", namespace=NS, queue="q1", min_member=2, phase="Running"), *running, *gang("pg1", 3)]
    ex = explain(objs, "podgroup", "pg1", NS, CONF)
    assert ex.gate == "enqueue-overcommit", ex.render()
    assert "frees" in ex.remedy and "can never fit" not in ex.reason


def test_gang_short_of_room_on_the_nodes() -> None:
    running = pod("r0", namespace=NS, group="pg0", requests="1,1Gi", node="n1", phase="Running")
    objs = [node("n1", "2,16Gi,pods=110"), node("n2", "2,16Gi,pods=110"), queue("q1"),
            podgroup("pg0", namespace=NS, queue="q1", min_member=1, phase="Running"), running,
            *gang("pg1", 4, phase="Inqueue")]
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    assert ex.gate in ("gang", "predicates"), ex.render()
    assert "gang short by" in ex.reason
    assert any("Insufficient cpu" in d for d in ex.details), ex.render()
    assert "on any Node" in ex.remedy


def test_predicate_that_fails_everywhere_is_reported_with_node_counts() -> None:
    objs = [node("n1"), node("n2"), queue("q1"),
            *gang("pg1", 1, phase="Inqueue", node_selector={"gpu": "a100"})]
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    assert ex.gate in ("predicates", "gang"), ex.render()
    assert any("0/2 nodes are unavailable" in d for d in ex.details), ex.render()


def test_a_node_selector_no_node_matches_names_the_label_not_freeing_cpu() -> None:
    # trial 11 F-10: freeing cpu cannot help a Pod whose nodeSelector matches no Node
    objs = [node("n1", "8,16Gi,pods=110"), node("n2", "8,16Gi,pods=110"), queue("q1"),
            *gang("pg1", 1, phase="Inqueue", node_selector={"nosuch": "label"})]
    ex = explain(objs, "podgroup", "pg1", NS, CONF)
    assert ex.gate == "predicates", ex.render()
    assert ex.remedy == "a Node labelled nosuch=label, or change the nodeSelector", ex.render()
    assert "freeing resources cannot help" in ex.reason and "frees" not in ex.remedy


def test_an_untolerated_taint_on_every_node_names_the_taint() -> None:
    taint = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
    objs = [node("n1", "8,16Gi,pods=110", taints=[taint]), queue("q1"), *gang("pg1", 1, phase="Inqueue")]
    ex = explain(objs, "podgroup", "pg1", NS, CONF)
    assert ex.gate == "predicates", ex.render()
    assert ex.remedy.startswith("a toleration on the Pod for the taint"), ex.render()
    assert "{dedicated: infra}" in ex.remedy


def test_a_selector_some_node_matches_still_gets_the_room_advice() -> None:
    running = [pod(f"r{i}", namespace=NS, group="pg0", requests="1,1Gi", node="n1", phase="Running") for i in range(2)]
    objs = [node("n1", "2,16Gi,pods=110", labels={"gpu": "a100"}), node("n2", "8,16Gi,pods=110"), queue("q1"),
            podgroup("pg0", namespace=NS, queue="q1", min_member=2, phase="Running"), *running,
            *gang("pg1", 1, phase="Inqueue", node_selector={"gpu": "a100"})]
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    assert ex.remedy.startswith("frees 1 cpu on any Node"), ex.render()


def test_a_podgroup_with_fewer_pods_than_min_member_needs_pods_not_room() -> None:
    # trial 11 F-10 (gang case): 1 Pod, minMember 5, minResources cpu 100 in a 24-cpu cluster
    objs = [node(f"n{i}", "8,16Gi,pods=110") for i in range(3)]
    objs += [queue("q1"), podgroup("pg1", namespace=NS, queue="q1", min_member=5, min_resources={"cpu": "100"},
                                   phase="Pending"),
             pod("pg1-0", namespace=NS, group="pg1", requests="1,1Gi")]
    ex = explain(objs, "podgroup", "pg1", NS, CONF)
    assert ex.remedy == ("4 more Pods in the group (or a smaller minMember), and a minResources the cluster "
                         "can hold"), ex.render()
    assert "the PodGroup has 1 Pod but minMember 5, and minResources cpu 100 > cluster cpu 24 x 1.2" in ex.reason


def test_a_placeable_gang_is_waiting_for_binding() -> None:
    objs = [node("n1", "4,16Gi,pods=110"), queue("q1"), *gang("pg1", 2, phase="Inqueue")]
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    assert ex.gate == "binding", ex.render()
    assert "c1/pg1-0 -> n1" in ex.reason


def test_a_running_gang_is_not_held() -> None:
    objs = [node("n1", "4,16Gi,pods=110"), queue("q1"), *gang("pg1", 2, phase="Running")]
    for o in objs:
        if o["kind"] == "Pod":
            o["spec"]["nodeName"] = "n1"
            o["status"]["phase"] = "Running"
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    assert ex.gate == "running", ex.render()


def test_a_bound_pod_waits_for_its_node() -> None:
    p = pod("p1", namespace=NS, group="pg1", requests="1,1Gi", node="n1")
    ex = explain([node("n1"), queue("q1"), p], "pod", "p1", NS, CONF)
    assert ex.gate == "node-start" and "bound to Node n1" in ex.reason


def test_a_volcano_pod_without_group_says_so() -> None:
    p = pod("p1", namespace=NS, requests="1,1Gi")
    ex = explain([node("n1"), queue("default"), p], "pod", "p1", NS, CONF)
    assert ex.gate == "no-podgroup" and "scheduling.k8s.io/group-name" in ex.reason


def test_a_volcano_pod_in_a_queue_that_does_not_exist_names_the_queue() -> None:
    p = pod("p1", namespace=NS, requests="1,1Gi", annotations={"scheduling.volcano.sh/queue-name": "q2"})
    ex = explain([node("n1"), queue("default"), p], "pod", "p1", NS, CONF)
    assert ex.gate == "no-podgroup", ex.render()
    assert ex.reason.startswith("queue q2 does not exist"), ex.render()
    assert ex.queue == "q2" and ex.remedy.startswith("create queue q2"), ex.render()
    assert "check that it runs" not in ex.render()


def test_a_default_scheduler_pod_gets_that_scheduler_s_reason() -> None:
    p = pod("p1", namespace=NS, requests="64,1Gi", scheduler_name="default-scheduler")
    p["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                  "message": "0/1 nodes are available: 1 Insufficient cpu."}]
    ex = explain([node("n1"), p], "pod", "p1", NS, CONF)
    assert ex.gate == "other-scheduler", ex.render()
    assert ex.reason == ("scheduler default-scheduler has not placed it: Unschedulable: "
                         "0/1 nodes are available: 1 Insufficient cpu.")
    assert "no PodGroup" not in ex.render()
    p["status"]["conditions"] = []
    assert "waiting for scheduler default-scheduler" in explain([node("n1"), p], "pod", "p1", NS, CONF).reason


def test_vcjob_whose_podgroup_is_inqueue_waits_for_its_pods() -> None:
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": "j1", "namespace": NS, "uid": "u1"},
           "spec": {"minAvailable": 2, "queue": "q1"}, "status": {"state": {"phase": "Pending"}}}
    pg = podgroup("j1-u1", namespace=NS, queue="q1", min_member=2, min_resources="2,2Gi", phase="Inqueue")
    ex = explain([node("n1"), queue("q1"), job, pg], "vcjob", "j1", NS, NO_OVERCOMMIT)
    assert ex.gate == "no-pods", ex.render()


def test_a_vcjob_held_by_its_queue_capability_gets_its_queue_position() -> None:
    # a Volcano Job creates its Pods only once its PodGroup is enqueued: a job refused at enqueue
    # has no Pods yet and still waits in its queue (trial 6, F-10)
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": "j1", "namespace": NS, "uid": "u1"},
           "spec": {"minAvailable": 3, "queue": "q1"}, "status": {"state": {"phase": "Pending"}}}
    pg = podgroup("j1-u1", namespace=NS, queue="q1", min_member=3, min_resources="3,3Gi", phase="Pending")
    objs = [node("n1", "8,16Gi,pods=110"), queue("q1", capability="2,8Gi"), job, pg]
    ex = explain(objs, "vcjob", "j1", NS, NO_OVERCOMMIT)
    assert ex.gate == "enqueue-quota", ex.render()
    assert "queue position: 1 of 1 waiting jobs in queue q1 (the session's job order)" in ex.details, ex.render()
    # a second one behind it (created later) is second
    job2 = {**job, "metadata": {"name": "j2", "namespace": NS, "uid": "u2", "creationTimestamp": "2030-01-01T00:00:00Z"}}
    pg2 = podgroup("j2-u2", namespace=NS, queue="q1", min_member=3, min_resources="3,3Gi",
                   phase="Pending", created="2030-01-01T00:00:00Z")
    ex2 = explain([*objs, job2, pg2], "vcjob", "j2", NS, NO_OVERCOMMIT)
    assert "queue position: 2 of 2 waiting jobs in queue q1 (the session's job order)" in ex2.details, ex2.render()


def test_unknown_kind_and_missing_object_are_clear_errors() -> None:
    with pytest.raises(ExplainError, match="cannot explain kind 'deployment'"):
        explain([], "deployment", "x", NS, CONF)
    with pytest.raises(ExplainError, match=r'jobs\.batch\.volcano\.sh "x" not found'):
        explain([], "vcjob", "x", NS, CONF)


def test_cli_reports_a_malformed_target_in_one_line_before_reading_the_kubeconfig(tmp_path: object) -> None:
    res = CliRunner().invoke(command, ["podgroup-without-name", "--kubeconfig", "/nonexistent/kubeconfig"])
    assert res.exit_code == 1
    assert res.output.strip() == "Error: target must be <kind>/<name>, got 'podgroup-without-name'"


CAPACITY = load_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity}, {name: nodeorder}]
""")


def test_queue_at_capability_holds_an_admitted_gang() -> None:
    running = [pod(f"r{i}", namespace=NS, group="pg0", requests="1,1Gi", node="n1", phase="Running")
               for i in range(2)]
    objs = [node("n1", "8,32Gi,pods=110"), queue("q1", capability="3,16Gi", deserved="3,16Gi"),
            podgroup("pg0", namespace=NS, queue="q1", min_member=2, phase="Running"), *running,
            *gang("pg1", 2, phase="Inqueue")]
    ex = explain(objs, "podgroup", "pg1", NS, CAPACITY)
    assert ex.gate in ("queue-allocatable", "queue-overused"), ex.render()
    assert "capability" in ex.reason and "cpu 3" in ex.reason, ex.render()
    assert "raise queue q1 capability.cpu to" in ex.remedy, ex.render()


def test_queue_over_its_deserved_share_is_named() -> None:
    busy = [pod(f"r{i}", namespace=NS, group="pg0", requests="1,1Gi", node="n1", phase="Running")
            for i in range(3)]
    objs = [node("n1", "4,16Gi,pods=110"), queue("q1"), queue("q2"),
            podgroup("pg0", namespace=NS, queue="q1", min_member=1, phase="Running"), *busy,
            podgroup("pg2", namespace=NS, queue="q2", min_member=1, min_resources="1,1Gi", phase="Inqueue"),
            pod("other", namespace=NS, group="pg2", requests="3,1Gi"),
            *gang("pg1", 1, phase="Inqueue")]
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    assert ex.gate in ("queue-overused", "queue-allocatable"), ex.render()
    assert "queue q1" in ex.reason, ex.render()


def test_a_finished_vcjob_is_not_held() -> None:
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": "j1", "namespace": NS, "uid": "u1"},
           "spec": {"minAvailable": 2, "queue": "q1"}, "status": {"state": {"phase": "Completed"}}}
    ex = explain([node("n1"), queue("q1"), job], "vcjob", "j1", NS, CONF)
    assert ex.gate == "finished" and "Completed" in ex.reason and ex.remedy == ""


def test_a_gang_larger_than_the_empty_cluster_is_said_never_to_fit() -> None:
    # 3 cpu in all, 4 members of 1 cpu: waiting for running Pods to finish cannot help.
    objs = [node("n1", "2,16Gi,pods=110"), node("n2", "1,16Gi,pods=110"), queue("q1"),
            *gang("pg1", 4, phase="Inqueue")]
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    assert "can never fit" in ex.reason, ex.render()
    assert "hold 3 of the gang's Pods (4 Pods of cpu 1, memory 1Gi)" in ex.reason, ex.render()
    assert "room for 1 more such Pods" in ex.remedy, ex.render()


def test_a_pod_larger_than_every_node_is_named_with_the_largest_allocatable() -> None:
    """trial 19 F-6: a head Pod of cpu 20 on 8-cpu Nodes. The verdict says that Pod exceeds every
    Node (as the scheduler's ``Insufficient cpu`` does), and offers no smaller minMember, which
    cannot place that Pod."""
    objs = [node("n1", "8,32Gi,pods=110"), node("n2", "8,32Gi,pods=110"), queue("q1"),
            podgroup("pg1", namespace=NS, queue="q1", min_member=2, min_resources="21,2Gi", phase="Inqueue"),
            pod("pg1-head", namespace=NS, group="pg1", requests="20,1Gi"),
            pod("pg1-worker", namespace=NS, group="pg1", requests="1,1Gi")]
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    assert ("it can never fit as the cluster is: 1 Pod of cpu 20, memory 1Gi requests more than any of the "
            "2 Nodes can hold (Insufficient cpu: the largest allocatable is cpu 8)") in ex.reason, ex.render()
    assert ex.remedy == "a Node with allocatable cpu 20 or more, or a smaller request of that Pod", ex.render()


def test_a_gang_that_fits_an_empty_cluster_is_not_said_never_to_fit() -> None:
    objs = [node("n1", "4,16Gi,pods=110"), queue("q1"), *gang("pg1", 2, phase="Inqueue")]
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    assert "can never fit" not in ex.reason, ex.render()


def test_a_queue_limit_is_not_the_advice_when_the_gang_can_never_fit() -> None:
    # 2 cpu Node, 2 running + a 3-member gang of 1 cpu: raising the queue's capability cannot help.
    running = [pod(f"r{i}", namespace=NS, group="pg0", requests="1,1Gi", node="n1", phase="Running")
               for i in range(2)]
    objs = [node("n1", "2,32Gi,pods=110"), queue("q1", capability="2,16Gi", deserved="2,16Gi"),
            podgroup("pg0", namespace=NS, queue="q1", min_member=2, phase="Running"), *running,
            *gang("pg1", 3, phase="Inqueue")]
    ex = explain(objs, "podgroup", "pg1", NS, CAPACITY)
    if ex.gate == "queue-allocatable":
        assert "can never fit" in ex.reason, ex.render()
        assert "raise queue" not in ex.remedy, ex.render()
    assert "can never fit" in ex.reason, ex.render()


def test_a_raycluster_is_explained_through_its_podgroup() -> None:
    rc = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc1", "namespace": NS, "uid": "u"},
          "spec": {}, "status": {"state": "ready"}}
    objs = [node("n1", "4,16Gi,pods=110"), queue("q1"), rc, *gang("ray-rc1-pg", 2, phase="Inqueue")]
    ex = explain(objs, "raycluster", "rc1", NS, NO_OVERCOMMIT)
    assert ex.target.startswith("RayCluster c1/rc1") and ex.podgroup == "c1/ray-rc1-pg", ex.render()
    assert ex.gate == "binding", ex.render()
    with pytest.raises(ExplainError, match=r"rayclusters\.ray\.io"):
        explain(objs, "raycluster", "nope", NS, CONF)


def test_a_mixed_size_gang_reports_each_size() -> None:
    # a Ray-like gang: one 1-cpu head and two 3-cpu workers; a 4-cpu and a 2-cpu Node hold the head
    # and one worker only
    objs = [node("n1", "4,16Gi,pods=110"), node("n2", "2,16Gi,pods=110"), queue("q1"),
            podgroup("pg1", namespace=NS, queue="q1", min_member=3, min_resources="7,3Gi", phase="Inqueue"),
            pod("pg1-head", namespace=NS, group="pg1", requests="1,1Gi"),
            *(pod(f"pg1-w{i}", namespace=NS, group="pg1", requests="3,1Gi") for i in range(2))]
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    assert "2 Pods of cpu 3, memory 1Gi and 1 Pod of cpu 1, memory 1Gi" in ex.render(), ex.render()
    assert "can never fit" in ex.reason and "frees" not in ex.remedy, ex.render()


COHORT = load_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}, {name: cohort}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
""")


def cohort_queue(name: str, nominal: str) -> dict:
    q = queue(name, deserved={"cpu": nominal, "memory": "8Gi"})
    q["metadata"]["annotations"]["scheduling.pumice.io/cohort"] = "c"
    return q


def test_a_gang_held_by_its_cohorts_quota_is_held_by_cohort_not_predicates() -> None:
    """Trial 3 finding 3: qa borrowed 2 of qb's 4 cpu; qb's gang of 4 x 1 cpu fits the Nodes (10
    cpu free) but not the 2 cpu the cohort leaves qb. explain said "held by: predicates"."""
    running = [pod(f"a-{i}", namespace=NS, group="a", requests="1,1Gi", node=f"n{i % 4}", phase="Running")
               for i in range(6)]
    objs = [*(node(f"n{i}", "4,16Gi,pods=110") for i in range(4)), cohort_queue("qa", "4"), cohort_queue("qb", "4"),
            podgroup("a", namespace=NS, queue="qa", min_member=6, phase="Running"), *running,
            *gang("b", 4, q="qb", phase="Inqueue")]
    ex = explain(objs, "podgroup", "b", NS, COHORT)
    assert ex.gate == "cohort", ex.render()
    assert ex.reason == ("cohort c quota: queue qb uses cpu 0, and the gang's request cpu 4 would take it past the "
                         "cpu 2 it may use now (nominal cpu 4; used above their nominal quota by the other members: "
                         "qa cpu 2)"), ex.render()
    assert "reclaim-within-cohort" in ex.remedy
    assert "held by: cohort" in ex.render()


def test_the_queue_allocatable_sentence_adds_up() -> None:
    """Trial 3 finding 3: "allocated cpu 4 + the gang's request cpu 1 > deserved cpu 6" was printed
    (for a gang the cohort held); the sentence's sum is now over the limit it names."""
    running = [pod(f"r{i}", namespace=NS, group="pg0", requests="1,1Gi", node="n1", phase="Running")
               for i in range(2)]
    objs = [node("n1", "8,32Gi,pods=110"), queue("q1", capability="3,16Gi", deserved="3,16Gi"),
            podgroup("pg0", namespace=NS, queue="q1", min_member=2, phase="Running"), *running,
            *gang("pg1", 2, phase="Inqueue")]
    ex = explain(objs, "podgroup", "pg1", NS, CAPACITY)
    assert ex.gate == "queue-allocatable", ex.render()
    assert ex.reason.startswith("queue q1 is at its capability: allocated cpu 2 + the gang's request cpu 2 > "
                                "capability cpu 3"), ex.render()


WAIT_READY = load_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance},
            {name: wait-for-pods-ready, arguments: {waitForPodsReady.timeout: 20,
             waitForPodsReady.backoffBaseSeconds: 10, waitForPodsReady.backoffLimitCount: 2}}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
""")


def test_a_job_deactivated_by_wait_for_pods_ready_says_so_and_how_to_reactivate() -> None:
    """Trial 4 N3: it said "enqueue refused (a plugin voted against it; no plugin left a message)"."""
    objs = [node("n1", "8,32Gi,pods=110"), queue("q1"), *gang("w1", 2)]
    objs[2]["metadata"].setdefault("annotations", {}).update(
        {"scheduling.pumice.io/deactivated": "true", "scheduling.pumice.io/requeue-count": "2"})
    ex = explain(objs, "podgroup", "w1", NS, WAIT_READY)
    assert ex.gate == "wait-for-pods-ready", ex.render()
    assert ex.reason.startswith("deactivated after 2 requeues (PodsReady timeout 20 s, "
                                "waitForPodsReady.backoffLimitCount 2)"), ex.render()
    assert ex.remedy == ("remove the annotation scheduling.pumice.io/deactivated from PodGroup c1/w1 (kubectl annotate "
                         "podgroup -n c1 w1 scheduling.pumice.io/deactivated-) to reactivate it"), ex.render()
    assert "no plugin left a message" not in ex.render()


def test_a_job_in_its_pods_ready_backoff_says_until_when() -> None:
    objs = [node("n1", "8,32Gi,pods=110"), queue("q1"), *gang("w1", 2)]
    objs[2]["metadata"].setdefault("annotations", {}).update(
        {"scheduling.pumice.io/requeue-count": "1", "scheduling.pumice.io/requeue-at": "2030-01-01T00:00:10Z"})
    ex = explain(objs, "podgroup", "w1", NS, WAIT_READY, now=1893456000.0)  # 2030-01-01T00:00:00Z
    assert ex.gate == "wait-for-pods-ready", ex.render()
    assert ex.reason == ("requeued after 1 PodsReady timeout (its Pods were not all Ready in time); backoff until "
                         "2030-01-01T00:00:10Z"), ex.render()
    assert ex.remedy == "nothing: it is enqueued again when the backoff ends (2030-01-01T00:00:10Z)", ex.render()


USER_LIMITS = load_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance},
            {name: user-limits, arguments: {userLimits.limits: [{users: ["*"], queue: q1, maxApplications: 1}]}}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
""")


def test_a_job_over_its_users_application_limit_says_when_it_would_run() -> None:
    """Trial 4 N3: "would run if: see the refusal above"."""
    bob = {"yunikorn.apache.org/user.info": '{"user": "bob"}'}
    running = pod("v1-0", namespace=NS, group="v1", requests="1,1Gi", node="n1", phase="Running")
    objs = [node("n1", "8,32Gi,pods=110"), queue("q1"),
            podgroup("v1", namespace=NS, queue="q1", min_member=1, phase="Running", annotations=bob), running,
            podgroup("v2", namespace=NS, queue="q1", min_member=1, phase="Pending", min_resources="1,1Gi",
                     annotations=bob),
            pod("v2-0", namespace=NS, group="v2", requests="1,1Gi")]
    ex = explain(objs, "podgroup", "v2", NS, USER_LIMITS)
    assert ex.gate == "enqueue-refused", ex.render()
    assert ex.reason == "enqueue refused: user bob has 1 of at most 1 applications in queue q1", ex.render()
    assert ex.remedy == ("one of user bob's admitted jobs in queue q1 finishes or is deleted (or the user-limits "
                         "maxApplications for bob in queue q1 is raised above 1)"), ex.render()


def test_a_hand_made_podgroup_whose_pods_are_gone_says_nothing_recreates_them() -> None:
    """Trial 5 F-16 (b): a PodGroup made by hand whose bare Pod was evicted (deleted) was
    explained as "the controller creates the Pods on its next pass"; there is no controller."""
    pg = podgroup("crash", namespace=NS, queue="q1", min_member=1, min_resources="1,1Gi", phase="Inqueue")
    ex = explain([node("n1"), queue("q1"), pg], "podgroup", "crash", NS, NO_OVERCOMMIT)
    assert ex.gate == "no-pods", ex.render()
    assert ex.reason == ("the PodGroup is Inqueue but has no Pods, and no controller owns it (no ownerReference with "
                         "controller: true): nothing creates Pods for it; bare Pods that were deleted or evicted are "
                         "not recreated"), ex.render()
    assert ex.remedy == ("create its Pods again (annotation scheduling.k8s.io/group-name: crash), or delete the "
                         "PodGroup"), ex.render()
    # owned by a controller, asked for by the PodGroup's name: that controller makes the Pods
    pg["metadata"]["ownerReferences"] = [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j1",
                                          "uid": "u1", "controller": True}]
    ex = explain([node("n1"), queue("q1"), pg], "podgroup", "crash", NS, NO_OVERCOMMIT)
    assert ex.gate == "no-pods", ex.render()
    assert ex.reason == ("the PodGroup is Inqueue (admitted to the queue) but has no Pods yet; its controller (Job j1) "
                         "creates them once the PodGroup leaves Pending"), ex.render()
    assert ex.remedy == "nothing: the controller creates the Pods on its next pass"


def test_a_hand_made_podgroup_without_pods_refused_at_enqueue_names_no_imaginary_pod() -> None:
    """Trial 12 F-6 k: ``explain podgroup/pgbig`` (no Pods, minResources cpu 1000, memory 1Ti)
    described "1 Pod of cpu 1000, memory 1024Gi" to place; the group has no Pods and nothing
    makes them, and the gate is overcommit's minResources against idle."""
    nodes = [node(f"n{i}", "8,32Gi,pods=110") for i in range(3)]
    pg = podgroup("pgbig", namespace=NS, queue="q1", min_member=1, min_resources="1000,1Ti", phase="Pending")
    ex = explain([*nodes, queue("q1"), pg], "podgroup", "pgbig", NS, CONF)
    assert ex.gate == "enqueue-overcommit", ex.render()
    assert ex.reason == (
        "enqueue refused by overcommit: inqueue cpu 0, memory 0 + minResources cpu 1k, memory 1Ti = cpu 1k, "
        "memory 1Ti > idle cpu 28800m, memory 123695058125 (cluster cpu 24, memory 96Gi x 1.2 - used); the PodGroup "
        "has no Pods, and no controller owns it (no ownerReference with controller: true): nothing creates Pods for "
        "it; it can never be enqueued as the cluster is: minResources cpu 1k, memory 1Ti > cluster cpu 24, "
        "memory 96Gi x 1.2"), ex.render()
    assert ex.remedy == ("a smaller minResources (the cluster cannot hold it: freeing room does not help); and its "
                         "Pods are created (annotation scheduling.k8s.io/group-name: pgbig)"), ex.render()
    # one the cluster could admit once room is freed: overcommit's remedy, and the Pods
    busy = [pod(f"r{i}", namespace=NS, group="pg0", requests="8,1Gi", node=f"n{i}", phase="Running")
            for i in range(3)]
    small = podgroup("pgsmall", namespace=NS, queue="q1", min_member=2, min_resources="6,2Gi", phase="Pending")
    ex = explain([*nodes, queue("q1"), podgroup("pg0", namespace=NS, queue="q1", min_member=3, phase="Running"),
                  *busy, small], "podgroup", "pgsmall", NS, CONF)
    assert ex.gate == "enqueue-overcommit", ex.render()
    assert "Pod of" not in ex.reason and "gang short" not in ex.reason, ex.render()
    assert ex.remedy == ("frees 1200m cpu in the cluster; and its Pods are created "
                         "(annotation scheduling.k8s.io/group-name: pgsmall)"), ex.render()


def test_a_controllers_podgroup_without_pods_yet_says_who_creates_them() -> None:
    """A Volcano Job creates its Pods once its PodGroup is enqueued: the gang view uses
    minResources / minMember for them, and says so; amounts are Kubernetes quantities."""
    pg = podgroup("j1-u1", namespace=NS, queue="q1", min_member=3, min_resources="30,5Gi", phase="Pending")
    pg["metadata"]["ownerReferences"] = [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j1",
                                          "uid": "u1", "controller": True}]
    ex = explain([node("n1", "8,32Gi,pods=110"), queue("q1"), pg], "podgroup", "j1-u1", NS, CONF)
    assert ex.gate == "enqueue-overcommit", ex.render()
    assert ("; the PodGroup has no Pods yet: its controller (Job j1) creates them once the PodGroup is enqueued "
            "(their sizes below: minResources / minMember each); gang short by 3 members: minMember 3, 3 Pods of "
            "cpu 10, memory 1789569707 to place") in ex.reason, ex.render()
    assert not re.search(r"\d\.\d+[KMGT]i\b", ex.render()), ex.render()


def _rayjob(name: str, status: dict) -> dict:
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name, "namespace": NS},
            "spec": {"entrypoint": "python x.py", "suspend": True}, "status": status}


def test_a_validation_failed_rayjob_is_held_by_its_spec_with_the_operators_message() -> None:
    """trial-7 F-16: explain blamed a missing PodGroup; the RayJob will never run as it is."""
    msg = ("The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not allowed "
           "to be suspended")
    rj = _rayjob("rjmb", {"jobDeploymentStatus": "ValidationFailed", "reason": "ValidationFailed", "message": msg})
    ex = explain([node("n1"), queue("q1"), rj], "rayjob", "rjmb", NS, CONF)
    assert ex.gate == "validation", ex.render()
    assert msg in ex.reason and "re-create the RayJob" in ex.remedy
    # suspended later: its cluster and PodGroup still exist, the RayJob's state still wins
    rj2 = _rayjob("rjsus", {"jobDeploymentStatus": "ValidationFailed", "reason": "ValidationFailed", "message": msg,
                            "rayClusterName": "rjsus-abcde"})
    objs = [node("n1"), queue("q1"), rj2, *gang("ray-rjsus-pg", 1, phase="Running")]
    assert explain(objs, "rayjob", "rjsus", NS, CONF).gate == "validation"


def test_a_queue_whose_deserved_share_is_the_whole_cluster_is_not_blamed() -> None:
    """trial-8 F-18: one 2-cpu Node, the only queue's deserved share is the whole cluster (capped
    there by proportion); 1.5 cpu run, a 1-cpu Pod waits. The Node is the gate: no deserved.cpu can
    be raised past the cluster."""
    running = pod("head", namespace=NS, group="pg0", requests="1500m,1Gi", node="n1", phase="Running")
    objs = [node("n1", "2,16Gi,pods=110"), queue("q1"),
            podgroup("pg0", namespace=NS, queue="q1", min_member=1, phase="Running"), running,
            *gang("pg1", 1, phase="Inqueue")]
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    assert ex.gate != "queue-allocatable", ex.render()
    assert "deserved" not in ex.remedy, ex.render()
    assert any("Insufficient cpu" in d for d in ex.details), ex.render()


HIER_CAPACITY = load_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
""")


def test_a_gang_held_by_a_parent_queues_capability_names_the_parent() -> None:
    """trial-13 F-4: eng-b fills eng's capability (16 cpu); eng-a's gang of 5 x 2 cpu fits eng-a's
    own capability (10) but not eng's (16 + 10 > 16). explain blamed eng-a ("allocated cpu 0 + ...
    reaches capability cpu 10") and advised free room in the empty eng-a."""
    running = [pod(f"jb-{i}", namespace=NS, group="jb", requests="2,1Gi", node=f"n{i % 3}", phase="Running")
               for i in range(8)]
    objs = [*(node(f"n{i}", "8,32Gi,pods=110") for i in range(3)),
            queue("root"), queue("eng", parent="root", deserved="12,96Gi", capability="16,96Gi"),
            queue("eng-a", parent="eng", deserved="6,48Gi", capability="10,48Gi"),
            queue("eng-b", parent="eng", deserved="6,48Gi", capability="16,96Gi"),
            podgroup("jb", namespace=NS, queue="eng-b", min_member=1, phase="Running"), *running,
            *gang("ja", 5, cpu="2", q="eng-a", phase="Inqueue")]
    ex = explain(objs, "podgroup", "ja", NS, HIER_CAPACITY)
    assert ex.gate == "queue-allocatable", ex.render()
    assert ex.reason == ("queue eng (parent of eng-a) is at its capability: allocated cpu 16 + the gang's request "
                         "cpu 10 > capability cpu 16"), ex.render()
    assert ex.remedy == "raise queue eng capability.cpu to 26, or free room in queue eng (eng-b holds cpu 16)", ex.render()


def test_a_met_gang_with_pods_beyond_min_member_blames_the_pod_count_not_the_gang() -> None:
    """Trial 14 F-2: 330 of minMember 50 placed, the rest held by the Nodes' pod count, read "gang
    short by 1 member" and "frees 10m cpu on any Node"."""
    running = [pod(f"pg1-{i}", namespace=NS, group="pg1", requests="10m,1Mi", node=f"n{i % 2}", phase="Running")
               for i in range(4)]
    waiting = [pod(f"pg1-{i}", namespace=NS, group="pg1", requests="10m,1Mi") for i in range(4, 7)]
    objs = [node("n0", "2,4Gi,pods=2"), node("n1", "2,4Gi,pods=2"), queue("q1"),
            podgroup("pg1", namespace=NS, queue="q1", min_member=2, min_resources="20m,2Mi", phase="Running"),
            *running, *waiting]
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    assert ex.gate == "predicates", ex.render()
    assert ex.reason.startswith("gang met: 4 placed of minMember 2; 3 more Pods fit on none of the 2 Nodes"), \
        ex.render()
    assert "gang short" not in ex.reason
    assert any("Insufficient pods" in d for d in ex.details), ex.render()
    assert ex.remedy.startswith("frees 1 pods on any Node, for each of 3 more Pods"), ex.render()


def test_sizes_are_canonical_quantities_and_name_only_what_each_pod_requests() -> None:
    # trial 15: the TPU sample's explanation printed `ephemeral-storage 10737418240`, `memory
    # 39062500Ki` and `google.com/tpu 0` for the head Pod, which requests no TPU
    objs = [node("n1", {"cpu": "8", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"}), queue("q1"),
            podgroup("pg1", namespace=NS, queue="q1", min_member=3, min_resources="9,120G", phase="Inqueue"),
            pod("pg1-head", namespace=NS, group="pg1", requests={"cpu": "1", "memory": "40G",
                                                                 "ephemeral-storage": "10Gi"}),
            *(pod(f"pg1-w{i}", namespace=NS, group="pg1", requests={"cpu": "4", "memory": "40G",
                                                                    "google.com/tpu": "4"}) for i in range(2))]
    ex = explain(objs, "podgroup", "pg1", NS, NO_OVERCOMMIT)
    text = ex.render()
    # the workers fit on no Node: the verdict names them alone (trial 19 F-6)
    assert "2 Pods of cpu 4, google.com/tpu 4, memory 40G requests more than any of the 1 Nodes can hold " \
           "(Insufficient google.com/tpu: no Node has google.com/tpu)" in text, text
    assert "tpu 0" not in text and "39062500Ki" not in text and "10737418240" not in text, text
