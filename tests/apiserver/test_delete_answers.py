"""What a DELETE answers, as kube-apiserver's generic store and delete handler answer it
(differential run, session 16): a kind whose store does not return the deleted object answers a
removal with a Status Success naming it (details.kind is the resource); Pods, Services and the
other ReturnDeletedObject kinds answer the object; an object held by finalizers is answered
as it stays; a Pod removed at once is answered with the deletionTimestamp, grace period and
generation its delete gave it; 202 only for a held object whose delete set orphanDependents=false."""

from __future__ import annotations

import httpx2

NS = "/api/v1/namespaces/default"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"


async def test_a_configmap_removed_at_once_is_answered_with_a_status(http: httpx2.AsyncClient) -> None:
    cm = (await http.post(f"{NS}/configmaps", json={"metadata": {"name": "c1"}, "data": {"a": "1"}})).json()
    resp = await http.delete(f"{NS}/configmaps/c1")
    assert resp.status_code == 200
    assert resp.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                           "details": {"name": "c1", "kind": "configmaps", "uid": cm["metadata"]["uid"]}}
    assert (await http.get(f"{NS}/configmaps/c1")).status_code == 404


async def test_a_dry_run_delete_answers_as_the_delete_would(http: httpx2.AsyncClient) -> None:
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "dry"}})
    resp = await http.delete(f"{NS}/configmaps/dry", params={"dryRun": "All"})
    assert (resp.status_code, resp.json()["kind"], resp.json()["status"]) == (200, "Status", "Success")
    assert (await http.get(f"{NS}/configmaps/dry")).status_code == 200
    svc = (await http.post(f"{NS}/services", json={"metadata": {"name": "s1"}, "spec": {
        "ports": [{"port": 80}]}})).json()
    got = (await http.delete(f"{NS}/services/s1", params={"dryRun": "All"})).json()
    # a Service has no graceful deletion: the dry run answers it as stored
    assert got["kind"] == "Service" and "deletionTimestamp" not in got["metadata"]
    assert got["metadata"]["resourceVersion"] == svc["metadata"]["resourceVersion"]


async def test_grouped_kinds_and_custom_resources_name_their_group(http: httpx2.AsyncClient) -> None:
    job = {"metadata": {"name": "j1"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}
    assert (await http.post("/apis/batch/v1/namespaces/default/jobs", json=job)).status_code == 201
    got = (await http.delete("/apis/batch/v1/namespaces/default/jobs/j1",
                             params={"propagationPolicy": "Background"})).json()
    assert got["kind"] == "Status" and got["details"]["group"] == "batch" and got["details"]["kind"] == "jobs"
    q = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q-del"},
         "spec": {"weight": 1}}
    assert (await http.post(QUEUES, json=q)).status_code == 201
    got = (await http.delete(f"{QUEUES}/q-del")).json()
    assert (got["kind"], got["details"]["group"], got["details"]["kind"], got["details"]["name"]) == (
        "Status", "scheduling.volcano.sh", "queues", "q-del")


async def test_return_deleted_object_kinds_answer_the_object(http: httpx2.AsyncClient) -> None:
    await http.post(f"{NS}/serviceaccounts", json={"metadata": {"name": "sa1"}})
    got = (await http.delete(f"{NS}/serviceaccounts/sa1")).json()
    assert (got["kind"], got["metadata"]["name"]) == ("ServiceAccount", "sa1")


async def test_a_pod_removed_at_once_carries_what_its_delete_set(http: httpx2.AsyncClient) -> None:
    await http.post(f"{NS}/pods", json={"metadata": {"name": "p1"}, "spec": {
        "containers": [{"name": "c", "image": "busybox"}]}})
    resp = await http.delete(f"{NS}/pods/p1")  # unscheduled: grace 0, removed at once
    assert resp.status_code == 200
    md = resp.json()["metadata"]
    assert md["deletionGracePeriodSeconds"] == 0 and md["deletionTimestamp"] and md["generation"] == 2
    assert (await http.get(f"{NS}/pods/p1")).status_code == 404


async def test_held_objects_are_answered_as_they_stay_and_202_only_for_orphan_dependents_false(
        http: httpx2.AsyncClient) -> None:
    for name in ("held1", "held2", "free"):
        await http.post(f"{NS}/configmaps", json={"metadata": {"name": name, "finalizers": ["x.io/hold"]}
                                                  if name != "free" else {"name": name}})
    resp = await http.delete(f"{NS}/configmaps/held1", params={"propagationPolicy": "Foreground"})
    assert resp.status_code == 200
    assert resp.json()["kind"] == "ConfigMap" and resp.json()["metadata"]["deletionTimestamp"]
    resp = await http.request("DELETE", f"{NS}/configmaps/held2", json={"orphanDependents": False})
    assert resp.status_code == 202 and resp.json()["kind"] == "ConfigMap"
    resp = await http.request("DELETE", f"{NS}/configmaps/free", json={"orphanDependents": False})
    assert (resp.status_code, resp.json()["kind"]) == (200, "Status")


async def test_a_v1_replication_controller_orphans_its_pods_by_default(http: httpx2.AsyncClient) -> None:
    """core/v1 ReplicationControllers keep the old default (rcStrategy.DefaultGarbageCollectionPolicy:
    OrphanDependents for v1): a DELETE with no propagation policy adds the orphan finalizer and the
    object stays, answered as it stays (kube-apiserver v1.34.4: finalizers ["orphan"]); pumice
    removed it at once, and the garbage collector then deleted its Pods."""
    rc = {"metadata": {"name": "rc1"}, "spec": {"replicas": 0, "selector": {"a": "b"}, "template": {
        "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    for name in ("rc1", "rc2", "rc3"):
        assert (await http.post(f"{NS}/replicationcontrollers",
                                json={**rc, "metadata": {"name": name}})).status_code == 201
    resp = await http.delete(f"{NS}/replicationcontrollers/rc1")
    assert (resp.status_code, resp.json()["kind"], resp.json()["metadata"]["finalizers"]) == (
        200, "ReplicationController", ["orphan"])
    assert (await http.get(f"{NS}/replicationcontrollers/rc1")).json()["metadata"]["finalizers"] == ["orphan"]
    # an explicit policy (what kubectl sends) still decides
    resp = await http.delete(f"{NS}/replicationcontrollers/rc2", params={"propagationPolicy": "Background"})
    assert (resp.status_code, resp.json()["kind"]) == (200, "Status")
    resp = await http.delete(f"{NS}/replicationcontrollers/rc3", params={"orphanDependents": "false"})
    assert (resp.status_code, resp.json()["kind"]) == (200, "Status")


async def test_an_explicit_policy_replaces_the_garbage_collection_finalizers(http: httpx2.AsyncClient) -> None:
    """kube-apiserver v1.34.4: a Background DELETE of an object holding ["orphan", "example.com/x"]
    leaves ["example.com/x"] (deletionFinalizersForGarbageCollection takes both GC finalizers off,
    then adds the policy's own); pumice kept the orphan finalizer, so the garbage collector
    orphaned the dependents the client asked to have deleted."""
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "fo", "finalizers": ["orphan", "example.com/x"]}})
    got = (await http.delete(f"{NS}/configmaps/fo", params={"propagationPolicy": "Background"})).json()
    assert (got["kind"], got["metadata"]["finalizers"]) == ("ConfigMap", ["example.com/x"])
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "ff", "finalizers": ["orphan", "example.com/x"]}})
    got = (await http.delete(f"{NS}/configmaps/ff", params={"propagationPolicy": "Foreground"})).json()
    assert got["metadata"]["finalizers"] == ["example.com/x", "foregroundDeletion"]
    # no policy: the object's own GC finalizer stands
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "fn", "finalizers": ["orphan", "example.com/x"]}})
    got = (await http.delete(f"{NS}/configmaps/fn")).json()
    assert got["metadata"]["finalizers"] == ["orphan", "example.com/x"]
    # the orphan finalizer alone, taken away by a Background delete: removed at once
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "fb", "finalizers": ["orphan"]}})
    got = (await http.delete(f"{NS}/configmaps/fb", params={"propagationPolicy": "Background"})).json()
    assert (got["kind"], got["status"]) == ("Status", "Success")
    assert (await http.get(f"{NS}/configmaps/fb")).status_code == 404
