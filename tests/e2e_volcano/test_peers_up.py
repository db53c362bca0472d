"""The peers' queueing plugins end to end: one ``pumice up --runtime simulated`` (real API server
over HTTPS, controller-manager, the live Volcano scheduler with every peers' plugin in its
configuration, simulated Nodes) is started once for the module; each test drives one plugin with
its own Queues and PodGroups, as a user would, and reads the outcome (Pods bound, PodGroup
conditions and annotations, Events) back through the API.

The Pods are bare Pods of a PodGroup (``scheduling.k8s.io/group-name``), so nothing but the
scheduler decides where and whether they run. Simulated Pods are Ready about 1 s after binding,
well inside the 10 s PodsReady timeout the configuration gives every job.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2 as httpx
import pytest
from click.testing import CliRunner

from pumice.api import scheme
from pumice.api.quantity import parse_quantity
from pumice.cli.explain import command as explain_command
from pumice.cli.explain import explain_live
from pumice.client.base import ApiError
from pumice.client.kubeconfig import connect
from pumice.testing.node import wait_for
from pumice.testing.up import Up, start_up, stop_up

CONF = """\
actions: "enqueue, allocate, backfill, reclaim"
tiers:
- plugins:
  - name: placement
    arguments:
      placement.rules:
      - {rule: namespace, namespaces: [team-p]}
  - name: wait-for-pods-ready
    arguments:
      waitForPodsReady.timeout: 10
      waitForPodsReady.backoffBaseSeconds: 2
  - name: single-node-fit
  - name: user-limits
    arguments:
      userLimits.limits:
      - {users: [alice, carol], queue: ul, maxApplications: 1}
  - name: usage-budget
  - name: cohort
  - name: priority
  - name: gang
  - name: conformance
  - name: queue-position
- plugins:
  - name: admission-fair-sharing
  - name: drf
  - name: predicates
  - name: nodeorder
"""

NODES = 4
NODE_CPU = 4


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    tmp = tmp_path_factory.mktemp("peers-up")
    conf = tmp / "volcano-scheduler.conf"
    conf.write_text(CONF)
    data = tmp / "data"
    data.mkdir()
    proc, u = start_up(data, "--runtime", "simulated", "--nodes", str(NODES), "--node-cpu", str(NODE_CPU),
                       "--node-memory", "16Gi", "--scheduler-conf", str(conf))
    try:
        yield u
    finally:
        stop_up(proc)


@pytest.fixture
async def client(up: Up) -> AsyncIterator[Any]:
    c = connect(up.kubeconfig)
    try:
        await _nodes_ready(c)
        yield c
        # the test's Pods go, so the next test finds the Nodes free (the stack is shared)
        for ns in sorted(_NAMESPACES):
            for job in (await c.list(scheme.VCJOB, ns)).items:
                await c.delete(scheme.VCJOB, job["metadata"]["name"], ns)
            for p in (await c.list(scheme.POD, ns)).items:
                try:
                    await c.delete(scheme.POD, p["metadata"]["name"], ns)
                except ApiError as e:
                    if e.code != 404:  # a vcjob's Pod may be gone with its job already
                        raise
        _NAMESPACES.clear()
    finally:
        await c.close()


_NAMESPACES: set[str] = set()


async def _nodes_ready(client: Any) -> None:

    async def nodes_ready() -> bool:
        try:
            return len((await client.list(scheme.NODE)).items) == NODES
        except Exception:
            return False

    await wait_for(nodes_ready, timeout=120)


def queue(name: str, annotations: dict[str, str] | None = None, deserved: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": 1}
    if deserved:
        spec["deserved"] = deserved
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": name, "annotations": annotations or {}}, "spec": spec}


def pod_group(name: str, ns: str, q: str, *, min_member: int = 1, cpu: str | None = None,
              annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": q}
    if cpu is not None:
        spec["minResources"] = {"cpu": cpu}
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns, "annotations": annotations or {}}, "spec": spec}


def pod(name: str, ns: str, group: str, cpu: str, *, annotations: dict[str, str] | None = None,
        restart: str = "Always", node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "volcano", "restartPolicy": restart, "containers": [
        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}
    if node is not None:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
        spec["tolerations"] = [{"key": "peers-e2e", "operator": "Exists", "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns,
                         "annotations": {"scheduling.k8s.io/group-name": group, **(annotations or {})}},
            "spec": spec}


async def create_queue(client: Any, obj: dict[str, Any], timeout: float = 30) -> None:
    """Create a Queue and wait until the queue controller has opened it: the PodGroup webhook
    refuses a PodGroup for a queue whose status.state is not yet `Open` (as upstream's does), so
    a PodGroup created at once could race the controller."""
    await client.create(obj)
    name = obj["metadata"]["name"]

    async def is_open() -> bool:
        q = await client.get(scheme.QUEUE, name)
        return bool((q.get("status") or {}).get("state") == "Open")

    await wait_for(is_open, timeout=timeout)


async def namespace(client: Any, name: str) -> None:
    _NAMESPACES.add(name)
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


async def pod_state(client: Any, ns: str, name: str) -> tuple[str, str]:
    """(nodeName, phase) of a Pod; ("", "") when it does not exist."""
    try:
        p = await client.get(scheme.POD, name, ns)
    except Exception:
        return "", ""
    return p["spec"].get("nodeName") or "", (p.get("status") or {}).get("phase") or ""


async def wait_running(client: Any, ns: str, *names: str, timeout: float = 60) -> None:
    async def running() -> bool:
        return [(await pod_state(client, ns, n))[1] for n in names] == ["Running"] * len(names)

    await wait_for(running, timeout=timeout)


async def wait_phase(client: Any, ns: str, name: str, phase: str, timeout: float = 60) -> None:
    async def reached() -> bool:
        return (await pod_state(client, ns, name))[1] == phase

    await wait_for(reached, timeout=timeout)


async def wait_event(client: Any, ns: str, obj: str, reason: str, timeout: float = 60,
                     prefix: str = "") -> dict[str, Any]:
    """The first Event about ``obj`` with ``reason`` whose message starts with ``prefix``, waiting for it.

    A PodGroup is created before its Pods, so a session can run in between and record the gang's
    own Unschedulable Event ("0/0 tasks in gang unschedulable ...") before the one a test is about;
    ``prefix`` waits past such an earlier Event instead of reading it.
    """
    found: list[dict[str, Any]] = []

    async def seen() -> bool:
        for e in (await client.list(scheme.EVENT, ns)).items:
            if ((e.get("involvedObject") or {}).get("name") == obj and e.get("reason") == reason
                    and (e.get("message") or "").startswith(prefix)):
                found.append(e)
                return True
        return False

    await wait_for(seen, timeout=timeout)
    return found[0]


async def pg_phase(client: Any, ns: str, name: str) -> str:
    return ((await client.get(scheme.POD_GROUP, name, ns)).get("status") or {}).get("phase") or ""


async def test_wait_for_pods_ready_evicts_a_gang_that_never_gets_ready_and_backs_off(client: Any) -> None:
    await namespace(client, "wfpr")
    await create_queue(client, queue("wfpr"))
    await client.create(pod_group("crash", "wfpr", "wfpr"))
    # the container exits 1 at once and restarts (restartPolicy Always): never Ready
    await client.create(pod("crash-0", "wfpr", "crash", "1",
                            annotations={"pumice.io/sim-duration-seconds": "0", "pumice.io/sim-exit-code": "1"}))

    async def bound() -> bool:
        return bool((await pod_state(client, "wfpr", "crash-0"))[0])

    await wait_for(bound, timeout=60)
    ev = await wait_event(client, "wfpr", "crash", "EvictedDueToPodsReadyTimeout", timeout=90)
    assert ev["type"] == "Warning"
    assert ev["message"] == "Exceeded the PodsReady timeout wfpr/crash"
    pg = await client.get(scheme.POD_GROUP, "crash", "wfpr")
    conds = {c["type"]: c for c in (pg.get("status") or {}).get("conditions") or []}
    assert conds["Evicted"]["status"] == "True" and conds["Evicted"]["reason"] == "PodsReadyTimeout"
    ann = pg["metadata"]["annotations"]
    assert ann["scheduling.pumice.io/requeue-count"] == "1"
    assert "scheduling.pumice.io/requeue-at" in ann

    async def evicted() -> bool:
        return (await pod_state(client, "wfpr", "crash-0")) == ("", "")

    await wait_for(evicted, timeout=60)


async def test_wait_for_pods_ready_requeues_a_vcjob_gang_whose_recreated_pods_run_again(client: Any) -> None:
    """The vcjob controller recreates the evicted Pods under the same names; after the backoff
    (BackoffFinished) the scheduler binds them again and they time out again (trial 3 finding 1:
    they stayed Pending for ever, the cache still counting the names as Releasing)."""
    await namespace(client, "wfpr-job")
    await create_queue(client, queue("wfpr-job"))
    probe = {"exec": {"command": ["true"]}, "initialDelaySeconds": 3600}
    await client.create({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                         "metadata": {"name": "slow", "namespace": "wfpr-job"},
                         "spec": {"minAvailable": 2, "schedulerName": "volcano", "queue": "wfpr-job", "tasks": [
                             {"name": "w", "replicas": 2, "template": {"spec": {"containers": [
                                 {"name": "c", "image": "busybox", "readinessProbe": probe,
                                  "resources": {"requests": {"cpu": "1"}}}]}}}]}})

    async def bound_pods() -> dict[str, str] | None:
        pods = (await client.list(scheme.POD, "wfpr-job", label_selector="volcano.sh/job-name=slow")).items
        live = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods
                if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")}
        return live if len(live) == 2 else None

    first = await wait_for(bound_pods, timeout=60)
    assert sorted(first) == ["slow-w-0", "slow-w-1"]

    async def pg() -> dict[str, Any] | None:
        items = (await client.list(scheme.POD_GROUP, "wfpr-job")).items
        return items[0] if items else None

    async def requeue_count(n: str) -> bool:
        got = await pg()
        return got is not None and (got["metadata"].get("annotations") or {}).get(
            "scheduling.pumice.io/requeue-count") == n

    await wait_for(lambda: requeue_count("1"), timeout=90)

    async def rebound() -> dict[str, str] | None:
        now = await bound_pods()
        return now if now is not None and not set(now.values()) & set(first.values()) else None

    # the same names, new Pods, bound again once the 2 s backoff is over
    second = await wait_for(rebound, timeout=90)
    assert sorted(second) == ["slow-w-0", "slow-w-1"]
    got = await pg()
    assert got is not None
    conds = {c["type"]: c for c in (got.get("status") or {}).get("conditions") or []}
    assert conds["Requeued"]["reason"] == "BackoffFinished"
    # and they are judged again: not Ready within the timeout, evicted a second time
    await wait_for(lambda: requeue_count("2"), timeout=90)


async def test_cohort_lets_a_queue_borrow_its_peers_idle_quota_up_to_the_lending_limit(client: Any) -> None:
    await namespace(client, "cohort")
    await create_queue(client, queue("co-a", {"scheduling.pumice.io/cohort": "c1"}, {"cpu": "2"}))
    await create_queue(client, queue("co-b", {"scheduling.pumice.io/cohort": "c1",
                                       "scheduling.pumice.io/lending-limit": json.dumps({"cpu": "1"})}, {"cpu": "2"}))
    # co-a's nominal quota is 2 cpu; co-b lends at most 1 of its 2, so 3 fit and a 4th does not
    await client.create(pod_group("borrow", "cohort", "co-a", min_member=3, cpu="3"))
    for i in range(3):
        await client.create(pod(f"borrow-{i}", "cohort", "borrow", "1"))
    await wait_running(client, "cohort", "borrow-0", "borrow-1", "borrow-2")
    await client.create(pod_group("more", "cohort", "co-a", cpu="1"))
    await client.create(pod("more-0", "cohort", "more", "1"))
    ev = await wait_event(client, "cohort", "more", "Unschedulable", prefix="cohort ")
    assert ev["message"] == "cohort c1 quota insufficient for queue co-a: insufficient cpu"
    assert await pg_phase(client, "cohort", "more") == "Pending"
    assert (await pod_state(client, "cohort", "more-0"))[0] == ""


async def test_cohort_reclaims_lent_quota_when_the_lender_needs_it_back(client: Any) -> None:
    await namespace(client, "reclaim")
    await create_queue(client, queue("rc-a", {"scheduling.pumice.io/cohort": "c2"}, {"cpu": "1"}))
    await create_queue(client, queue("rc-b", {"scheduling.pumice.io/cohort": "c2",
                                       "scheduling.pumice.io/reclaim-within-cohort": "Any"}, {"cpu": "2"}))
    # rc-a (nominal 1) borrows rc-b's idle quota: 3 Pods of one elastic job run
    await client.create(pod_group("borrower", "reclaim", "rc-a", min_member=1, cpu="1"))
    for i in range(3):
        await client.create(pod(f"borrower-{i}", "reclaim", "borrower", "1"))
    await wait_running(client, "reclaim", "borrower-0", "borrower-1", "borrower-2")
    # rc-b's own demand returns: 2 cpu within its nominal quota; rc-a gives back what it borrowed
    await client.create(pod_group("lender", "reclaim", "rc-b", min_member=2, cpu="2"))
    for i in range(2):
        await client.create(pod(f"lender-{i}", "reclaim", "lender", "1"))
    await wait_running(client, "reclaim", "lender-0", "lender-1", timeout=90)
    states = [await pod_state(client, "reclaim", f"borrower-{i}") for i in range(3)]
    assert sum(1 for _, phase in states if phase == "Running") == 1
    # each victim has upstream's evictor Event, its PodGroup the cache's (trial 3 finding 4)
    victims = [f"borrower-{i}" for i, (_, phase) in enumerate(states) if phase != "Running"]
    for v in victims:
        ev = await wait_event(client, "reclaim", v, "Evict")
        assert (ev["type"], ev["message"], ev["involvedObject"]["kind"]) == (
            "Warning", "Pod is evicted, because of reclaim", "Pod")
    ev = await wait_event(client, "reclaim", "borrower", "Evict")
    assert (ev["type"], ev["message"], ev["involvedObject"]["kind"]) == ("Normal", "reclaim", "PodGroup")


async def test_admission_fair_sharing_gives_the_free_slot_to_the_queue_with_less_past_usage(client: Any) -> None:
    await namespace(client, "afs")
    for q in ("afs-a", "afs-b", "afs-c"):
        await create_queue(client, queue(q))
    # afs-a has history: a 1-cpu Pod that ran for 2 s and finished
    await client.create(pod_group("hist", "afs", "afs-a"))
    await client.create(pod("hist-0", "afs", "hist", "1", restart="Never",
                            annotations={"pumice.io/sim-duration-seconds": "2"}))
    await wait_phase(client, "afs", "hist-0", "Succeeded")
    # one Node, tainted for this test only, is filled by a blocker in a third queue; earlier tests'
    # Pods may sit on it, so the blocker takes what is free there
    node = sorted(n["metadata"]["name"] for n in (await client.list(scheme.NODE)).items)[-1]
    await client.patch(scheme.NODE, node, {"spec": {"taints": [{"key": "peers-e2e", "effect": "NoSchedule"}]}})

    async def settled() -> tuple[list[dict[str, Any]]] | None:
        pods = [p for p in (await client.list(scheme.POD)).items if p["spec"].get("nodeName") == node
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        return None if any(p["metadata"].get("deletionTimestamp") for p in pods) else (pods,)

    (on_node,) = await wait_for(settled, timeout=60)
    held = sum(parse_quantity(((c.get("resources") or {}).get("requests") or {}).get("cpu", 0)) for p in on_node
               for c in p["spec"]["containers"])
    free = f"{int((NODE_CPU - held) * 1000)}m"
    await client.create(pod_group("blocker", "afs", "afs-c"))
    await client.create(pod("blocker-0", "afs", "blocker", free, node=node))
    await wait_running(client, "afs", "blocker-0")
    # afs-a's job is older (and afs-a sorts first by name); both want all of it
    for g, q in (("ja", "afs-a"), ("jb", "afs-b")):
        await client.create(pod_group(g, "afs", q))
        await client.create(pod(f"{g}-0", "afs", g, free, node=node))

    async def both_inqueue() -> bool:
        return [await pg_phase(client, "afs", g) for g in ("ja", "jb")] == ["Inqueue", "Inqueue"]

    await wait_for(both_inqueue, timeout=60)
    await client.delete(scheme.POD, "blocker-0", "afs")
    await wait_running(client, "afs", "jb-0", timeout=90)
    assert (await pod_state(client, "afs", "ja-0"))[0] == ""
    await client.delete(scheme.POD, "jb-0", "afs")
    await client.patch(scheme.NODE, node, {"spec": {"taints": None}})


async def test_usage_budget_stops_admitting_once_the_queue_spent_its_cpu_hours(client: Any) -> None:
    await namespace(client, "budget")
    # 0.0002 cpu-hours = 0.72 cpu-seconds; a 1-cpu Pod running 2 s spends it
    await create_queue(client, queue("budget", {"scheduling.pumice.io/usage-budget": json.dumps({"cpu": 0.0002})}))
    await client.create(pod_group("first", "budget", "budget", cpu="1"))
    await client.create(pod("first-0", "budget", "first", "1", restart="Never",
                            annotations={"pumice.io/sim-duration-seconds": "2"}))
    await wait_phase(client, "budget", "first-0", "Succeeded")
    await client.create(pod_group("second", "budget", "budget", cpu="1"))
    await client.create(pod("second-0", "budget", "second", "1"))
    ev = await wait_event(client, "budget", "second", "Unschedulable", prefix="queue budget ")
    assert ev["message"].startswith("queue budget used ")
    assert "of its 0.0002 cpu-hours budget in the last 720h" in ev["message"]
    assert await pg_phase(client, "budget", "second") == "Pending"


async def test_placement_puts_a_vcjob_without_a_queue_into_its_namespaces_queue(client: Any) -> None:
    await namespace(client, "team-p")
    await create_queue(client, queue("team-p"))
    await client.create({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                         "metadata": {"name": "placed", "namespace": "team-p"},
                         "spec": {"minAvailable": 1, "schedulerName": "volcano", "tasks": [
                             {"name": "w", "replicas": 1, "template": {"spec": {"containers": [
                                 {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}})

    async def placed() -> dict[str, Any] | None:
        for pg in (await client.list(scheme.POD_GROUP, "team-p")).items:
            if (pg["metadata"].get("annotations") or {}).get("scheduling.pumice.io/placed-queue") == "team-p":
                return pg
        return None

    await wait_for(placed, timeout=60)
    pg = await placed()
    assert pg is not None and pg["spec"]["queue"] == "default"

    async def running() -> bool:
        pods = (await client.list(scheme.POD, "team-p", label_selector="volcano.sh/job-name=placed")).items
        return len(pods) == 1 and (pods[0].get("status") or {}).get("phase") == "Running"

    await wait_for(running, timeout=60)


async def test_user_limits_hold_a_users_second_application_but_not_another_users(client: Any) -> None:
    await namespace(client, "users")
    await create_queue(client, queue("ul"))
    # minResources set, as the vcjob controller sets it: upstream's enqueue admits a PodGroup
    # without minResources before any plugin votes

    def user(u: str) -> dict[str, str]:
        return {"yunikorn.apache.org/user.info": json.dumps({"user": u})}

    await client.create(pod_group("alice-1", "users", "ul", cpu="1", annotations=user("alice")))
    await client.create(pod("alice-1-0", "users", "alice-1", "1"))
    await wait_running(client, "users", "alice-1-0")
    await client.create(pod_group("alice-2", "users", "ul", cpu="1", annotations=user("alice")))
    await client.create(pod("alice-2-0", "users", "alice-2", "1"))
    await client.create(pod_group("bob-1", "users", "ul", cpu="1", annotations=user("bob")))
    await client.create(pod("bob-1-0", "users", "bob-1", "1"))
    await wait_running(client, "users", "bob-1-0")
    ev = await wait_event(client, "users", "alice-2", "Unschedulable", prefix="user alice ")
    assert ev["message"] == "user alice has 1 of at most 1 applications in queue ul"
    assert await pg_phase(client, "users", "alice-2") == "Pending"


async def test_explain_and_the_ui_replay_the_configuration_pumice_up_runs_with(client: Any, up: Up) -> None:
    """Trial 3 finding 2: without --scheduler-conf, ``pumice explain`` and the UI's "Why is it
    waiting?" replayed the built-in default and said a job held by user-limits was fine."""
    await namespace(client, "why")
    try:
        await create_queue(client, queue("ul"))
    except ApiError as e:
        if e.code != 409:  # made by the user-limits test already
            raise
    carol = {"yunikorn.apache.org/user.info": json.dumps({"user": "carol"})}
    await client.create(pod_group("carol-1", "why", "ul", cpu="1", annotations=carol))
    await client.create(pod("carol-1-0", "why", "carol-1", "1"))
    await wait_running(client, "why", "carol-1-0")
    await client.create(pod_group("carol-2", "why", "ul", cpu="1", annotations=carol))
    await client.create(pod("carol-2-0", "why", "carol-2", "1"))
    ev = await wait_event(client, "why", "carol-2", "Unschedulable", prefix="user carol ")
    assert ev["message"] == "user carol has 1 of at most 1 applications in queue ul"
    cm = await client.get(scheme.CONFIG_MAP, "volcano-scheduler-configmap", "volcano-system")
    assert cm["data"]["volcano-scheduler.conf"] == CONF  # published by the scheduler, as it runs it
    warnings: list[str] = []
    ex = await explain_live(client, "podgroup/carol-2", "why", warn=warnings.append)
    assert not warnings
    assert ex.gate == "enqueue-refused", ex.render()
    assert "user carol has 1 of at most 1 applications in queue ul" in ex.reason, ex.render()
    res = await asyncio.to_thread(CliRunner().invoke, explain_command,
                                  ["podgroup/carol-2", "-n", "why", "--kubeconfig", str(up.kubeconfig)])
    assert res.exit_code == 0, res.output
    assert "user carol has 1 of at most 1 applications in queue ul" in res.output
    assert "Warning" not in res.output
    async with httpx.AsyncClient(base_url=up.url, timeout=30) as web:
        r = await web.post("/login", data={"token": up.token})
        assert r.status_code == 303
        page = (await web.get("/podgroups/why/carol-2")).text
    assert "Why is it waiting?" in page
    assert "user carol has 1 of at most 1 applications in queue ul" in page, page[:3000]


async def test_an_edit_of_the_configmap_is_restored_from_the_file_and_the_ui_explains_with_what_runs(
        client: Any, up: Up) -> None:
    """Trial 4 N1 and N2, with ``pumice up --scheduler-conf FILE``. N1: an edit of
    volcano-scheduler-configmap is written back from the file, with a Warning Event saying to edit
    the file (it stayed, and explain replayed what nothing ran). N2: after the file changed (A -> B)
    and then a bad edit, the scheduler keeps B; the UI kept A (it parsed the file itself, lazily)."""
    conf_file = up.data_dir.parent / "volcano-scheduler.conf"
    b_conf = CONF.replace("      - {users: [alice, carol], queue: ul, maxApplications: 1}\n",
                          "      - {users: [alice, carol], queue: ul, maxApplications: 1}\n"
                          "      - {users: [dave], queue: ul, maxApplications: 2}\n")
    assert b_conf != CONF

    async def conf_map() -> dict[str, Any]:
        return await client.get(scheme.CONFIG_MAP, "volcano-scheduler-configmap", "volcano-system")

    async def running_conf(text: str) -> None:
        async def runs() -> bool:
            cm = await conf_map()
            return (cm["metadata"].get("annotations") or {}).get("scheduling.pumice.io/conf-in-use") == text
        await wait_for(runs, timeout=30)

    await client.patch(scheme.CONFIG_MAP, "volcano-scheduler-configmap",
                       {"data": {"volcano-scheduler.conf": CONF.replace("maxApplications: 1", "maxApplications: 5")}},
                       "volcano-system")
    ev = await wait_event(client, "volcano-system", "volcano-scheduler-configmap", "SchedulerConfigurationOverwritten")
    assert ev["type"] == "Warning" and f"--scheduler-conf file {conf_file}" in ev["message"]

    async def restored() -> bool:
        return (await conf_map())["data"]["volcano-scheduler.conf"] == CONF
    await wait_for(restored, timeout=30)

    await namespace(client, "why2")
    try:
        await create_queue(client, queue("ul"))
    except ApiError as e:
        if e.code != 409:
            raise
    dave = {"yunikorn.apache.org/user.info": json.dumps({"user": "dave"})}
    try:
        conf_file.write_text(b_conf)
        await running_conf(b_conf)
        for i in (1, 2):
            await client.create(pod_group(f"dave-{i}", "why2", "ul", cpu="1", annotations=dave))
            await client.create(pod(f"dave-{i}-0", "why2", f"dave-{i}", "1"))
        await wait_running(client, "why2", "dave-1-0", "dave-2-0")
        conf_file.write_text(b_conf.replace("waitForPodsReady.timeout", "waitForPodsReady.timout"))
        await client.create(pod_group("dave-3", "why2", "ul", cpu="1", annotations=dave))
        await client.create(pod("dave-3-0", "why2", "dave-3", "1"))
        ev = await wait_event(client, "why2", "dave-3", "Unschedulable", prefix="user dave ")
        assert ev["message"] == "user dave has 2 of at most 2 applications in queue ul"
        ex = await explain_live(client, "podgroup/dave-3", "why2")
        assert "user dave has 2 of at most 2 applications in queue ul" in ex.reason, ex.render()
        async with httpx.AsyncClient(base_url=up.url, timeout=30) as web:
            r = await web.post("/login", data={"token": up.token})
            assert r.status_code == 303
            page = (await web.get("/podgroups/why2/dave-3")).text
        why = re.search(r'<dd class="why">([^<]*)</dd>', page)  # the explain panel's, not the Events table
        assert why is not None, page[:3000]
        assert why.group(1) == "enqueue refused: user dave has 2 of at most 2 applications in queue ul", why.group(1)
    finally:
        conf_file.write_text(CONF)
        await running_conf(CONF)


async def test_queue_position_is_in_the_podgroup_status_and_on_its_ui_page(client: Any, up: Up) -> None:
    await namespace(client, "qpos")
    await create_queue(client, queue("qpos"))
    # all three want a whole Node, the same one: at most one runs, the others wait in line
    node = sorted(n["metadata"]["name"] for n in (await client.list(scheme.NODE)).items)[0]
    for i in range(3):
        await client.create(pod_group(f"line-{i}", "qpos", "qpos"))
        await client.create(pod(f"line-{i}-0", "qpos", f"line-{i}", str(NODE_CPU), node=node))
        await asyncio.sleep(0.1)  # distinct creation times: the job order's tie-break

    async def positions() -> dict[str, Any] | None:
        pgs = {pg["metadata"]["name"]: (pg.get("status") or {}).get("positionInQueue")
               for pg in (await client.list(scheme.POD_GROUP, "qpos")).items}
        waiting = [p for p in pgs.values() if p]
        return pgs if len(pgs) == 3 and len(waiting) >= 2 and sorted(waiting) == list(range(1, len(waiting) + 1)) else None

    found = await wait_for(positions, timeout=60)
    # the line keeps its creation order (same priority)
    line = [n for n, p in sorted(found.items(), key=lambda kv: kv[1] or 0) if p]
    assert line == sorted(line)
    second = next(n for n, p in found.items() if p == 2)
    async with httpx.AsyncClient(base_url=up.url, timeout=30) as web:
        r = await web.post("/login", data={"token": up.token})
        assert r.status_code == 303
        page = (await web.get(f"/podgroups/qpos/{second}")).text
    assert re.search(r'<dd id="position">2 \(status.positionInQueue, from the scheduler\)</dd>', page), page[:2000]


async def test_single_node_fit_keeps_a_job_no_node_can_hold_out_and_the_queue_moves_on(client: Any) -> None:
    await namespace(client, "snf")
    await create_queue(client, queue("snf"))
    # the Pod first: single-node-fit judges a job's Pending tasks at enqueue, and a session between
    # the PodGroup and its Pod would enqueue a job with no task to judge
    await client.create(pod("huge-0", "snf", "huge", str(NODE_CPU + 2)))
    await client.create(pod_group("huge", "snf", "snf", cpu=str(NODE_CPU + 2)))
    ev = await wait_event(client, "snf", "huge", "Unschedulable", prefix="task huge-0 ")
    assert ev["type"] == "Warning"
    assert ev["message"].startswith("task huge-0 requests cpu ")
    await client.create(pod_group("small", "snf", "snf", cpu="1"))
    await client.create(pod("small-0", "snf", "small", "1"))
    await wait_running(client, "snf", "small-0")
    assert await pg_phase(client, "snf", "huge") == "Pending"
