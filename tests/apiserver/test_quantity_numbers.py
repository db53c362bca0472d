"""A resource.Quantity written as a JSON number is taken in every Quantity field of a built-in kind,
not only in ResourceList maps, and stored as its canonical string, as kube-apiserver's
Quantity.UnmarshalJSON / MarshalJSON do (trial 16 F-3: ``averageValue: 10`` of an autoscaling/v2
HPA, a CSIStorageCapacity's ``capacity`` and a Pod's ``emptyDir.sizeLimit`` were refused with 422
"must be of type string")."""

from __future__ import annotations

import httpx2
import pytest

from pumice.api import protobuf as pb


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
