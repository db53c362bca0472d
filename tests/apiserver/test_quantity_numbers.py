"""A resource.Quantity written as a JSON number is taken in every Quantity field of a built-in kind,
not only in ResourceList maps, and stored as its canonical string, as kube-apiserver's
Quantity.UnmarshalJSON / MarshalJSON do (trial 16 F-3: ``averageValue: 10`` of an autoscaling/v2
HPA, a CSIStorageCapacity's ``capacity`` and a Pod's ``emptyDir.sizeLimit`` were refused with 422
"must be of type string")."""

from __future__ import annotations

import httpx2
import pytest

from pumice.api import protobuf as pb
from pumice.api import quantity


@pytest.mark.parametrize(("number", "stored"), [
    (10, "10"), (1000000, "1M"), (1073741824, "1073741824"), (0.5, "500m"), (0, "0"), (-2, "-2"), ("1Gi", "1Gi"),
    (True, True), (None, None),
])
def test_a_quantity_number_becomes_its_canonical_string(number: object, stored: object) -> None:
    assert pb.quantity_number(number) == stored


async def test_an_hpa_metric_target_number_is_stored_as_a_string(http: httpx2.AsyncClient) -> None:
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "hq"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                    "maxReplicas": 3, "metrics": [
                        {"type": "Pods", "pods": {"metric": {"name": "qps"},
                                                  "target": {"type": "AverageValue", "averageValue": 10}}},
                        {"type": "Object", "object": {
                            "describedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                            "metric": {"name": "hits"}, "target": {"type": "Value", "value": 1000000}}}]}}
    r = await http.post("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", json=hpa)
    assert r.status_code == 201, r.text
    got = (await http.get("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/hq")).json()
    assert got["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == "10"
    assert got["spec"]["metrics"][1]["object"]["target"]["value"] == "1M"


async def test_a_csi_storage_capacity_number_is_stored_as_a_string(http: httpx2.AsyncClient) -> None:
    cap = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity", "metadata": {"name": "c1"},
           "storageClassName": "sc", "capacity": 100, "maximumVolumeSize": 50}
    r = await http.post("/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities", json=cap)
    assert r.status_code == 201, r.text
    assert (r.json()["capacity"], r.json()["maximumVolumeSize"]) == ("100", "50")


async def test_a_pod_size_limit_and_requests_numbers_are_stored_as_strings(http: httpx2.AsyncClient) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
           "spec": {"containers": [{"name": "c", "image": "busybox",
                                    "resources": {"requests": {"cpu": 1, "memory": 1073741824}}}],
                    "volumes": [{"name": "v", "emptyDir": {"sizeLimit": 1000000}}]}}
    r = await http.post("/api/v1/namespaces/default/pods", json=pod)
    assert r.status_code == 201, r.text
    got = (await http.get("/api/v1/namespaces/default/pods/p1")).json()["spec"]
    assert got["volumes"][0]["emptyDir"]["sizeLimit"] == "1M"
    assert got["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1073741824"}


async def test_a_quantity_of_the_wrong_type_is_still_a_decode_error(http: httpx2.AsyncClient) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p2"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}],
                    "volumes": [{"name": "v", "emptyDir": {"sizeLimit": True}}]}}
    r = await http.post("/api/v1/namespaces/default/pods", json=pod)
    assert r.status_code == 400, r.text
    assert r.json()["message"].startswith('Pod in version "v1" cannot be handled as a Pod: quantities must match')


async def test_a_status_quantity_number_is_stored_as_a_string(http: httpx2.AsyncClient) -> None:
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c1"},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": 1073741824}}}}
    r = await http.post("/api/v1/namespaces/default/persistentvolumeclaims", json=pvc)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["resources"]["requests"]["storage"] == "1073741824"
    r = await http.patch("/api/v1/namespaces/default/persistentvolumeclaims/c1/status",
                         json={"status": {"capacity": {"storage": 2000}}},
                         headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    got = (await http.get("/api/v1/namespaces/default/persistentvolumeclaims/c1")).json()
    assert got["status"]["capacity"] == {"storage": "2k"}
    # the second status write of an unchanged spec takes the registry's checked-before path
    r = await http.patch("/api/v1/namespaces/default/persistentvolumeclaims/c1/status",
                         json={"status": {"capacity": {"storage": 3000}, "allocatedResources": {"storage": 0.5}}},
                         headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    got = (await http.get("/api/v1/namespaces/default/persistentvolumeclaims/c1")).json()
    assert (got["status"]["capacity"], got["status"]["allocatedResources"]) == ({"storage": "3k"}, {"storage": "500m"})


# -- quantity strings: stored as kube-apiserver stores them (ParseQuantity(text).String()) -------

async def test_a_pods_quantity_strings_are_stored_as_kube_apiserver_stores_them(http: httpx2.AsyncClient) -> None:
    # kube-apiserver v1.34.4 stores requests 1000m/1024Mi/0.5/1e3 as 1/1Gi/500m/1e3; a ResourceList
    # value is rounded up to milli-units by core/v1 defaulting (1.5n -> 1m), a single Quantity not
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ps"},
           "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {
               "requests": {"cpu": "1.5n", "memory": "1024Mi", "example.com/a": "1e3"},
               "limits": {"cpu": "1000m", "memory": "1.5Gi", "example.com/a": "1e3"}}}],
               "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1.5n"}}]}}
    r = await http.post("/api/v1/namespaces/default/pods", json=pod)
    assert r.status_code == 201, r.text
    spec = (await http.get("/api/v1/namespaces/default/pods/ps")).json()["spec"]
    assert spec["containers"][0]["resources"] == {
        "requests": {"cpu": "1m", "memory": "1Gi", "example.com/a": "1e3"},
        "limits": {"cpu": "1", "memory": "1536Mi", "example.com/a": "1e3"}}
    assert spec["volumes"][0]["emptyDir"]["sizeLimit"] == "2n"


async def test_a_nodes_status_quantities_are_stored_as_kube_apiserver_stores_them(http: httpx2.AsyncClient) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"capacity": {"cpu": "8000m", "memory": "34359738368", "pods": "110"}}}
    r = await http.post("/api/v1/nodes", json=node)
    assert r.status_code == 201, r.text
    assert r.json()["status"]["capacity"] == {"cpu": "8", "memory": "34359738368", "pods": "110"}
    r = await http.patch("/api/v1/nodes/n1/status", headers={"Content-Type": "application/merge-patch+json"},
                         json={"status": {"allocatable": {"cpu": "7.5", "memory": "32768Mi"}}})
    assert r.status_code == 200, r.text
    assert r.json()["status"]["allocatable"] == {"cpu": "7500m", "memory": "32Gi"}


async def test_templates_quota_and_limit_ranges_store_quantities_as_kube_apiserver(http: httpx2.AsyncClient) -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
               "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1.500", "memory": "2048Ki"}}}]}}}}
    r = await http.post("/apis/apps/v1/namespaces/default/deployments", json=dep)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "1.500", "memory": "2Mi"}  # Go keeps a text its parser finds canonical, as written
    rq = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
          "spec": {"hard": {"requests.cpu": "2000m", "requests.memory": "1.5Gi", "pods": "1000"}}}
    r = await http.post("/api/v1/namespaces/default/resourcequotas", json=rq)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["hard"] == {"requests.cpu": "2", "requests.memory": "1536Mi", "pods": "1k"}
    lr = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l"},
          "spec": {"limits": [{"type": "Container", "max": {"cpu": "4000m"}, "default": {"memory": "0.5Gi"}}]}}
    r = await http.post("/api/v1/namespaces/default/limitranges", json=lr)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["limits"][0]["max"] == {"cpu": "4"}
    assert r.json()["spec"]["limits"][0]["default"]["memory"] == "512Mi"


async def test_a_custom_resources_quantities_are_kept_as_written(http: httpx2.AsyncClient) -> None:
    # a CRD's schema has no Quantity type (int-or-string with a pattern): kube-apiserver keeps the text
    q = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "qq"},
         "spec": {"weight": 1, "capability": {"cpu": "1000m", "memory": "1024Mi"}}}
    r = await http.post("/apis/scheduling.volcano.sh/v1beta1/queues", json=q)
    assert r.status_code == 201, r.text
    got = (await http.get("/apis/scheduling.volcano.sh/v1beta1/queues/qq")).json()
    assert got["spec"]["capability"] == {"cpu": "1000m", "memory": "1024Mi"}


async def test_a_server_side_apply_of_a_non_canonical_quantity_again_is_no_write() -> None:
    """Applying the same configuration again, later, with ``cpu: 1000m`` (stored ``"1"``) left
    the object as it was but for the apply's managedFields time, and pumice wrote it (a new
    resourceVersion, a watch event, on every apply). kube-apiserver v1.34.4 keeps the
    resourceVersion: its IgnoreManagedFieldsTimestampsTransformer keeps the old times when
    nothing else changed."""
    from pumice._util.clock import FakeClock
    from pumice.testing.cluster import local_cluster

    clock = FakeClock()
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "q1"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "q1"}}, "template": {
                      "metadata": {"labels": {"app": "q1"}}, "spec": {"containers": [
                          {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1000m",
                                                                                     "memory": "1024Mi"}}}]}}}}
    path = "/apis/apps/v1/namespaces/default/deployments/q1?fieldManager=kubectl"
    headers = {"Content-Type": "application/apply-patch+yaml"}
    async with local_cluster(clock=clock) as c, httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=c.app), base_url="http://apiserver",
            headers={"Authorization": f"Bearer {c.server.token}"}) as http:
        first = await http.patch(path, json=deployment, headers=headers)
        assert first.status_code == 201, first.text
        clock.advance(5)
        again = await http.patch(path, json=deployment, headers=headers)
        assert again.status_code == 200, again.text
        assert again.json()["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] == {
            "cpu": "1", "memory": "1Gi"}
        assert again.json()["metadata"] == first.json()["metadata"]
        # a real change still writes, with the apply's new time
        deployment["spec"]["replicas"] = 2
        clock.advance(5)
        changed = await http.patch(path, json=deployment, headers=headers)
        assert changed.json()["metadata"]["resourceVersion"] != first.json()["metadata"]["resourceVersion"]
        assert changed.json()["metadata"]["managedFields"][0]["time"] != \
            first.json()["metadata"]["managedFields"][0]["time"]


# -- quantity numbers in exponent form: Go parses the literal's own text -----------------------

async def test_a_quantity_number_keeps_the_literal_go_finds_canonical(http: httpx2.AsyncClient) -> None:
    # Quantity.UnmarshalJSON hands ParseQuantity the number's bytes, which keeps a canonical text as
    # written: kube-apiserver v1.34.4 stores an HPA target 1E3 as "1E3" (tests/realcluster,
    # hpa-quantity-number-exponent); 1.5e9 is not canonical (scale 8) and becomes "1500e6"
    pod = (b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pe"}, "spec": {"containers": [{'
           b'"name": "c", "image": "busybox", "resources": {'
           b'"requests": {"cpu": 1e-3, "memory": 12e6, "example.com/a": 1E3},'
           b'"limits": {"cpu": 1.500, "memory": 1.5e9, "example.com/a": 1E3}}}],'
           b'"volumes": [{"name": "v", "emptyDir": {"sizeLimit": 1e3}}]}}')
    r = await http.post("/api/v1/namespaces/default/pods", content=pod,
                        headers={"Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    spec = (await http.get("/api/v1/namespaces/default/pods/pe")).json()["spec"]
    assert spec["containers"][0]["resources"] == {
        "requests": {"cpu": "1e-3", "memory": "12e6", "example.com/a": "1E3"},
        "limits": {"cpu": "1.500", "memory": "1500e6", "example.com/a": "1E3"}}
    assert spec["volumes"][0]["emptyDir"]["sizeLimit"] == "1e3"
    quota = (b'{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "qe"}, "spec": {"hard": {'
             b'"pods": 1e3, "services": 1E3, "requests.cpu": 1.5e3, "requests.memory": 12e6, "limits.cpu": 1e-3,'
             b'"limits.memory": 2.0}}}')
    r = await http.post("/api/v1/namespaces/default/resourcequotas", content=quota,
                        headers={"Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["hard"] == {"pods": "1e3", "services": "1E3", "requests.cpu": "1500",
                                        "requests.memory": "12e6", "limits.cpu": "1e-3", "limits.memory": "2"}
    r = await http.put("/api/v1/namespaces/default/resourcequotas/qe", content=quota.replace(
        b'"name": "qe"', b'"name": "qe", "resourceVersion": "' + r.json()["metadata"]["resourceVersion"].encode()
        + b'"').replace(b'"pods": 1e3', b'"pods": 2E3'), headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["hard"]["pods"] == "2E3"
    hpa = (b'{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "hq"}, '
           b'"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, '
           b'"maxReplicas": 3, "metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"}, '
           b'"target": {"type": "AverageValue", "averageValue": 1E3}}}]}}')
    r = await http.post("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", content=hpa,
                        headers={"Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == "1E3"


def test_a_float_literal_is_remembered_until_plain_floats() -> None:
    from pumice.apiserver.decode import decode_body, plain_floats

    literals: list[quantity.FloatLiteral] = []
    body = decode_body(b'{"a": [1e3, 1.5, {"b": 2.50}], "c": 1E3, "d": 7}', yaml_ok=False, literals=literals)
    assert [x.text for x in literals] == ["1e3", "2.50", "1E3"]
    assert plain_floats(body) == {"a": [1000.0, 1.5, {"b": 2.5}], "c": 1000.0, "d": 7}
    assert {type(x) for x in (body["a"][0], body["a"][2]["b"], body["c"])} == {float}


async def test_a_float_literal_outside_a_quantity_is_a_plain_number(http: httpx2.AsyncClient) -> None:
    """A literal that no Quantity reads is the number it writes: in an int64 field Go's decode
    error about that field, in a float64 field (a CRD schema's ``maximum``) the plain number,
    stored and answered as JSON (a FloatLiteral reaching the encoder would be a 500)."""
    json_h = {"Content-Type": "application/json"}
    pod = (b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pt"}, "spec": {'
           b'"terminationGracePeriodSeconds": 3e1, "containers": [{"name": "c", "image": "busybox"}]}}')
    r = await http.post("/api/v1/namespaces/default/pods", content=pod, headers=json_h)
    assert (r.status_code, r.json()["reason"]) == (400, "BadRequest")
    assert r.json()["message"] == ('Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number 3e1 '
                                   "into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64")
    crd = (b'{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",'
           b'"metadata":{"name":"dials.example.com"},"spec":{"group":"example.com","scope":"Namespaced",'
           b'"names":{"kind":"Dial","plural":"dials","singular":"dial"},"versions":[{"name":"v1","served":true,'
           b'"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object",'
           b'"properties":{"level":{"type":"number","maximum":2.50}}}}}}}]}}')
    r = await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", content=crd, headers=json_h)
    assert r.status_code == 201, r.text
    r = await http.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/dials.example.com")
    assert b'"level":{"type":"number","maximum":2.5}' in r.content
    level = r.json()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["level"]
    assert type(level["maximum"]) is float and level["maximum"] == 2.5


@pytest.mark.parametrize("literal", ["3e1", "1E2", "30.00", "2.5", "1e400", "-0.0"])
async def test_a_number_an_integer_field_cannot_take_is_quoted_as_written(http: httpx2.AsyncClient,
                                                                          literal: str) -> None:
    """Go's UnmarshalTypeError quotes the number's literal text ("number " + the bytes); pumice
    quoted the float it decoded (``number 30.0`` for 3e1, ``number inf`` for 1e400: review 18 R-13)."""
    pod = (b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pt"}, "spec": {'
           b'"terminationGracePeriodSeconds": %s, "containers": [{"name": "c", "image": "busybox"}]}}' % literal.encode())
    r = await http.post("/api/v1/namespaces/default/pods", content=pod, headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert r.json()["message"] == (
        f'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number {literal} into Go struct '
        "field PodSpec.spec.terminationGracePeriodSeconds of type int64")


# -- a literal too large for a float (trial 18 F-4): Go parses its text as any other -------------

async def test_a_quantity_number_too_large_for_a_float_is_stored_as_its_string_would_be(
        http: httpx2.AsyncClient) -> None:
    # 1e400 is inf as a float64, but Quantity.UnmarshalJSON hands ParseQuantity the bytes, which
    # reads it as the string "1e400" (stored "10e399"); pumice stored null or answered 500
    json_h = {"Content-Type": "application/json"}
    quota = b'{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"big"},"spec":{"hard":{"cpu":1e400}}}'
    r = await http.post("/api/v1/namespaces/default/resourcequotas", content=quota, headers=json_h)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["hard"] == {"cpu": "10e399"}
    limits = (b'{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"lr"},"spec":{"limits":['
              b'{"type":"Container","max":{"cpu":1e400}}]}}')
    r = await http.post("/api/v1/namespaces/default/limitranges", content=limits, headers=json_h)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["limits"][0]["max"] == {"cpu": "10e399"}
    claim = (b'{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"cb"},"spec":{'
             b'"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":1e400}}}}')
    r = await http.post("/api/v1/namespaces/default/persistentvolumeclaims?dryRun=All", content=claim,
                        headers=json_h)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["resources"]["requests"] == {"storage": "10e399"}
    pod = (b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pb"},"spec":{"containers":[{"name":"c",'
           b'"image":"busybox","resources":{"requests":{"cpu":%s}}}],"overhead":{"cpu":%s}}}')
    r = await http.post("/api/v1/namespaces/default/pods", content=pod % (b"1e400", b"1e400"), headers=json_h)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["overhead"] == {"cpu": "10e399"}
    r = await http.post("/api/v1/namespaces/default/pods", content=pod.replace(b'"pb"', b'"pn"') % (b"-1e400", b"1"),
                        headers=json_h)
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"][0] == {
        "reason": "FieldValueInvalid", "field": "spec.containers[0].resources.requests[cpu]",
        "message": 'Invalid value: "-10e399": must be greater than or equal to 0'}
    assert (await http.get("/api/v1/namespaces/default/resourcequotas/big")).json()["spec"]["hard"] == \
        {"cpu": "10e399"}


async def test_a_yaml_quantity_too_large_or_infinite_is_never_a_500(http: httpx2.AsyncClient) -> None:
    # go-yaml keeps a plain scalar ParseFloat cannot read as its text (1.0e+400, a quantity);
    # .inf and .nan are no quantity (pumice's Fraction overflowed: 500)
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: py%d}\nspec:\n  containers: [{name: c, image: b, "
           "resources: {requests: {cpu: %s}}}]\n")
    yaml_h = {"Content-Type": "application/yaml"}
    r = await http.post("/api/v1/namespaces/default/pods", content=pod % (1, "1.0e+400"), headers=yaml_h)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1.0e+400"}
    for i, value in enumerate((".inf", "-.inf", ".nan"), start=2):
        r = await http.post("/api/v1/namespaces/default/pods", content=pod % (i, value), headers=yaml_h)
        assert (r.status_code, r.json()["details"]["causes"][0]["field"]) == \
            (422, "spec.containers[0].resources.requests[cpu]"), r.text


@pytest.mark.parametrize("number", [float("inf"), float("-inf"), float("nan")])
def test_an_infinite_or_nan_float_is_no_quantity(number: float) -> None:
    with pytest.raises(quantity.QuantityError):
        quantity.parse_quantity(number)


@pytest.mark.parametrize("value", [b'"1e9223372036854775808"', b"1e999999999999999999999", b'"-1e-9223372036854775809"'])
async def test_a_quantity_exponent_beyond_int64_is_go_s_suffix_error(http: httpx2.AsyncClient, value: bytes) -> None:
    # ParseQuantity reads the exponent with strconv.ParseInt(..., 64): beyond int64 it is
    # ErrSuffix, a decode error (pumice clamped it and stored the text)
    pod = (b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"px"},"spec":{"containers":[{"name":"c",'
           b'"image":"busybox","resources":{"requests":{"cpu":%s}}}]}}')
    r = await http.post("/api/v1/namespaces/default/pods", content=pod % value,
                        headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["message"]) == (
        400, "Pod in version \"v1\" cannot be handled as a Pod: unable to parse quantity's suffix"), r.text
    r = await http.post("/api/v1/namespaces/default/pods", content=pod % b'"1e9223372036854775807"',
                        headers={"Content-Type": "application/json"})
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("text", ["1e" + "9" * 5000, "1e-" + "9" * 5000, "1e" + "1" * 20])
def test_an_exponent_of_thousands_of_digits_is_go_s_suffix_error(text: str) -> None:
    # strconv.ParseInt fails on it (ErrSuffix); Python's int() of more than 4,300 digits raised a
    # plain ValueError that callers catching QuantityError let through (review 19 R-13)
    with pytest.raises(quantity.QuantityError, match="unable to parse quantity's suffix"):
        quantity.parse_quantity(text)
    assert quantity.stored_string(text) == text


def test_an_exponents_leading_zeros_are_not_counted_as_go_s_parse_int() -> None:
    assert quantity.parse_quantity("1e" + "0" * 200 + "3") == 1000
    assert quantity.parse_quantity("2e-" + "0" * 5000 + "3") == quantity.parse_quantity("2m")
    assert quantity.stored_string("1e" + "0" * 200 + "4") == "10e3"  # scale 3 would be kept as written


@pytest.mark.parametrize(("value", "error"), [
    *((text, "unable to parse quantity's suffix") for text in ("1KK", "1Ki5", "1e", "1E+", "1mm", "1ee5")),
    ("1Q", quantity.ERR_FORMAT_WRONG)])
async def test_an_unknown_suffix_go_s_scanner_takes_is_go_s_suffix_error(http: httpx2.AsyncClient, value: str,
                                                                         error: str) -> None:
    # parseQuantityString takes every eEinumkKMGTP letter, a sign and digits as the suffix;
    # interpret then refuses an unknown one (ErrSuffix). Only a character after it is ErrFormatWrong
    pod = ('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"px"},"spec":{"containers":[{"name":"c",'
           '"image":"busybox","resources":{"requests":{"cpu":"%s"}}}]}}')
    r = await http.post("/api/v1/namespaces/default/pods", content=pod % value,
                        headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["message"]) == (
        400, f"Pod in version \"v1\" cannot be handled as a Pod: {error}"), r.text
