"""The protobuf codec: wire facts of the Kubernetes encoding, Go's zero-value rules, and JSON ->
protobuf -> JSON identity for every built-in sample object and the objects pumice stores."""

from __future__ import annotations

import copy
import struct
from functools import cache
from typing import Any

import pytest
import yaml

from pumice.api import protobuf as pb
from pumice.client.base import ApiError, is_already_exists
from pumice.testing.cluster import local_cluster

from .conftest import SHARED


@cache
def _builtin_sample_objects() -> list[dict[str, Any]]:
    out = []
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for f in sorted((SHARED / "samples").rglob("*.y*ml")):
        try:
            docs = list(yaml.load_all(f.read_text(), Loader=loader))
        except yaml.YAMLError:
            continue
        out += [d for d in docs if isinstance(d, dict)
                and pb.message_for(str(d.get("apiVersion", "")), str(d.get("kind", ""))) is not None]
    return out


def _canonical_quantities(obj: Any) -> Any:
    """Quantities written as YAML numbers (``cpu: 1``) travel as their string, as in Go."""
    if isinstance(obj, dict):
        return {k: ({r: str(q) for r, q in v.items()} if k in ("requests", "limits") and isinstance(v, dict)
                    else _canonical_quantities(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_canonical_quantities(v) for v in obj]
    return obj


def test_every_builtin_sample_object_round_trips_through_protobuf() -> None:
    samples = copy.deepcopy(_builtin_sample_objects())
    kinds = {d["kind"] for d in samples}
    assert {"ConfigMap", "Service", "Deployment", "Secret", "Pod", "CustomResourceDefinition"} <= kinds
    for d in samples:
        want = d if d["kind"] == "CustomResourceDefinition" else _canonical_quantities(d)
        assert pb.decode_object(pb.encode_object(d)) == want, d["metadata"].get("name")


async def test_every_stored_builtin_sample_object_round_trips_through_protobuf() -> None:
    async with local_cluster() as c:
        stored = []
        for d in copy.deepcopy(_builtin_sample_objects()):
            if d["kind"] == "CustomResourceDefinition":
                continue
            d = {**d, "metadata": {**d["metadata"], "namespace": "default"}}
            if c.scheme.by_api_version_kind(d["apiVersion"], d["kind"]) is None:
                continue
            try:
                stored.append(await c.client.create(d))
            except ApiError as e:  # the same name in two samples
                if not is_already_exists(e):
                    raise
        assert {o["kind"] for o in stored} >= {"ConfigMap", "Service", "Deployment", "Secret"}
        for obj in stored:
            assert pb.decode_object(pb.encode_object(obj)) == obj, obj["metadata"]["name"]


def test_envelope_is_k8s_magic_then_runtime_unknown() -> None:
    data = pb.encode_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}})
    assert data[:4] == b"k8s\x00"
    # Unknown.typeMeta (field 1, length-delimited) holds apiVersion (1) and kind (2)
    assert data[4] == 0x0A and data[6:10] == b"\x0a\x02v1"
    assert data[10:21] == b"\x12\x09ConfigMap"


def test_field_numbers_and_types_follow_the_upstream_messages() -> None:
    # Service.spec (3) -> ServiceSpec.ports (1) -> ServicePort.port (3, varint), targetPort (4, IntOrString)
    raw = pb.encode("k8s.io.api.core.v1.ServicePort", {"port": 80, "targetPort": "http"})
    assert raw == b"\x18\x50" + b"\x22\x08" + b"\x08\x01" + b"\x1a\x04http"
    # ObjectMeta.creationTimestamp (8) is a Time {seconds (1)}
    raw = pb.encode("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", {"creationTimestamp": "1970-01-01T00:01:40Z"})
    assert raw == b"\x42\x02\x08\x64"


def test_negative_integers_are_ten_byte_varints() -> None:
    raw = pb.encode("k8s.io.api.scheduling.v1.PriorityClass", {"value": -5})
    assert raw == b"\x10" + b"\xfb\xff\xff\xff\xff\xff\xff\xff\xff\x01"
    assert pb.decode("k8s.io.api.scheduling.v1.PriorityClass", raw) == {"value": -5}


def test_go_zero_values_in_omitempty_fields_decode_as_unset() -> None:
    # what a Go client sends for a Pod with only a container name: every non-pointer field
    # containers[0].name, restartPolicy "" (3), dnsPolicy "" (6), hostNetwork false (11)
    spec = b"\x12\x06\x0a\x04main" + b"\x1a\x00" + b"\x32\x00" + b"\x58\x00"
    got = pb.decode("k8s.io.api.core.v1.PodSpec", spec)
    assert got == {"containers": [{"name": "main"}]}


def test_non_pointer_zero_time_is_null_and_intorstr_zero_is_kept() -> None:
    cond = pb.decode("k8s.io.api.core.v1.PodCondition", b"\x0a\x05Ready" + b"\x1a\x00")
    assert cond == {"type": "Ready", "lastProbeTime": None}
    port = pb.decode("k8s.io.api.core.v1.ServicePort", b"\x18\x50\x22\x04\x08\x00\x10\x00")
    assert port == {"port": 80, "targetPort": 0}


def test_inlined_structs_share_their_parents_json_object() -> None:
    vol = {"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}}
    raw = pb.encode("k8s.io.api.core.v1.Volume", vol)
    assert pb.decode("k8s.io.api.core.v1.Volume", raw) == vol
    probe = {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 5}
    assert pb.decode("k8s.io.api.core.v1.Probe", pb.encode("k8s.io.api.core.v1.Probe", probe)) == probe


def test_secret_bytes_are_base64_in_json() -> None:
    s = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "aGVsbG8="}}
    data = pb.encode_object(s)
    assert b"hello" in data
    assert pb.decode_object(data) == s


def test_watch_frame_is_length_prefixed_watch_event() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    frame = pb.encode_watch_event("ADDED", obj)
    (size,) = struct.unpack(">I", frame[:4])
    assert size == len(frame) - 4
    assert pb.decode_watch_event(frame[4:]) == ("ADDED", obj)


def test_unknown_kind_and_bad_bytes_raise() -> None:
    with pytest.raises(pb.ProtobufError):
        pb.encode_object({"apiVersion": "ray.io/v1", "kind": "RayCluster"})
    with pytest.raises(pb.ProtobufError):
        pb.decode_object(b"not protobuf")
    with pytest.raises(pb.ProtobufError):
        pb.decode_object(pb.MAGIC + b"\x0a\xff")


def test_drop_zero_values_leaves_pointers_and_required_fields() -> None:
    d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "generateName": ""},
         "spec": {"replicas": 0, "paused": False, "minReadySeconds": 0,
                  "template": {"spec": {"nodeName": "", "containers": [{"name": "", "ports": [
                      {"containerPort": 0, "hostPort": 0}], "resources": {"limits": {"cpu": 1}}}]}}}}
    pb.drop_zero_values(d)
    assert d["metadata"] == {"name": "d"}
    assert d["spec"] == {"replicas": 0, "template": {"spec": {"containers": [{"name": "", "ports": [
        {"containerPort": 0}], "resources": {"limits": {"cpu": "1"}}}]}}}


def test_every_served_builtin_kind_has_a_protobuf_message() -> None:
    from pumice.api.scheme import Scheme

    custom_groups = ("ray.io", "volcano.sh")
    for rk in Scheme.builtin():
        if rk.group.endswith(custom_groups):
            continue
        assert pb.message_for(rk.api_version, rk.kind) is not None, rk
