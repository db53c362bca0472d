"""What the pages compute from wire objects (pure functions of pumice.dashboard.views)."""

from __future__ import annotations

from pumice.dashboard import views as v


def pg(name: str, *, phase: str = "Pending", min_member: int = 2, running: int = 0, succeeded: int = 0,
       queue: str = "q", created: str = "2026-01-01T00:00:00Z", priority_class: str = "", uid: str = "") -> dict:
    spec = {"minMember": min_member, "queue": queue}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"metadata": {"name": name, "namespace": "default", "uid": uid or name, "creationTimestamp": created},
            "spec": spec, "status": {"phase": phase, "running": running, "succeeded": succeeded}}


def test_gang_progress_counts_running_and_succeeded_against_min_member() -> None:
    assert v.gang(pg("a", running=1, succeeded=0, min_member=4)) == (1, 4, 25, "Gang incomplete (1/4 ready)")
    assert v.gang(pg("b", running=2, succeeded=1, min_member=3)) == (3, 3, 100, "Gang requirement met")
    assert v.gang(pg("c", running=5, min_member=3))[2] == 100
    assert v.gang(pg("d", min_member=0))[3] == "-"


def test_queue_order_is_priority_then_age_and_skips_running_groups() -> None:
    pcs = {"high": 1000}
    groups = [pg("old", created="2026-01-01T00:00:00Z"), pg("new", created="2026-01-02T00:00:00Z"),
              pg("urgent", created="2026-01-03T00:00:00Z", priority_class="high"),
              pg("running", phase="Running"), pg("inq", phase="Inqueue", created="2026-01-01T12:00:00Z")]
    assert [g["metadata"]["name"] for g in v.queue_order(groups, pcs)] == ["urgent", "old", "inq", "new"]


def test_scheduling_issues_take_headlamps_rows_and_waiting_rayjobs() -> None:
    job = {"metadata": {"name": "j", "namespace": "default"}, "spec": {"queue": "q"},
           "status": {"state": {"phase": "Pending", "reason": "Unschedulable", "message": "x"}}}
    done = {"metadata": {"name": "ok", "namespace": "default"}, "status": {"state": {"phase": "Completed"}}}
    group = pg("g")
    group["status"]["conditions"] = [
        {"type": "Scheduled", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "old"},
        {"type": "Unschedulable", "lastTransitionTime": "2026-01-01T00:01:00Z", "reason": "NotEnoughResources",
         "message": "2/2 tasks in gang unschedulable"}]
    closed = {"metadata": {"name": "c"}, "status": {"state": "Closed"}}
    rayjob = {"metadata": {"name": "r", "namespace": "default"}, "status": {"jobDeploymentStatus": "Initializing"}}
    rows = v.scheduling_issues([job, done], [group, pg("run", phase="Running")], [closed], [rayjob])
    got = {(r.type, r.name): (r.status, r.details) for r in rows}
    assert got == {
        ("Job", "j"): ("Pending", "Unschedulable: x"),
        ("PodGroup", "g"): ("Pending", "NotEnoughResources: 2/2 tasks in gang unschedulable"),
        ("Queue", "c"): ("Closed", "Queue is closed"),
        ("RayJob", "r"): ("Initializing", ""),
    }


def test_a_vcjob_that_used_up_max_retry_says_so_in_the_scheduling_issues() -> None:
    """trial 19 F-8: the last state reason of such a job is the RestartJob action's, which reads as
    if it were restarting; a job Failed without restarts keeps its reason."""
    restarted = {"metadata": {"name": "j3-fail", "namespace": "default"}, "spec": {"queue": "q", "maxRetry": 2},
                 "status": {"retryCount": 2, "state": {"phase": "Failed", "reason": "ExecuteAction",
                                                       "message": "Start to execute action RestartJob"}}}
    defaulted = {"metadata": {"name": "d", "namespace": "default"}, "spec": {"queue": "q"},
                 "status": {"retryCount": 3, "state": {"phase": "Failed"}}}
    never = {"metadata": {"name": "n", "namespace": "default"}, "spec": {"queue": "q", "maxRetry": 0},
             "status": {"state": {"phase": "Failed", "reason": "PodFailed"}}}
    got = {r.name: r.details for r in v.scheduling_issues([restarted, defaulted, never], [], [])}
    assert got == {"j3-fail": "retryCount 2 reached maxRetry 2", "d": "retryCount 3 reached maxRetry 3",
                   "n": "PodFailed"}


def test_queue_bar_splits_allocation_at_deserved_and_scales_to_capability() -> None:
    q = {"spec": {"capability": {"cpu": "8"}, "deserved": {"cpu": "4"}, "guarantee": {"resource": {"cpu": "2"}}},
         "status": {"allocated": {"cpu": "6", "memory": "1Gi"}}}
    bars = {b.resource: b for b in v.queue_bars(q)}
    cpu = bars["cpu"]
    assert (cpu.used, cpu.deserved, cpu.capability, cpu.guarantee) == (6000.0, 4000.0, 8000.0, 2000.0)
    assert (cpu.within, cpu.above) == (50.0, 25.0)
    assert bars["memory"].capability is None and bars["memory"].ceiling == float(1 << 30)


def test_node_rows_sum_requests_of_bound_live_pods() -> None:
    node = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                                                   "conditions": [{"type": "Ready", "status": "True"}]}}
    def pod(name: str, cpu: str, phase: str = "Running") -> dict:
        return {"metadata": {"name": name}, "spec": {"nodeName": "n1", "containers": [
            {"resources": {"requests": {"cpu": cpu}}}]}, "status": {"phase": phase}}
    [row] = v.node_rows([node], {"n1": [pod("a", "500m"), pod("b", "1"), pod("c", "2", "Succeeded")]})
    assert row.ready == "Ready" and row.pods == 2
    assert row.resources[0] == ("cpu", 1500.0, 4000.0)


def test_queueing_delay_is_creation_to_scheduled() -> None:
    g = pg("a", phase="Running", created="2026-01-01T00:00:00Z")
    assert v.queueing_delay(g) is None
    g["status"]["conditions"] = [{"type": "Scheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:42Z"}]
    assert v.queueing_delay(g) == 42.0


def test_job_rows_take_the_gang_of_the_podgroup_the_job_owns() -> None:
    job = {"metadata": {"name": "j", "namespace": "default", "uid": "u1", "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"minAvailable": 2, "tasks": [{"replicas": 2}, {"replicas": 1}]},
           "status": {"state": {"phase": "Running"}, "running": 2}}
    mine = pg("pg-j", phase="Running", running=2, min_member=2)
    mine["metadata"]["ownerReferences"] = [{"uid": "u1", "controller": True}]
    [row] = v.job_rows([job], [pg("other", running=0), mine], now=v.ts("2026-01-01T00:05:00Z") or 0.0)
    assert (row.phase, row.tone, row.ready, row.min_member, row.gang_label) == ("Running", "ok", 2, 2,
                                                                               "Gang requirement met")
    assert (row.queue, row.replicas, row.tasks, row.age) == ("default", 3, 2, "5m")


def test_the_ui_watches_every_kind_the_explain_session_is_built_from() -> None:
    """The explain panels replay the session on the watch cache: a kind of SESSION_KINDS the cache
    does not watch would be missing from the UI's answer and not from ``pumice explain``'s."""
    from pumice.dashboard.cache import KINDS
    from pumice.scheduler.volcano.explain import SESSION_KINDS, target_resource

    assert {rk.kind for rk in SESSION_KINDS} <= set(KINDS)
    assert "HyperNode" in {rk.kind for rk in SESSION_KINDS}
    for kind in ("vcjob", "rayjob"):  # the UI's explained targets besides PodGroups and Pods
        target = target_resource(kind)
        assert target is not None and KINDS[target.kind] == target
    assert target_resource("pg") is None and target_resource("pod") is None


def test_a_node_with_a_quantity_beyond_int64_shows_the_saturated_amount() -> None:
    """trial-10 F-9: ``cpu: 1e400`` made the Overview and Nodes pages answer 500 (OverflowError)."""
    node = {"metadata": {"name": "big"}, "status": {"allocatable": {"cpu": "1e400", "memory": "1e400", "pods": "110"},
                                                    "conditions": [{"type": "Ready", "status": "True"}]}}
    [row] = v.node_rows([node], {})
    assert row.resources == [("cpu", 0.0, float(2**63 - 1)), ("memory", 0.0, float(2**63 - 1)), ("pods", 0.0, 110.0)]
    assert v.fmt_res("cpu", row.resources[0][2]) == "9223372036854775808m"
    assert v.res_value("nvidia.com/gpu", "500m") == 0.5


def test_the_rayjob_and_vcjob_action_refusals_match_what_the_pages_offer() -> None:
    from pumice.dashboard import views as v

    def rj(ds: str, **spec: object) -> dict[str, object]:
        return {"spec": spec, "status": {"jobDeploymentStatus": ds}}

    assert v.rayjob_action_refusal(rj("Running", shutdownAfterJobFinishes=True), "suspend") is None
    assert v.rayjob_action_refusal(rj("Complete", shutdownAfterJobFinishes=True), "suspend") == (
        "its jobDeploymentStatus is Complete")
    assert "shutdownAfterJobFinishes set to false" in str(v.rayjob_action_refusal(rj("Running"), "suspend"))
    assert v.rayjob_action_refusal(rj("Suspended", suspend=True), "resume") is None
    assert v.rayjob_action_refusal(rj("Complete"), "resume") == "it is not suspended"
    assert v.vcjob_action_refusal("Running", "suspend") is None
    assert v.vcjob_action_refusal("Completed", "suspend") == "the job is Completed"
    assert v.vcjob_action_refusal("Aborted", "resume") is None
    assert v.vcjob_action_refusal("Running", "resume") == "the job is Running, not Aborted"


def test_a_queue_page_freezes_updates_only_for_a_state_the_webhook_refuses() -> None:
    """Review 20 V-10: a queue with no status.state yet was shown frozen ("This queue is
    Unknown"), but Volcano's validateStateOfQueue passes an empty state."""
    assert not v.queue_updates_refused({"spec": {"weight": 1}})
    assert not v.queue_updates_refused({"status": {"state": ""}})
    assert not v.queue_updates_refused({"status": {"state": "Open"}})
    assert not v.queue_updates_refused({"status": {"state": "Closed"}})
    assert v.queue_updates_refused({"status": {"state": "Closing"}})
    assert v.queue_updates_refused({"status": {"state": "Unknown"}})


def test_resource_amounts_show_as_quantity_strings() -> None:
    # as kubectl describe prints them (Quantity.String()): a fractional GPU is 500m, not 0.5,
    # and 1000 cores is 1k
    assert v.fmt_res("cpu", 1500.0) == "1500m"
    assert v.fmt_res("cpu", 1e6) == "1k"
    assert v.fmt_res("memory", float(2**30)) == "1Gi"
    assert v.fmt_res("nvidia.com/gpu", 0.5) == "500m"
    assert v.fmt_res("nvidia.com/gpu", 2.0) == "2"
    assert v.fmt_res("pods", 110.0) == "110"
    assert v.fmt_res("cpu", None) == "-"
