"""Answers that differed from a real kube-apiserver in the differential run of session 14
(tests/realcluster/test_differential.py, kube-apiserver v1.34.4; each checked against the 1.32
sources pumice targets): one test per difference fixed, each in the words kube-apiserver uses."""

from __future__ import annotations

import httpx2

NS = "/api/v1/namespaces/default"


async def _pod(http: httpx2.AsyncClient, name: str = "p1") -> dict:
    resp = await http.post(f"{NS}/pods", json={"metadata": {"name": name}, "spec": {
        "containers": [{"name": "c", "image": "busybox"}]}})
    assert resp.status_code == 201, resp.text
    body: dict = resp.json()
    return body


async def test_delete_preconditions_fail_with_before_deletes_texts_naming_the_kind(http: httpx2.AsyncClient) -> None:
    p = await _pod(http)
    resp = await http.request("DELETE", f"{NS}/pods/p1", json={"preconditions": {"uid": "u-1"}})
    assert resp.status_code == 409
    assert resp.json()["message"] == (
        f'Operation cannot be fulfilled on Pod "p1": the UID in the precondition (u-1) does not match the UID in '
        f'record ({p["metadata"]["uid"]}). The object might have been deleted and then recreated')
    assert resp.json()["details"] == {"name": "p1", "kind": "Pod"}
    resp = await http.request("DELETE", f"{NS}/pods/p1", json={"preconditions": {"resourceVersion": "1"}})
    assert resp.json()["message"] == (
        f'Operation cannot be fulfilled on Pod "p1": the ResourceVersion in the precondition (1) does not match the '
        f'ResourceVersion in record ({p["metadata"]["resourceVersion"]}). The object might have been modified')


async def test_bad_delete_options_are_invalid_delete_options_with_causes(http: httpx2.AsyncClient) -> None:
    await _pod(http)
    resp = await http.delete(f"{NS}/pods/p1", params={"propagationPolicy": "Sideways"})
    assert resp.status_code == 422
    status = resp.json()
    assert status["message"] == ('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                                 '"Sideways": supported values: "Foreground", "Background", "Orphan", "nil"')
    assert [(c["reason"], c["field"]) for c in status["details"]["causes"]] == [
        ("FieldValueNotSupported", "propagationPolicy")]
    resp = await http.delete(f"{NS}/pods/p1", params={"dryRun": "Bogus"})
    assert resp.status_code == 422
    assert resp.json()["message"] == ('DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
                                      '[]string{"Bogus"}: supported values: "All"')
    resp = await http.delete(f"{NS}/pods/p1", params={"gracePeriodSeconds": "x"})
    assert (resp.status_code, resp.json()["message"]) == (400, 'strconv.ParseInt: parsing "x": invalid syntax')


async def test_a_bad_dry_run_on_a_write_is_an_invalid_create_options(http: httpx2.AsyncClient) -> None:
    resp = await http.post(f"{NS}/configmaps", params={"dryRun": "Bogus"}, json={"metadata": {"name": "c"}})
    assert resp.status_code == 422
    status = resp.json()
    assert status["message"] == ('CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
                                 '[]string{"Bogus"}: supported values: "All"')
    assert status["details"] == {"group": "meta.k8s.io", "kind": "CreateOptions", "causes": [
        {"reason": "FieldValueNotSupported", "field": "dryRun",
         "message": 'Unsupported value: []string{"Bogus"}: supported values: "All"'}]}
    resp = await http.patch(f"{NS}/configmaps/c", params={"dryRun": "x", "fieldValidation": "y"}, content=b"{}",
                            headers={"Content-Type": "application/merge-patch+json"})
    assert [c["field"] for c in resp.json()["details"]["causes"]] == ["dryRun", "fieldValidation"]


async def test_creating_in_a_terminating_namespace_carries_the_namespace_terminating_cause(
        http: httpx2.AsyncClient) -> None:
    await http.post("/api/v1/namespaces", json={"metadata": {"name": "gone"}})
    await http.post("/api/v1/namespaces/gone/configmaps", json={"metadata": {"name": "keep", "finalizers": ["x/y"]}})
    await http.delete("/api/v1/namespaces/gone")
    resp = await http.post("/api/v1/namespaces/gone/configmaps", json={"metadata": {"name": "late"}})
    assert resp.status_code == 403
    assert resp.json()["details"]["causes"] == [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                                 "message": "namespace gone is being terminated"}]


async def test_a_filtered_page_has_no_remaining_item_count(http: httpx2.AsyncClient) -> None:
    for i in range(3):
        await http.post(f"{NS}/configmaps", json={"metadata": {"name": f"c{i}", "labels": {"a": "b"}}})
    page = (await http.get(f"{NS}/configmaps", params={"limit": "1", "labelSelector": "a=b"})).json()
    assert "continue" in page["metadata"] and "remainingItemCount" not in page["metadata"]
    page = (await http.get(f"{NS}/configmaps", params={"limit": "1"})).json()
    assert page["metadata"]["remainingItemCount"] >= 2
    table = (await http.get(f"{NS}/configmaps", params={"limit": "1"},
                            headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})).json()
    assert table["metadata"]["remainingItemCount"] == page["metadata"]["remainingItemCount"]


async def test_pod_templates_keep_enable_service_links_unset(http: httpx2.AsyncClient) -> None:
    # SetDefaults_Pod sets it, SetDefaults_PodSpec (templates) does not
    dep = {"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
        "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    got = (await http.post("/apis/apps/v1/namespaces/default/deployments", json=dep)).json()
    assert "enableServiceLinks" not in got["spec"]["template"]["spec"]
    assert got["spec"]["template"]["spec"]["schedulerName"] == "default-scheduler"
    assert (await _pod(http))["spec"]["enableServiceLinks"] is True


async def test_requests_default_to_limits_in_pods_not_in_pod_templates(http: httpx2.AsyncClient) -> None:
    # SetDefaults_Pod (a Pod's only, containers and init containers) copies each limit not
    # requested into requests; a template keeps what it was given (SetDefaults_PodSpec)
    limited = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}
    spec = {"initContainers": [{"name": "i", "image": "x", "resources": limited}],
            "containers": [{"name": "c", "image": "x", "resources": limited}]}
    dep = {"metadata": {"name": "limits"}, "spec": {"selector": {"matchLabels": {"a": "l"}}, "template": {
        "metadata": {"labels": {"a": "l"}}, "spec": spec}}}
    got = (await http.post("/apis/apps/v1/namespaces/default/deployments", json=dep)).json()
    tpl = got["spec"]["template"]["spec"]
    assert [c["resources"] for c in tpl["initContainers"] + tpl["containers"]] == [limited, limited]
    pod = (await http.post(f"{NS}/pods", json={"metadata": {"name": "limits"}, "spec": spec})).json()
    want = {**limited, "requests": {"cpu": "500m", "memory": "1Gi"}}
    assert [c["resources"] for c in pod["spec"]["initContainers"] + pod["spec"]["containers"]] == [want, want]


async def test_externally_accessible_services_get_the_traffic_policies(http: httpx2.AsyncClient) -> None:
    def svc(name: str, kind: str) -> dict:
        return {"metadata": {"name": name}, "spec": {"type": kind, "ports": [{"port": 80}]}}

    node_port = (await http.post(f"{NS}/services", json=svc("np", "NodePort"))).json()["spec"]
    assert (node_port["externalTrafficPolicy"], node_port["internalTrafficPolicy"]) == ("Cluster", "Cluster")
    lb = (await http.post(f"{NS}/services", json=svc("lb", "LoadBalancer"))).json()["spec"]
    assert (lb["externalTrafficPolicy"], lb["internalTrafficPolicy"], lb["allocateLoadBalancerNodePorts"]) == (
        "Cluster", "Cluster", True)
    cluster_ip = (await http.post(f"{NS}/services", json=svc("ci", "ClusterIP"))).json()["spec"]
    assert "externalTrafficPolicy" not in cluster_ip and cluster_ip["internalTrafficPolicy"] == "Cluster"


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _crd(schema: bool = True) -> dict:
    version: dict = {"name": "v1", "served": True, "storage": True}
    if schema:
        version["schema"] = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {"metadata": {"name": "things.x.io"}, "spec": {
        "group": "x.io", "names": {"plural": "things", "kind": "Thing"}, "scope": "Namespaced", "versions": [version]}}


async def test_a_crd_version_without_a_schema_is_refused(http: httpx2.AsyncClient) -> None:
    resp = await http.post(CRDS, json=_crd(schema=False))
    assert resp.status_code == 422
    assert resp.json()["message"] == ('CustomResourceDefinition.apiextensions.k8s.io "things.x.io" is invalid: '
                                      'spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required')


async def test_a_crd_is_defaulted_as_apiextensions_v1_defaults_it(http: httpx2.AsyncClient) -> None:
    spec = (await http.post(CRDS, json=_crd())).json()["spec"]
    assert spec["conversion"] == {"strategy": "None"}
    assert (spec["names"]["singular"], spec["names"]["listKind"]) == ("thing", "ThingList")


async def test_a_deployment_without_selector_also_mismatches_its_template(http: httpx2.AsyncClient) -> None:
    dep = {"metadata": {"name": "d"}, "spec": {"template": {
        "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    resp = await http.post("/apis/apps/v1/namespaces/default/deployments", json=dep)
    assert resp.status_code == 422
    assert [(c["reason"], c["field"]) for c in resp.json()["details"]["causes"]] == [
        ("FieldValueRequired", "spec.selector"), ("FieldValueInvalid", "spec.template.metadata.labels")]


async def test_custom_resource_type_meta_is_checked_as_apiextensions_checks_it(http: httpx2.AsyncClient) -> None:
    await http.post(CRDS, json=_crd())
    things = "/apis/x.io/v1/namespaces/default/things"
    resp = await http.post(things, json={"kind": "Thing", "metadata": {"name": "t1"}})
    assert (resp.status_code, resp.json()["message"]) == (
        400, "the API version in the data () does not match the expected API version (x.io/v1)")
    resp = await http.post(things, json={"apiVersion": "x.io/v1", "kind": "Other", "metadata": {"name": "t1"}})
    assert resp.status_code == 422
    assert resp.json()["message"] == 'Other.x.io "t1" is invalid: kind: Invalid value: "Other": must be Thing'
    assert resp.json()["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "kind",
                                                 "message": 'Invalid value: "Other": must be Thing'}]


async def test_a_custom_resource_type_error_shows_the_json_type_seen(http: httpx2.AsyncClient) -> None:
    crd = _crd()
    crd["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"weight": {"type": "integer"}}}}}}
    await http.post(CRDS, json=crd)
    resp = await http.post("/apis/x.io/v1/namespaces/default/things", json={
        "apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "t1"}, "spec": {"weight": "heavy"}})
    assert resp.json()["message"] == ('Thing.x.io "t1" is invalid: spec.weight: Invalid value: "string": '
                                      'spec.weight in body must be of type integer: "string"')


async def test_built_in_routes_refuse_media_types_with_go_restfuls_texts(http: httpx2.AsyncClient) -> None:
    r = await http.get(f"{NS}/configmaps", headers={"Accept": "application/xml"})
    assert (r.status_code, r.json()["message"]) == (406, (
        "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, "
        "application/vnd.kubernetes.protobuf, application/json;stream=watch, "
        "application/vnd.kubernetes.protobuf;stream=watch"))
    r = await http.get(f"{NS}/configmaps/x", headers={"Accept": "application/xml"})
    assert r.json()["message"].endswith("representations: application/json, application/yaml, "
                                        "application/vnd.kubernetes.protobuf")
    r = await http.patch(f"{NS}/configmaps/x", content=b"{}", headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["reason"], r.json()["message"]) == (
        415, "UnsupportedMediaType", "415: Unsupported Media Type")


async def test_a_field_selector_on_a_kind_without_field_labels_names_the_two_it_knows(
        http: httpx2.AsyncClient) -> None:
    r = await http.get(f"{NS}/configmaps", params={"fieldSelector": "spec.x=y"})
    assert (r.status_code, r.json()["message"]) == (
        400, '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"')
    r = await http.get(f"{NS}/pods", params={"fieldSelector": "spec.hostname=x"})
    assert r.json()["message"] == "field label not supported: spec.hostname"


async def test_deleting_a_namespace_sets_no_grace_period_and_no_generation(http: httpx2.AsyncClient) -> None:
    await http.post("/api/v1/namespaces", json={"metadata": {"name": "gone"}})
    md = (await http.delete("/api/v1/namespaces/gone")).json()["metadata"]
    assert md["deletionTimestamp"] and "deletionGracePeriodSeconds" not in md and "generation" not in md
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "held", "finalizers": ["x.io/y"]}})
    md = (await http.delete(f"{NS}/configmaps/held")).json()["metadata"]
    assert md["deletionGracePeriodSeconds"] == 0 and "generation" not in md  # markAsDeleting


async def test_the_log_of_a_pod_not_on_a_node_is_no_content(http: httpx2.AsyncClient) -> None:
    await _pod(http)
    r = await http.get(f"{NS}/pods/p1/log")
    assert (r.status_code, r.content) == (204, b"")
    r = await http.get(f"{NS}/pods/p1/log", params={"container": "nope"})  # the container is checked first
    assert (r.status_code, r.json()["message"]) == (400, "container nope is not valid for pod p1")


async def test_an_unserved_subresource_of_a_custom_resource_is_not_found_naming_the_object(
        http: httpx2.AsyncClient) -> None:
    await http.post(CRDS, json=_crd())  # no subresources
    r = await http.get("/apis/x.io/v1/namespaces/default/things/t1/status")
    assert (r.status_code, r.json()["message"]) == (404, 'things.x.io "t1" not found')
    assert r.json()["details"] == {"name": "t1", "group": "x.io", "kind": "things"}
    r = await http.get(f"{NS}/configmaps/c/status")  # a built-in kind's unknown path stays a path 404
    assert (r.status_code, r.json()["message"]) == (404, "the server could not find the requested resource")


# ---- session 15 (diff16): the LEFT list of session 14

NOT_READY_300 = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": 300}
UNREACHABLE_300 = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                   "tolerationSeconds": 300}


async def test_every_pod_tolerates_not_ready_and_unreachable_for_300_seconds(http: httpx2.AsyncClient) -> None:
    """DefaultTolerationSeconds (plugin/pkg/admission/defaulttolerationseconds)."""
    p = await _pod(http)
    assert p["spec"]["tolerations"] == [NOT_READY_300, UNREACHABLE_300]
    mine = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}
    resp = await http.post(f"{NS}/pods", json={"metadata": {"name": "p2"}, "spec": {
        "containers": [{"name": "c", "image": "busybox"}], "tolerations": [mine]}})
    assert resp.json()["spec"]["tolerations"] == [mine, UNREACHABLE_300]
    # an empty key tolerates both taints; an empty effect too, but a NoSchedule one does not
    for name, tol, added in (("p3", {"operator": "Exists"}, []),
                             ("p4", {"operator": "Exists", "effect": "NoSchedule"}, [NOT_READY_300, UNREACHABLE_300]),
                             ("p5", {"key": "node.kubernetes.io/unreachable", "operator": "Exists"}, [NOT_READY_300])):
        resp = await http.post(f"{NS}/pods", json={"metadata": {"name": name}, "spec": {
            "containers": [{"name": "c", "image": "busybox"}], "tolerations": [tol]}})
        assert resp.json()["spec"]["tolerations"] == [tol, *added], name


async def test_an_update_that_drops_the_default_tolerations_gets_them_again(http: httpx2.AsyncClient) -> None:
    """The plugin also handles Update: a PUT of the Pod as first sent is not a forbidden change."""
    p = await _pod(http)
    p["spec"].pop("tolerations")
    p["spec"]["containers"][0]["image"] = "busybox:2"
    resp = await http.put(f"{NS}/pods/p1", json=p)
    assert resp.status_code == 200, resp.text
    assert resp.json()["spec"]["tolerations"] == [NOT_READY_300, UNREACHABLE_300]


APPS = "/apis/apps/v1/namespaces/default"
BATCH = "/apis/batch/v1/namespaces/default"


def _tpl(app: str, restart: str = "Always") -> dict:
    return {"metadata": {"labels": {"app": app}}, "spec": {"restartPolicy": restart,
                                                          "containers": [{"name": "c", "image": "busybox"}]}}


async def test_a_created_workload_has_the_zero_status_go_writes(http: httpx2.AsyncClient) -> None:
    """PrepareForCreate resets status to the Go zero struct, which encoding/json writes: {} when
    every field is omitempty, the non-omitempty counters at 0."""
    d = await http.post(f"{APPS}/deployments", json={"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "d"}}, "template": _tpl("d")}})
    assert d.json()["status"] == {}
    rs = await http.post(f"{APPS}/replicasets", json={"metadata": {"name": "rs"}, "spec": {
        "selector": {"matchLabels": {"app": "rs"}}, "template": _tpl("rs")}})
    assert rs.json()["status"] == {"replicas": 0}
    ds = await http.post(f"{APPS}/daemonsets", json={"metadata": {"name": "ds"}, "spec": {
        "selector": {"matchLabels": {"app": "ds"}}, "template": _tpl("ds")}})
    assert ds.json()["status"] == {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                   "desiredNumberScheduled": 0, "numberReady": 0}
    cj = await http.post(f"{BATCH}/cronjobs", json={"metadata": {"name": "cj"}, "spec": {
        "schedule": "@hourly", "jobTemplate": {"spec": {"template": {"spec": _tpl("cj", "Never")["spec"]}}}}})
    assert cj.json()["status"] == {}
    # the job template's and its pod template's metadata are Go structs too
    assert cj.json()["spec"]["jobTemplate"]["metadata"] == {}
    assert cj.json()["spec"]["jobTemplate"]["spec"]["template"]["metadata"] == {}
    got = (await http.get(f"{BATCH}/cronjobs/cj")).json()
    assert got["status"] == {} and got["spec"]["jobTemplate"]["metadata"] == {}


async def test_a_custom_resource_is_created_without_status(http: httpx2.AsyncClient) -> None:
    await http.post(CRDS, json={**_crd(), "spec": {**_crd()["spec"], "versions": [
        {**_crd()["spec"]["versions"][0], "subresources": {"status": {}}}]}})
    r = await http.post("/apis/x.io/v1/namespaces/default/things", json={
        "apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "t1"}, "status": {"a": 1}})
    assert r.status_code == 201, r.text
    assert "status" not in r.json()


async def test_a_job_gets_its_templates_labels_and_manual_selector_false(http: httpx2.AsyncClient) -> None:
    """SetDefaults_Job: labels from the template (with the generated controller-uid and
    job-name labels), manualSelector false; a Job's own labels stay."""
    j = (await http.post(f"{BATCH}/jobs", json={"metadata": {"name": "j1"}, "spec": {
        "template": _tpl("j1", "Never")}})).json()
    uid = j["metadata"]["uid"]
    assert j["metadata"]["labels"] == {"app": "j1", "batch.kubernetes.io/controller-uid": uid,
                                       "batch.kubernetes.io/job-name": "j1", "controller-uid": uid, "job-name": "j1"}
    assert j["spec"]["manualSelector"] is False
    assert j["status"] == {}
    own = (await http.post(f"{BATCH}/jobs", json={"metadata": {"name": "j2", "labels": {"own": "x"}}, "spec": {
        "template": _tpl("j2", "Never")}})).json()
    assert own["metadata"]["labels"] == {"own": "x"}
    bare = (await http.post(f"{BATCH}/jobs", json={"metadata": {"name": "j3"}, "spec": {
        "template": {"spec": _tpl("j3", "Never")["spec"]}}})).json()
    assert set(bare["metadata"]["labels"]) == {"batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name",
                                               "controller-uid", "job-name"}


async def test_an_event_carries_the_fields_go_always_writes(http: httpx2.AsyncClient) -> None:
    ev = {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
          "reason": "R", "message": "m", "type": "Normal", "source": {"component": "x"}}
    e = (await http.post(f"{NS}/events", json=ev)).json()
    assert {k: e[k] for k in ("eventTime", "firstTimestamp", "lastTimestamp", "reportingComponent",
                              "reportingInstance")} == {"eventTime": None, "firstTimestamp": None,
                                                        "lastTimestamp": None, "reportingComponent": "",
                                                        "reportingInstance": ""}
    # no one owns a zero value: the creator's managedFields name none of them
    owned = e["metadata"]["managedFields"][0]["fieldsV1"]
    assert not {"f:eventTime", "f:reportingComponent"} & set(owned)
    v1 = (await http.get("/apis/events.k8s.io/v1/namespaces/default/events/e1")).json()
    assert v1["eventTime"] is None and v1["deprecatedFirstTimestamp"] is None
    assert "reportingController" not in v1 and "reportingInstance" not in v1  # omitempty there


async def test_a_daemonset_counts_its_template_generation_in_the_deprecated_annotation(
        http: httpx2.AsyncClient) -> None:
    """daemonset strategy PrepareForCreate/PrepareForUpdate, apps/v1 conversion."""
    ann = "deprecated.daemonset.template.generation"
    ds = (await http.post(f"{APPS}/daemonsets", json={"metadata": {"name": "ds"}, "spec": {
        "selector": {"matchLabels": {"app": "ds"}}, "template": _tpl("ds")}})).json()
    assert ds["metadata"]["annotations"] == {ann: "1"}
    patch = {"spec": {"minReadySeconds": 3}}
    r = await http.patch(f"{APPS}/daemonsets/ds", json=patch, headers={"Content-Type": "application/merge-patch+json"})
    assert r.json()["metadata"]["annotations"][ann] == "1"
    patch = {"spec": {"template": {"metadata": {"labels": {"app": "ds", "v": "2"}}}}}
    r = await http.patch(f"{APPS}/daemonsets/ds", json=patch, headers={"Content-Type": "application/merge-patch+json"})
    assert r.json()["metadata"]["annotations"][ann] == "2"
    r = await http.post(f"{APPS}/daemonsets", json={"metadata": {"name": "bad", "annotations": {ann: "x"}}, "spec": {
        "selector": {"matchLabels": {"app": "ds"}}, "template": _tpl("ds")}})
    assert (r.status_code, r.json()["message"]) == (
        400, 'DaemonSet in version "v1" cannot be handled as a DaemonSet: strconv.ParseInt: parsing "x": invalid syntax')


async def test_a_type_error_does_not_hide_a_required_field_beside_it(http: httpx2.AsyncClient) -> None:
    """apiextensions validates a custom resource in one pass: the type error, the missing
    required field, and the cause saying the rules were not checked."""
    crd = _crd()
    crd["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["head"], "properties": {
            "head": {"type": "object"}, "workers": {"type": "array", "items": {"type": "object"}}},
            "x-kubernetes-validations": [{"rule": "has(self.head)"}]}}}}
    await http.post(CRDS, json=crd)
    resp = await http.post("/apis/x.io/v1/namespaces/default/things", json={
        "apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "t1"}, "spec": {"workers": "x"}})
    assert resp.status_code == 422
    assert resp.json()["message"] == (
        'Thing.x.io "t1" is invalid: [spec.workers: Invalid value: "string": spec.workers in body must be of type '
        'array: "string", spec.head: Required value, <nil>: Invalid value: null: some validation rules were not '
        'checked because the object was invalid; correct the existing errors to complete validation]')
    assert [(c["reason"], c["field"]) for c in resp.json()["details"]["causes"]] == [
        ("FieldValueTypeInvalid", "spec.workers"), ("FieldValueRequired", "spec.head"), ("FieldValueInvalid", "<nil>")]


async def test_a_body_that_is_not_json_is_refused_with_gos_syntax_error(http: httpx2.AsyncClient) -> None:
    """The JSON serializer's Interpret fails first (transformDecodeError: the kind is unknown, so
    the body is quoted, summarizeData)."""
    r = await http.post(f"{NS}/configmaps", content=b"{not json", headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["message"]) == (
        400, "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse "
             "error: invalid character 'n' looking for beginning of object key string ({not json)")
    long = b'{"metadata": {"name": "x"}, "data": {"a": "b"},}'
    r = await http.put(f"{NS}/configmaps/x", content=long, headers={"Content-Type": "application/json"})
    assert r.json()["message"] == (
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse "
        "error: invalid character '}' looking for beginning of object key string "
        """({"metadata": {"name": "x"}, "d ...)""")  # the first 30 bytes


async def test_a_patch_that_does_not_decode_is_an_error_decoding_patch(http: httpx2.AsyncClient) -> None:
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "c"}})
    r = await http.patch(f"{NS}/configmaps/c", content=b"{", headers={"Content-Type": "application/merge-patch+json"})
    assert (r.status_code, r.json()["message"]) == (400, "error decoding patch: unexpected end of JSON input")
    r = await http.patch(f"{NS}/configmaps/c", content=b"[1]", headers={"Content-Type": "application/merge-patch+json"})
    assert r.json()["message"] == ("error decoding patch: json: cannot unmarshal array into Go value of type "
                                   "map[string]interface {}")


async def test_a_built_in_kinds_decoding_errors_are_400_cannot_be_handled(http: httpx2.AsyncClient) -> None:
    r = await http.post(f"{NS}/configmaps", json={"metadata": "nope"})
    assert (r.status_code, r.json()["message"]) == (
        400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal string into Go '
             "struct field ConfigMap.metadata of type v1.ObjectMeta")
    r = await http.post(f"{NS}/pods", json={"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "lots"}}}]}})
    assert (r.status_code, r.json()["reason"], r.json()["message"]) == (
        400, "BadRequest", 'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular '
                           "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


async def test_a_continue_token_that_is_not_base64_names_the_decoders_error(http: httpx2.AsyncClient) -> None:
    """storage.DecodeContinue: base64.RawURLEncoding's CorruptInputError."""
    for token, byte in (("bogus", 4), ("ab!cd", 2)):
        r = await http.get(f"{NS}/configmaps", params={"limit": "1", "continue": token})
        assert (r.status_code, r.json()["message"]) == (
            400, f"invalid continue token: continue key is not valid: illegal base64 data at input byte {byte}")


async def test_a_body_of_another_built_in_kind_fails_its_conversion(http: httpx2.AsyncClient) -> None:
    """The decoder reads the body as the kind it names and cannot convert it into the URL's kind
    (differential run, session 16: cm-wrong-kind)."""
    resp = await http.post(f"{NS}/configmaps", json={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "w"}})
    assert (resp.status_code, resp.json()["reason"], resp.json()["message"]) == (
        400, "BadRequest", 'Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to '
                           '(core.ConfigMap): unknown conversion')
    resp = await http.post("/apis/apps/v1/namespaces/default/deployments",
                           json={"kind": "StatefulSet", "metadata": {"name": "w"}})
    assert resp.json()["message"] == ('StatefulSet in version "v1" cannot be handled as a Deployment: converting '
                                      '(v1.StatefulSet) to (apps.Deployment): unknown conversion')
    resp = await http.put(f"{NS}/configmaps/w", json={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w"}})
    assert resp.json()["message"].startswith('Pod in version "v1" cannot be handled as a ConfigMap: converting (v1.Pod)')
