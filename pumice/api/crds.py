"""The CustomResourceDefinitions pumice installs at start: ray.io/v1 RayCluster, RayJob, RayService;
scheduling.volcano.sh/v1beta1 Queue, PodGroup; batch.volcano.sh/v1alpha1 Job; bus.volcano.sh/v1alpha1
Command, CronJob; topology.volcano.sh/v1alpha1 HyperNode; flow.volcano.sh/v1alpha1 JobTemplate, JobFlow; shard.volcano.sh/v1alpha1 NodeShard. Their ``openAPIV3Schema`` is generated from the msgspec models in :mod:`pumice.api.ray.types`
and :mod:`pumice.api.volcano.types`.

Generation (:func:`structural_schema`): walk ``msgspec.inspect.type_info`` of the model; structs
become ``type: object`` with ``properties`` and ``required`` (fields without a Python default, or
marked required); ``X | None`` becomes X; ``int | str`` becomes ``anyOf: [integer, string]`` with
``x-kubernetes-int-or-string``; ``dict[str, X]`` becomes ``additionalProperties``; ``Any`` (and
``dict[str, Any]``) becomes ``x-kubernetes-preserve-unknown-fields``. Field metadata adds
``format``, ``enum``, bounds and patterns, and publishes the Python default as the CRD
``default`` only where the model marks it (see :func:`pumice.api.schema.crd_default`).

Embedded Kubernetes types (PodTemplateSpec, Service, EnvVar, ...) are lightkube's models and are
expanded too, with fix-ups for what lightkube types loosely: resource lists and ``sizeLimit``/
``divisor`` are quantities, ``int | str`` ports are int-or-string, untyped maps are string maps,
template ``metadata`` has controller-gen's five fields, and the Kubernetes ``+default`` values
(``protocol: TCP``, ``name: ""``...) are published. What lightkube's models do not say, the Go
types do, and :mod:`pumice.api.protobuf`'s schema records it (tools/gen_protobuf_schema.py): each
embedded field gets the ``format: int32``/``int64`` of its Go integer type (also on list items and
map values) and controller-gen's markers from its Go comments, ``x-kubernetes-list-type``,
``x-kubernetes-list-map-keys`` and ``x-kubernetes-map-type`` (``+structType=atomic`` types such as
``LocalObjectReference``, also where another struct inlines one). So unknown fields inside Pod
templates are pruned (rejected under ``fieldValidation=Strict``), wrong types and out-of-range
integers (``containerPort: 3000000000``) are refused with 422 at create, and server-side apply
merges the embedded lists by their keys, as upstream. At every field both have, the served
schemas carry exactly the formats and markers of upstream's CRD files (tests/api/test_crds.py).

Deviates: lightkube follows a newer Kubernetes than the upstream CRDs, so Pod templates accept a
few newer fields (with their formats and markers); only the storage version of each kind is
served (upstream also serves ray.io/v1alpha1). No ``description`` is published, so the served CRDs never equal upstream's files: a server-side
apply of one conflicts on the atomic ``spec.versions`` with the field manager ``pumice`` that
installed it (:meth:`pumice.apiserver.server.APIServer.apply_crds`), as kube-apiserver answers
whoever applies over another manager's CRD. The KubeRay CRDs' CEL rules
(``x-kubernetes-validations``) are generated from the models (:mod:`pumice.api.ray.types`);
HyperNode's selector rules are not, its admission webhook checks the same with the same messages.

Mirrors: kuberay ray-operator/config/crd/bases/ray.io_*.yaml and volcano
config/crd/volcano/bases/*.yaml (names, scope, subresources, printer columns).
"""

from __future__ import annotations

import copy
import enum
import functools
from dataclasses import dataclass, field
from typing import Any

import msgspec
import msgspec.inspect as mi
from lightkube.models.meta_v1 import ObjectMeta

from pumice.api import Obj, protobuf, scheme
from pumice.api.ray import types as ray
from pumice.api.schema import CRD_DEFAULT_MARK, CRD_REQUIRED_MARK, QUANTITY_PATTERN
from pumice.api.scheme import ResourceKind
from pumice.api.volcano import types as volcano

_OPAQUE: Obj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_MARKS = (CRD_DEFAULT_MARK, CRD_REQUIRED_MARK)


def _is_embedded_kube_type(cls: type) -> bool:
    return cls.__module__.startswith("lightkube.")


#: Fields of Kubernetes types that lightkube types loosely but the API declares as quantities.
_QUANTITY_FIELDS = frozenset({"limits", "requests", "overhead", "capacity", "allocatable", "hard", "used"})
_QUANTITY_SCALARS = frozenset({"sizeLimit", "divisor"})
#: ``metadata`` of an embedded template, as controller-gen publishes it.
_EMBEDDED_META: Obj = {
    "type": "object",
    "properties": {
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "name": {"type": "string"},
        "namespace": {"type": "string"},
    },
}


#: Schema keys the Kubernetes API declares (``+default`` markers, enums) that lightkube's models
#: do not carry, keyed by (lightkube class name, wire field name).
_KUBE_FIELD_EXTRAS: dict[tuple[str, str], Obj] = {
    ("AzureDiskVolumeSource", "fsType"): {"default": "ext4"},
    ("AzureDiskVolumeSource", "readOnly"): {"default": False},
    ("Condition", "status"): {"enum": ["True", "False", "Unknown"]},
    ("ConfigMapEnvSource", "name"): {"default": ""},
    ("ConfigMapKeySelector", "name"): {"default": ""},
    ("ConfigMapProjection", "name"): {"default": ""},
    ("ConfigMapVolumeSource", "name"): {"default": ""},
    ("ContainerPort", "protocol"): {"default": "TCP"},
    ("FileKeySelector", "optional"): {"default": False},
    ("GRPCAction", "service"): {"default": ""},
    ("ISCSIVolumeSource", "iscsiInterface"): {"default": "default"},
    ("LocalObjectReference", "name"): {"default": ""},
    ("RBDVolumeSource", "keyring"): {"default": "/etc/ceph/keyring"},
    ("RBDVolumeSource", "pool"): {"default": "rbd"},
    ("RBDVolumeSource", "user"): {"default": "admin"},
    ("ScaleIOVolumeSource", "fsType"): {"default": "xfs"},
    ("ScaleIOVolumeSource", "storageMode"): {"default": "ThinProvisioned"},
    ("SecretEnvSource", "name"): {"default": ""},
    ("SecretKeySelector", "name"): {"default": ""},
    ("SecretProjection", "name"): {"default": ""},
    ("ServicePort", "protocol"): {"default": "TCP"},
}
#: Required lists where the Kubernetes API and lightkube disagree.
_KUBE_REQUIRED: dict[str, list[str]] = {"PortStatus": ["error", "port", "protocol"]}


@functools.cache
def _kube_messages() -> dict[tuple[str, str], protobuf.Message]:
    """The protobuf schema's messages by (lightkube models module, class name):
    ``("core_v1", "PodSpec")`` -> ``k8s.io.api.core.v1.PodSpec``."""
    out: dict[tuple[str, str], protobuf.Message] = {}
    for name, msg in protobuf.schema().messages.items():
        package, _, cls = name.rpartition(".")
        group, _, version = package.rpartition(".")
        out.setdefault((f"{group.rpartition('.')[2]}_{version}", cls), msg)
    return out


def _kube_message(cls: type) -> protobuf.Message | None:
    """The protobuf message of a lightkube model class (None when the schema has none)."""
    return _kube_messages().get((cls.__module__.rpartition(".")[2], cls.__name__))


def _wire_field(msg: protobuf.Message, name: str) -> protobuf.Field | None:
    """The field of ``msg`` with JSON name ``name``, looking into inlined members (the
    ``LocalObjectReference`` in ``ConfigMapKeySelector``), as lightkube flattens them."""
    f = msg.by_name.get(name)
    if f is not None:
        return f
    for member in msg.inline:
        inner = protobuf.schema().messages.get(member.type)
        found = _wire_field(inner, name) if inner is not None else None
        if found is not None:
            return found
    return None


def _map_type(msg: protobuf.Message) -> str:
    """The ``+structType`` of a message, or else of a struct it inlines (controller-gen flattens
    ``ConfigMapEnvSource``'s ``LocalObjectReference`` and keeps its ``atomic``); "" for none."""
    if msg.map_type:
        return msg.map_type
    for member in msg.inline:
        inner = protobuf.schema().messages.get(member.type)
        found = _map_type(inner) if inner is not None else ""
        if found:
            return found
    return ""


_INT_FORMATS = frozenset({"int32", "int64"})


def _add_wire_facts(sub: Obj, f: protobuf.Field) -> None:
    """Add to a field's schema what the Go type says and lightkube's model does not: the
    integer format (``int32``/``int64``, also on list items and map values) and the list/map
    markers (``x-kubernetes-list-type``, ``-list-map-keys``, ``-map-type``), as controller-gen
    writes them."""
    target = sub
    while target.get("type") == "array" and isinstance(target.get("items"), dict):
        target = target["items"]
    if f.map_value:
        addl = target.get("additionalProperties")
        if f.map_value in _INT_FORMATS and isinstance(addl, dict) and addl.get("type") == "integer":
            addl["format"] = f.map_value
    elif f.type in _INT_FORMATS and target.get("type") == "integer":
        target["format"] = f.type
    if f.list_type and sub.get("type") == "array":
        sub["x-kubernetes-list-type"] = f.list_type
        if f.list_map_keys:
            sub["x-kubernetes-list-map-keys"] = list(f.list_map_keys)
    if f.map_type and sub.get("type") == "object":
        sub["x-kubernetes-map-type"] = f.map_type


def _quantity() -> Obj:
    return {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True,
            "pattern": QUANTITY_PATTERN}


def _kube_schema(t: mi.Type, name: str, stack: tuple[type, ...]) -> Obj:
    """Schema of a lightkube (Kubernetes core) type, with the fix-ups lightkube's loose typing
    needs: quantities, int-or-string unions, string maps, and template metadata."""
    if isinstance(t, mi.UnionType):
        members = [m for m in t.types if not isinstance(m, mi.NoneType)]
        if len(members) == 1:
            return _kube_schema(members[0], name, stack)
        kinds = {type(m) for m in members}
        if kinds == {mi.IntType, mi.StrType}:
            return {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
        return dict(_OPAQUE)
    if isinstance(t, mi.StructType):
        if t.cls is ObjectMeta:
            return copy.deepcopy(_EMBEDDED_META)
        if t.cls in stack or len(stack) > 24:
            return dict(_OPAQUE)
        props: Obj = {}
        required: list[str] = []
        cls_name = t.cls.__name__
        msg = _kube_message(t.cls)
        for f in t.fields:
            sub = _kube_schema(f.type, f.encode_name, (*stack, t.cls))
            wire = _wire_field(msg, f.encode_name) if msg is not None else None
            if wire is not None:
                _add_wire_facts(sub, wire)
            sub.update(copy.deepcopy(_KUBE_FIELD_EXTRAS.get((cls_name, f.encode_name), {})))
            props[f.encode_name] = sub
            if f.required:
                required.append(f.encode_name)
        required = _KUBE_REQUIRED.get(cls_name, required)
        out: Obj = {"type": "object", "properties": dict(sorted(props.items()))}
        if required:
            out["required"] = sorted(required)
        map_type = _map_type(msg) if msg is not None else ""
        if map_type:
            out["x-kubernetes-map-type"] = map_type
        return out
    if isinstance(t, mi.DictType):
        if name in _QUANTITY_FIELDS:
            return {"type": "object", "additionalProperties": _quantity()}
        if isinstance(t.value_type, mi.AnyType):
            return {"type": "object", "additionalProperties": {"type": "string"}}
        return {"type": "object", "additionalProperties": _kube_schema(t.value_type, name, stack)}
    if isinstance(t, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
        return {"type": "array", "items": _kube_schema(t.item_type, name, stack)}
    if isinstance(t, mi.StrType) and name in _QUANTITY_SCALARS:
        return _quantity()
    if isinstance(t, mi.DateTimeType):
        return {"type": "string", "format": "date-time"}
    return _schema_of(t)


def _schema_of(t: mi.Type) -> Obj:
    if isinstance(t, mi.Metadata):
        out = _schema_of(t.type)
        if t.extra_json_schema:
            out.update(copy.deepcopy(t.extra_json_schema))
        return out
    if isinstance(t, mi.UnionType):
        members = [m for m in t.types if not isinstance(m, mi.NoneType)]
        if len(members) == 1:
            return _schema_of(members[0])
        return {"anyOf": [_schema_of(m) for m in members]}
    if isinstance(t, mi.StructType):
        if _is_embedded_kube_type(t.cls):
            return _kube_schema(t, "", ())
        return _struct_schema(t)
    if isinstance(t, mi.DictType):
        if isinstance(t.value_type, mi.AnyType):
            return dict(_OPAQUE)
        return {"type": "object", "additionalProperties": _schema_of(t.value_type)}
    if isinstance(t, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
        return {"type": "array", "items": _schema_of(t.item_type)}
    if isinstance(t, mi.BoolType):
        return {"type": "boolean"}
    if isinstance(t, mi.IntType):
        return {"type": "integer"}
    if isinstance(t, mi.FloatType):
        return {"type": "number"}
    if isinstance(t, mi.StrType | mi.DateTimeType):
        return {"type": "string"}
    if isinstance(t, mi.AnyType):
        return {"x-kubernetes-preserve-unknown-fields": True}
    raise TypeError(f"no structural schema for {t!r}")


def _wire_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    return msgspec.to_builtins(value)


def _struct_schema(t: mi.StructType) -> Obj:
    props: Obj = {}
    required: list[str] = []
    for f in t.fields:
        sub = _schema_of(f.type)
        publish_default = bool(sub.pop(CRD_DEFAULT_MARK, False))
        if sub.pop(CRD_REQUIRED_MARK, False) or f.required:
            required.append(f.encode_name)
        if publish_default and f.default is not msgspec.NODEFAULT:
            sub["default"] = _wire_default(f.default)
        elif publish_default and f.default_factory is not msgspec.NODEFAULT:
            sub["default"] = _wire_default(f.default_factory())
        props[f.encode_name] = sub
    out: Obj = {"type": "object", "properties": dict(sorted(props.items()))}
    if required:
        out["required"] = sorted(required)
    return out


def _cached_schema(cls: type) -> Obj:
    info = mi.type_info(cls)
    if not isinstance(info, mi.StructType):
        raise TypeError(f"{cls!r} is not a msgspec Struct")
    schema = _struct_schema(info)
    props = schema["properties"]
    # the root keeps apiVersion/kind as strings and metadata as an opaque object, as upstream
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    props["metadata"] = {"type": "object"}
    schema.pop("required", None)
    schema["properties"] = dict(sorted(props.items()))
    return schema


@functools.cache
def _schema_json(cls: type) -> bytes:
    return msgspec.json.encode(_cached_schema(cls))


def structural_schema(cls: type) -> Obj:
    """The ``openAPIV3Schema`` of a top-level model (a fresh copy; callers may mutate it).

    Generated once per process and cached as JSON; each call decodes a new copy (about a
    millisecond, where ``copy.deepcopy`` would take a quarter second for a RayJob).

    Raises:
        TypeError: ``cls`` is not a msgspec Struct or holds a type with no structural schema.
    """
    schema: Obj = msgspec.json.decode(_schema_json(cls))
    return schema


@dataclass(frozen=True)
class CrdSpec:
    """What a CRD publishes: the kind as :mod:`pumice.api.scheme` declares it (names, scope,
    subresources), the model its schema comes from, and the printer columns (upstream values)."""

    model: type
    resource: ResourceKind
    printer_columns: tuple[Obj, ...] = field(default_factory=tuple)

    @property
    def group(self) -> str:
        return self.resource.group

    @property
    def version(self) -> str:
        return self.resource.version

    @property
    def kind(self) -> str:
        return self.resource.kind

    @property
    def plural(self) -> str:
        return self.resource.plural

    @property
    def scope(self) -> str:
        return "Namespaced" if self.resource.namespaced else "Cluster"

    @property
    def short_names(self) -> tuple[str, ...]:
        return self.resource.short_names

    @property
    def categories(self) -> tuple[str, ...]:
        return self.resource.categories

    @property
    def status_subresource(self) -> bool:
        return "status" in self.resource.subresources


def _col(name: str, json_path: str, type_: str = "string", priority: int = 0) -> Obj:
    col: Obj = {"jsonPath": json_path, "name": name, "type": type_}
    if priority:
        col["priority"] = priority
    return col


CRD_SPECS: tuple[CrdSpec, ...] = (
    CrdSpec(ray.RayCluster, scheme.RAY_CLUSTER, printer_columns=(
        _col("desired workers", ".status.desiredWorkerReplicas", "integer"),
        _col("available workers", ".status.availableWorkerReplicas", "integer"),
        _col("cpus", ".status.desiredCPU"),
        _col("memory", ".status.desiredMemory"),
        _col("gpus", ".status.desiredGPU"),
        _col("tpus", ".status.desiredTPU", priority=1),
        _col("status", ".status.state"),
        _col("age", ".metadata.creationTimestamp", "date"),
        _col("head pod IP", ".status.head.podIP", priority=1),
        _col("head service IP", ".status.head.serviceIP", priority=1),
    )),
    CrdSpec(ray.RayJob, scheme.RAY_JOB, printer_columns=(
        _col("job status", ".status.jobStatus"),
        _col("deployment status", ".status.jobDeploymentStatus"),
        _col("ray cluster name", ".status.rayClusterName"),
        _col("start time", ".status.startTime"),
        _col("end time", ".status.endTime"),
        _col("age", ".metadata.creationTimestamp", "date"),
    )),
    CrdSpec(ray.RayService, scheme.RAY_SERVICE, printer_columns=(
        _col("service status", ".status.serviceStatus"),
        _col("num serve endpoints", ".status.numServeEndpoints"),
    )),
    CrdSpec(volcano.Queue, scheme.QUEUE, printer_columns=(_col("PARENT", ".spec.parent"),)),
    CrdSpec(volcano.PodGroup, scheme.POD_GROUP, printer_columns=(
                _col("STATUS", ".status.phase"),
                _col("minMember", ".spec.minMember", "integer"),
                _col("RUNNINGS", ".status.running", "integer"),
                _col("AGE", ".metadata.creationTimestamp", "date"),
                _col("QUEUE", ".spec.queue", priority=1),
            )),
    CrdSpec(volcano.Job, scheme.VCJOB, printer_columns=(
                _col("STATUS", ".status.state.phase"),
                _col("minAvailable", ".status.minAvailable", "integer"),
                _col("RUNNINGS", ".status.running", "integer"),
                _col("AGE", ".metadata.creationTimestamp", "date"),
                _col("QUEUE", ".spec.queue", priority=1),
            )),
    CrdSpec(volcano.Command, scheme.COMMAND),
    CrdSpec(volcano.CronJob, scheme.CRON_JOB),
    CrdSpec(volcano.JobTemplate, scheme.JOB_TEMPLATE),
    CrdSpec(volcano.NodeShard, scheme.NODE_SHARD, printer_columns=(_col("AGE", ".metadata.creationTimestamp", "date"),)),
    CrdSpec(volcano.JobFlow, scheme.JOB_FLOW, printer_columns=(_col("Status", ".status.state.phase"),
                                                               _col("Age", ".metadata.creationTimestamp", "date"))),
    CrdSpec(volcano.HyperNode, scheme.HYPER_NODE, printer_columns=(
        _col("Tier", ".spec.tier"), _col("TierName", ".spec.tierName"), _col("NodeCount", ".status.nodeCount", "integer"),
        _col("Age", ".metadata.creationTimestamp", "date"),
    )),
)


def crd_for(spec: CrdSpec) -> Obj:
    """The apiextensions.k8s.io/v1 CustomResourceDefinition document of one kind."""
    names: Obj = {"kind": spec.kind, "listKind": f"{spec.kind}List", "plural": spec.plural,
                  "singular": spec.kind.lower()}
    if spec.short_names:
        names["shortNames"] = list(spec.short_names)
    if spec.categories:
        names["categories"] = list(spec.categories)
    version: Obj = {
        "name": spec.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": structural_schema(spec.model)},
        "subresources": {"status": {}} if spec.status_subresource else {},
    }
    if spec.printer_columns:
        version["additionalPrinterColumns"] = [dict(c) for c in spec.printer_columns]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{spec.plural}.{spec.group}",
                     "labels": {"app.kubernetes.io/managed-by": "pumice"}},
        "spec": {"group": spec.group, "names": names, "scope": spec.scope, "versions": [version]},
    }


def builtin_crds() -> list[Obj]:
    """The seven CRDs pumice installs at start (fresh copies, in a fixed order: RayCluster,
    RayJob, RayService, Queue, PodGroup, vcjob, Command).

    Raises:
        TypeError: a model holds a type with no structural schema (a programming error).
    """
    return [crd_for(s) for s in CRD_SPECS]


def crd_spec(group: str, kind: str) -> CrdSpec | None:
    """The spec of a built-in CRD by group and kind (None when pumice does not ship it)."""
    return next((s for s in CRD_SPECS if s.group == group and s.kind == kind), None)
