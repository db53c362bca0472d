"""storage.k8s.io/v1 CSIDriver, CSINode, VolumeAttachment and CSIStorageCapacity: served,
defaulted and validated as kube-apiserver serves them. The expected objects, causes and kubectl
columns were taken from a real kube-apiserver v1.34.4 (tools/build_kube.py) answering the same
requests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from pumice.client.base import ApiError
from pumice.testing.cluster import HttpServer, LocalCluster, serve_http
from pumice.testing.kubectl import Kubectl

S = "storage.k8s.io/v1"
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
             "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def obj(kind: str, name: str, namespace: str | None = None, **fields: Any) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if namespace:
        md["namespace"] = namespace
    return {"apiVersion": S, "kind": kind, "metadata": md, **fields}


def attachment(name: str, **spec: Any) -> dict[str, Any]:
    return obj("VolumeAttachment", name, spec={"attacher": "a", "nodeName": "n", "source": {"persistentVolumeName": "p"},
                                               **spec})


async def causes_of(cluster: LocalCluster, o: dict[str, Any]) -> list[tuple[str, str, str]]:
    with pytest.raises(ApiError) as e:
        await cluster.client.create(o)
    assert (e.value.code, e.value.reason) == (422, "Invalid")
    return [(c["field"], c["reason"], c["message"]) for c in e.value.status["details"]["causes"]]


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("storagekinds")) as s:
        yield s


async def test_discovery_lists_the_csi_kinds_with_the_volume_attachment_status(cluster: LocalCluster,
                                                                               http: httpx2.AsyncClient) -> None:
    doc = (await http.get("/apis/storage.k8s.io/v1")).json()
    got = {r["name"]: (r["kind"], r["namespaced"]) for r in doc["resources"]}
    assert got == {"csidrivers": ("CSIDriver", False), "csinodes": ("CSINode", False),
                   "csistoragecapacities": ("CSIStorageCapacity", True), "storageclasses": ("StorageClass", False),
                   "volumeattachments": ("VolumeAttachment", False),
                   "volumeattachments/status": ("VolumeAttachment", False)}


async def test_a_csi_driver_is_defaulted_and_counts_spec_changes_from_the_first(cluster: LocalCluster) -> None:
    out = await cluster.client.create(obj("CSIDriver", "hostpath.csi.k8s.io", spec={}))
    assert out["spec"] == {"attachRequired": True, "podInfoOnMount": False, "volumeLifecycleModes": ["Persistent"],
                           "storageCapacity": False, "fsGroupPolicy": "ReadWriteOnceWithFSType",
                           "requiresRepublish": False, "seLinuxMount": False}
    assert "generation" not in out["metadata"]
    out["spec"]["podInfoOnMount"] = True
    changed = await cluster.client.update(out)
    assert changed["metadata"]["generation"] == 1
    changed["spec"]["attachRequired"] = False
    with pytest.raises(ApiError) as e:
        await cluster.client.update(changed)
    assert [(c["field"], c["message"]) for c in e.value.status["details"]["causes"]] == [
        ("spec.attachedRequired", "Invalid value: false: field is immutable")]


async def test_csi_driver_causes_are_upstreams(cluster: LocalCluster) -> None:
    got = await causes_of(cluster, obj("CSIDriver", "Bad_Name", spec={
        "fsGroupPolicy": "X", "volumeLifecycleModes": ["Y"],
        "tokenRequests": [{"audience": "a", "expirationSeconds": 5}, {"audience": "a"}]}))
    assert got == [
        ("metadata.name", "FieldValueInvalid", f'Invalid value: "Bad_Name": {SUBDOMAIN}'),
        ("spec.fsGroupPolicy", "FieldValueNotSupported",
         'Unsupported value: "X": supported values: "File", "None", "ReadWriteOnceWithFSType"'),
        ("spec.tokenRequests[0].expirationSeconds", "FieldValueInvalid",
         "Invalid value: 5: may not specify a duration less than 10 minutes"),
        ("spec.tokenRequests[1].audience", "FieldValueDuplicate", 'Duplicate value: "a"'),
        ("spec.volumeLifecycleModes", "FieldValueNotSupported",
         'Unsupported value: "Y": supported values: "Persistent", "Ephemeral"')]


async def test_a_csi_node_without_drivers_stores_null_and_its_drivers_are_validated(cluster: LocalCluster) -> None:
    empty = await cluster.client.create(obj("CSINode", "n3"))
    assert empty["spec"] == {"drivers": None}
    got = await causes_of(cluster, obj("CSINode", "n2", spec={"drivers": [
        {"name": "Bad_D", "nodeID": ""},
        {"name": "Bad_D", "nodeID": "x", "topologyKeys": ["", "a", "a", "b c"], "allocatable": {"count": -1}}]}))
    assert got == [
        ("spec.drivers[0].name", "FieldValueInvalid", f'Invalid value: "Bad_D": {SUBDOMAIN}'),
        ("spec.drivers[0].nodeID", "FieldValueRequired", "Required value"),
        ("spec.drivers[1].name", "FieldValueInvalid", f'Invalid value: "Bad_D": {SUBDOMAIN}'),
        ("spec.drivers[1].allocatable.count", "FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0"),
        ("spec.drivers[1].name", "FieldValueDuplicate", 'Duplicate value: "Bad_D"'),
        ("spec.drivers[1]", "FieldValueRequired", "Required value"),
        ("spec.drivers[1]", "FieldValueInvalid", 'Invalid value: "": name part must be non-empty'),
        ("spec.drivers[1]", "FieldValueInvalid", f'Invalid value: "": {NAME_PART}'),
        ("spec.drivers[1]", "FieldValueDuplicate", 'Duplicate value: "a"'),
        ("spec.drivers[1]", "FieldValueInvalid", f'Invalid value: "b c": {NAME_PART}')]


async def test_volume_attachment_causes_are_upstreams(cluster: LocalCluster) -> None:
    assert await causes_of(cluster, obj("VolumeAttachment", "va2", spec={
        "attacher": "", "nodeName": "Bad_Node", "source": {}})) == [
        ("spec.attacher", "FieldValueRequired", "Required value"),
        ("spec.source", "FieldValueRequired",
         "Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"),
        ("spec.nodeName", "FieldValueInvalid", f'Invalid value: "Bad_Node": {SUBDOMAIN}'),
        ("spec.attacher", "FieldValueRequired", "Required value"),
        ("spec.attacher", "FieldValueInvalid", f'Invalid value: "": {SUBDOMAIN}')]
    assert await causes_of(cluster, attachment("va3", attacher="Bad_A", source={"persistentVolumeName": "Bad/PV"})) == [
        ("spec.attacher", "FieldValueInvalid", f'Invalid value: "Bad_A": {SUBDOMAIN}'),
        ("spec.source.persistentVolumeName", "FieldValueInvalid", f'Invalid value: "Bad/PV": {SUBDOMAIN}')]
    assert await causes_of(cluster, attachment("va5", source={"persistentVolumeName": "p", "inlineVolumeSpec": {}})) \
        == [("spec.source", "FieldValueForbidden",
             "Forbidden: must specify exactly one of inlineVolumeSpec and persistentVolumeName")]


async def test_a_volume_attachment_starts_detached_keeps_its_spec_and_takes_status_writes(
        cluster: LocalCluster, http: httpx2.AsyncClient) -> None:
    out = await cluster.client.create(attachment("va6") | {"status": {"attached": True}})
    assert out["status"] == {"attached": False}
    out["spec"]["nodeName"] = "other"
    with pytest.raises(ApiError) as e:
        await cluster.client.update(out)
    assert [(c["field"], c["reason"]) for c in e.value.status["details"]["causes"]] == [("spec", "FieldValueInvalid")]
    path = "/apis/storage.k8s.io/v1/volumeattachments/va6/status"
    r = await http.patch(path, content=b'{"status":{"attached":true,"attachmentMetadata":{"k":"v"}}}',
                         headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200 and r.json()["status"] == {"attached": True, "attachmentMetadata": {"k": "v"}}
    # MutableCSINodeAllocatableCount is off: an errorCode the stored error did not have is dropped
    dropped = await http.patch(path, content=b'{"status":{"attachError":{"message":"m","errorCode":-1}}}',
                               headers={"Content-Type": "application/merge-patch+json"})
    assert dropped.status_code == 200
    assert dropped.json()["status"]["attachError"] == {"time": None, "message": "m"}
    long = await http.patch(path, content=b'{"status":{"detachError":{"message":"' + b"m" * 1025 + b'"}}}',
                            headers={"Content-Type": "application/merge-patch+json"})
    assert long.status_code == 422
    too_long = {"reason": "FieldValueTooLong", "field": "status.detachError.message",
                "message": "Too long: may not be more than 262144 bytes"}
    assert long.json()["details"]["causes"] == [too_long, too_long]  # upstream validates twice


async def test_csi_storage_capacity_causes_and_immutable_fields_are_upstreams(cluster: LocalCluster) -> None:
    assert await causes_of(cluster, obj("CSIStorageCapacity", "c2", "default", storageClassName="Bad_Class",
                                        capacity="-1", nodeTopology={"matchLabels": {"a b": "c"}})) == [
        ("nodeTopology.matchLabels", "FieldValueInvalid", f'Invalid value: "a b": {NAME_PART}'),
        ("storageClassName", "FieldValueInvalid", f'Invalid value: "Bad_Class": {SUBDOMAIN}'),
        ("capacity", "FieldValueInvalid", 'Invalid value: "-1": must be greater than or equal to 0')]
    out = await cluster.client.create(obj("CSIStorageCapacity", "c1", "default", storageClassName="standard",
                                          capacity="10Gi"))
    out["capacity"] = "20Gi"
    updated = await cluster.client.update(out)
    assert updated["capacity"] == "20Gi"
    updated["storageClassName"] = "other"
    with pytest.raises(ApiError) as e:
        await cluster.client.update(updated)
    assert [(c["field"], c["message"]) for c in e.value.status["details"]["causes"]] == [
        ("storageClassName", 'Invalid value: "other": field is immutable')]


def test_kubectl_gets_the_csi_kinds_with_upstreams_columns(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "csi.yaml"
    manifest.write_text(f"""
apiVersion: {S}
kind: CSIDriver
metadata: {{name: hostpath.csi.k8s.io}}
spec: {{}}
---
apiVersion: {S}
kind: CSINode
metadata: {{name: node-1}}
spec:
  drivers:
  - {{name: hostpath.csi.k8s.io, nodeID: node-1, topologyKeys: [topology.hostpath.csi/node]}}
---
apiVersion: {S}
kind: VolumeAttachment
metadata: {{name: va1}}
spec: {{attacher: hostpath.csi.k8s.io, nodeName: node-1, source: {{persistentVolumeName: pv1}}}}
---
apiVersion: {S}
kind: CSIStorageCapacity
metadata: {{name: cap1}}
storageClassName: standard
capacity: 10Gi
""")
    kubectl("apply", "-f", str(manifest))
    rows = [ln.split() for ln in kubectl("get", "csidrivers,csinodes,volumeattachments,csistoragecapacities")
            .stdout.splitlines() if ln.strip()]
    assert rows[0] == ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY", "TOKENREQUESTS",
                       "REQUIRESREPUBLISH", "MODES", "AGE"]
    assert rows[1][:7] == ["csidriver.storage.k8s.io/hostpath.csi.k8s.io", "true", "false", "false", "<unset>", "false",
                           "Persistent"]
    assert rows[2] == ["NAME", "DRIVERS", "AGE"] and rows[3][:2] == ["csinode.storage.k8s.io/node-1", "1"]
    assert rows[4] == ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"]
    assert rows[5][:5] == ["volumeattachment.storage.k8s.io/va1", "hostpath.csi.k8s.io", "pv1", "node-1", "false"]
    assert rows[6] == ["NAME", "CREATED", "AT"] and rows[7][0] == "csistoragecapacity.storage.k8s.io/cap1"
