"""storage.k8s.io/v1 CSIDriver, CSINode, VolumeAttachment and CSIStorageCapacity: stored,
defaulted and validated as kube-apiserver does, registered as strategies
(:func:`pumice.apiserver.strategy.register`) when this module is imported (the registry imports it).

These are data kinds: CSI drivers, the external attacher and the external provisioner write and
read them. pumice runs no CSI driver (its volumes are the node agent's directories), so nothing
here acts on them; clients that list them (``kubectl get all``-style tools, operators, the
attach-detach logic of a CSI sidecar pointed at pumice) find them served with upstream's
validation.

Defaults (SetDefaults_CSIDriver): ``attachRequired`` true, ``podInfoOnMount``,
``storageCapacity``, ``requiresRepublish`` and ``seLinuxMount`` false (SELinuxMountReadWriteOncePod
is on by default), ``fsGroupPolicy`` ReadWriteOnceWithFSType, ``volumeLifecycleModes``
[Persistent]. A CSIDriver counts changes of its spec in ``metadata.generation`` (from 1 after the
first change: upstream sets none on create). A VolumeAttachment starts with
``status: {attached: false}``; its spec is immutable, its status written through
``volumeattachments/status``. A CSINode with no drivers is stored with ``spec.drivers: null``
(the Go zero value kube-apiserver writes).

Mirrors: kubernetes pkg/apis/storage/v1/defaults.go, pkg/apis/storage/validation/validation.go
(ValidateCSIDriver(Update), ValidateCSINode(Update), ValidateVolumeAttachment(V1, Update),
ValidateCSIStorageCapacity(Update)), pkg/registry/storage/{csidriver,csinode,volumeattachment,
csistoragecapacity}/strategy.go.

Deviates: a VolumeAttachment's ``inlineVolumeSpec`` is not validated as a PersistentVolume spec
(only its presence against ``persistentVolumeName``); CSIStorageCapacity's label-selector
warnings are not given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pumice.api import Obj
from pumice.api.admission import FieldCause
from pumice.api.quantity import QuantityError, canonical_string, parse_quantity
from pumice.api.scheme import ResourceKind
from pumice.api.validation import (
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    format_value,
    is_dns1123_subdomain,
    is_qualified_name,
    label_selector_causes,
    validate_object,
)
from pumice.apiserver.strategy import Strategy, register

if TYPE_CHECKING:
    from pumice.apiserver.registry import Registry

__all__ = ["csi_driver_defaults", "csi_driver_name_causes"]

FS_GROUP_POLICIES = ["File", "None", "ReadWriteOnceWithFSType"]
LIFECYCLE_MODES = ["Persistent", "Ephemeral"]
CSI_NODE_ID_MAX_LENGTH = 256  # AllowLongNodeID: the strategy always allows the longer limit
MAX_ATTACHED_VOLUME_METADATA_SIZE = 256 * (1 << 10)
MAX_VOLUME_ERROR_MESSAGE_SIZE = 1024
INT32_MAX = 2**31 - 1
_EXACTLY_ONE_SOURCE = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"


def _map(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[Obj]:
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


def _duplicate(field: str, value: Any) -> FieldCause:
    return FieldCause(field, f"Duplicate value: {format_value(value)}", "FieldValueDuplicate")


def _subdomain(field: str, value: Any) -> list[FieldCause]:
    return [field_invalid(field, value, e) for e in is_dns1123_subdomain(str(value or ""))]


def csi_driver_name_causes(name: str, field: str) -> list[FieldCause]:
    """ValidateCSIDriverName: required, 63 bytes at most, a DNS subdomain once lower-cased."""
    out = [] if name else [field_required(field)]
    if len(name) > 63:
        out.append(FieldCause(field, "Too long: may not be more than 63 bytes", "FieldValueTooLong"))
    return out + [field_invalid(field, name, e) for e in is_dns1123_subdomain(name.lower())]


def _immutable(field: str, new: Any, old: Any) -> list[FieldCause]:
    return [] if new == old else [field_invalid(field, new, "field is immutable")]


# --- CSIDriver ------------------------------------------------------------------------------------


def csi_driver_defaults(obj: Obj) -> None:
    """SetDefaults_CSIDriver, in place (see the module docstring)."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    for key, value in (("attachRequired", True), ("podInfoOnMount", False), ("storageCapacity", False),
                       ("fsGroupPolicy", "ReadWriteOnceWithFSType"), ("requiresRepublish", False),
                       ("seLinuxMount", False)):
        if spec.get(key) is None:
            spec[key] = value
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]


def _token_requests(requests: list[Obj]) -> list[FieldCause]:
    """validateTokenRequests: distinct audiences; an expiry between 10 minutes and 2^32 s."""
    out: list[FieldCause] = []
    seen: set[str] = set()
    for i, req in enumerate(requests):
        at = f"spec.tokenRequests[{i}]"
        audience = str(req.get("audience") or "")
        if audience in seen:
            out.append(_duplicate(f"{at}.audience", audience))
            continue
        seen.add(audience)
        seconds = req.get("expirationSeconds")
        if not isinstance(seconds, int):
            continue
        if seconds < 600:
            out.append(field_invalid(f"{at}.expirationSeconds", seconds, "may not specify a duration less than 10 minutes"))
        if seconds > 1 << 32:
            out.append(field_invalid(f"{at}.expirationSeconds", seconds,
                                     "may not specify a duration larger than 2^32 seconds"))
    return out


def csi_driver_spec_causes(spec: Obj) -> list[FieldCause]:
    """validateCSIDriverSpec: the defaulted booleans present (upstream's path for attachRequired
    is ``spec.attachedRequired``), fsGroupPolicy, tokenRequests, lifecycle modes, the node
    allocatable update period (10 s or more)."""
    out: list[FieldCause] = []
    for key, at in (("attachRequired", "attachedRequired"), ("podInfoOnMount", "podInfoOnMount"),
                    ("storageCapacity", "storageCapacity")):
        if spec.get(key) is None:
            out.append(field_required(f"spec.{at}"))
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in FS_GROUP_POLICIES:
        out.append(field_not_supported("spec.fsGroupPolicy", policy, FS_GROUP_POLICIES))
    out += _token_requests(_dicts(spec.get("tokenRequests")))
    for mode in spec.get("volumeLifecycleModes") or []:
        if mode not in LIFECYCLE_MODES:
            out.append(field_not_supported("spec.volumeLifecycleModes", mode, LIFECYCLE_MODES))
    if spec.get("seLinuxMount") is None:
        out.append(field_required("spec.seLinuxMount"))
    period = spec.get("nodeAllocatableUpdatePeriodSeconds")
    if isinstance(period, int) and period < 10:
        out.append(field_invalid("spec.nodeAllocatableUpdatePeriodSeconds", period,
                                 "must be greater than or equal to 10 seconds"))
    return out


class CSIDriverStrategy(Strategy):
    """CSIDrivers: defaults, generation counted from the first spec change, ValidateCSIDriver;
    on update ``attachRequired`` (path ``spec.attachedRequired``) and ``volumeLifecycleModes``
    immutable."""

    def __init__(self) -> None:
        super().__init__(defaulter=csi_driver_defaults)

    def prepare_update(self, reg: Registry, rk: ResourceKind, new: Obj, old: Obj) -> None:
        super().prepare_update(reg, rk, new, old)
        if new.get("spec") != old.get("spec"):
            new.setdefault("metadata", {})["generation"] = int((old.get("metadata") or {}).get("generation") or 0) + 1

    def validate(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
        spec = _map(obj.get("spec"))
        out = validate_object(rk, obj, old) + csi_driver_spec_causes(spec)
        if old is not None:
            ospec = _map(old.get("spec"))
            out += _immutable("spec.attachedRequired", spec.get("attachRequired"), ospec.get("attachRequired"))
            out += _immutable("spec.volumeLifecycleModes", spec.get("volumeLifecycleModes"),
                              ospec.get("volumeLifecycleModes"))
        return out


# --- CSINode --------------------------------------------------------------------------------------


def _csi_node_driver(driver: Obj, names: set[str], at: str) -> list[FieldCause]:
    """validateCSINodeDriver: the driver name (a DNS subdomain, once per node), the node ID
    (required, 256 characters at most), a non-negative allocatable count, the topology keys
    (non-empty, distinct, qualified names; upstream reports them at the driver's path)."""
    name = str(driver.get("name") or "")
    out = csi_driver_name_causes(name, f"{at}.name")
    node_id = str(driver.get("nodeID") or "")
    if not node_id:
        out.append(field_required(f"{at}.nodeID"))
    if len(node_id) > CSI_NODE_ID_MAX_LENGTH:
        out.append(field_invalid(f"{at}.nodeID", node_id, f"must be {CSI_NODE_ID_MAX_LENGTH} characters or less"))
    count = _map(driver.get("allocatable")).get("count")
    if isinstance(count, int) and count < 0:
        out.append(field_invalid(f"{at}.allocatable.count", count, "must be greater than or equal to 0"))
    if name in names:
        out.append(_duplicate(f"{at}.name", name))
    names.add(name)
    keys: set[str] = set()
    for key in driver.get("topologyKeys") or []:
        key = str(key)
        if not key:
            out.append(field_required(at))
        if key in keys:
            out.append(_duplicate(at, key))
        keys.add(key)
        out += [field_invalid(at, key, e) for e in is_qualified_name(key)]
    return out


class CSINodeStrategy(Strategy):
    """CSINodes: ``spec.drivers`` null when none; ValidateCSINode; on update an existing driver
    (same name) may change only its ``allocatable`` (MutableCSINodeAllocatableCount is beta, on
    by default)."""

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        super().prepare_create(reg, rk, obj)
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict) and "drivers" not in spec:
            spec["drivers"] = None

    def validate(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
        out = validate_object(rk, obj, old)
        names: set[str] = set()
        drivers = _dicts(_map(obj.get("spec")).get("drivers"))
        for i, driver in enumerate(drivers):
            out += _csi_node_driver(driver, names, f"spec.drivers[{i}]")
        if old is not None:
            for was in _dicts(_map(old.get("spec")).get("drivers")):
                for now in drivers:
                    if was.get("name") == now.get("name"):
                        a = {k: v for k, v in now.items() if k != "allocatable"}
                        b = {k: v for k, v in was.items() if k != "allocatable"}
                        out += _immutable("spec.drivers", a, b)
        return out


# --- VolumeAttachment -----------------------------------------------------------------------------


def _source(source: Obj) -> list[FieldCause]:
    """validateVolumeAttachmentSource: exactly one of inlineVolumeSpec and persistentVolumeName,
    the latter non-empty."""
    inline, pv = source.get("inlineVolumeSpec"), source.get("persistentVolumeName")
    if inline is None and pv is None:
        return [field_required("spec.source", _EXACTLY_ONE_SOURCE)]
    if inline is not None and pv is not None:
        return [field_forbidden("spec.source", _EXACTLY_ONE_SOURCE)]
    if pv is not None and not pv:
        return [field_required("spec.source.persistentVolumeName", "must specify non empty persistentVolumeName")]
    return []


def _volume_error(error: Any, at: str) -> list[FieldCause]:
    """validateVolumeError: a message of 1024 bytes at most, a non-negative error code."""
    if not isinstance(error, dict):
        return []
    out: list[FieldCause] = []
    if len(str(error.get("message") or "").encode()) > MAX_VOLUME_ERROR_MESSAGE_SIZE:
        # upstream reports the attachment-metadata limit here (its TooLong call passes that constant)
        out.append(FieldCause(f"{at}.message", f"Too long: may not be more than {MAX_ATTACHED_VOLUME_METADATA_SIZE} "
                                               "bytes", "FieldValueTooLong"))
    code = error.get("errorCode")
    if isinstance(code, int) and code < 0:
        out.append(field_invalid(f"{at}.errorCode", code, f"must be between 0 and {INT32_MAX}, inclusive"))
    return out


def volume_attachment_status_causes(status: Obj) -> list[FieldCause]:
    """validateVolumeAttachmentStatus: attachment metadata of 256 KiB at most, the attach and
    detach errors."""
    metadata = _map(status.get("attachmentMetadata"))
    out: list[FieldCause] = []
    if sum(len(str(k).encode()) + len(str(v).encode()) for k, v in metadata.items()) > MAX_ATTACHED_VOLUME_METADATA_SIZE:
        out.append(FieldCause("status.attachmentMetadata",
                              f"Too long: may not be more than {MAX_ATTACHED_VOLUME_METADATA_SIZE} bytes",
                              "FieldValueTooLong"))
    return out + _volume_error(status.get("attachError"), "status.attachError") + \
        _volume_error(status.get("detachError"), "status.detachError")


def _volume_attachment_causes(obj: Obj) -> list[FieldCause]:
    """ValidateVolumeAttachment (spec and status) without the metadata: attacher required, the
    source, the node name a DNS subdomain."""
    spec = _map(obj.get("spec"))
    attacher = str(spec.get("attacher") or "")
    out = [] if attacher else [field_required("spec.attacher")]
    out += _source(_map(spec.get("source")))
    out += _subdomain("spec.nodeName", str(spec.get("nodeName") or ""))
    return out + volume_attachment_status_causes(_map(obj.get("status")))


class VolumeAttachmentStrategy(Strategy):
    """VolumeAttachments: status ``{attached: false}`` on create (what a client sent is dropped),
    kept on update; Validate adds ValidateVolumeAttachmentV1 (attacher and PV name DNS
    subdomains); the spec is immutable; a status write is checked by ValidateVolumeAttachmentUpdate."""

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        super().prepare_create(reg, rk, obj)
        obj["status"] = {"attached": False}

    def validate(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
        out = validate_object(rk, obj, old) + _volume_attachment_causes(obj)
        spec = _map(obj.get("spec"))
        if old is None:
            out += csi_driver_name_causes(str(spec.get("attacher") or ""), "spec.attacher")
            pv = _map(spec.get("source")).get("persistentVolumeName")
            if pv is not None:
                out += _subdomain("spec.source.persistentVolumeName", pv)
        else:
            out += _volume_attachment_causes(obj)
            out += _immutable("spec", spec, old.get("spec"))
        return out

    def prepare_status_update(self, new: Obj, old: Obj) -> None:
        """volumeAttachmentStatusStrategy.PrepareForUpdate: an attach or detach error's
        ``errorCode`` is dropped unless the stored error had one (MutableCSINodeAllocatableCount
        is off), and the error's ``time`` is written as null when unset (Go's zero metav1.Time)."""
        status, old_status = _map(new.get("status")), _map(old.get("status"))
        for key in ("attachError", "detachError"):
            error = status.get(key)
            if not isinstance(error, dict):
                continue
            if "errorCode" in error and _map(old_status.get(key)).get("errorCode") is None:
                del error["errorCode"]
            error.setdefault("time", None)

    def validate_status(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj) -> list[FieldCause]:
        """The main resource's ValidateUpdate (the status strategy embeds it): each cause of
        ValidateVolumeAttachment comes twice, as upstream runs it twice."""
        causes = _volume_attachment_causes(obj)
        return validate_object(rk, obj, old) + causes + causes


# --- CSIStorageCapacity ---------------------------------------------------------------------------


def csi_storage_capacity_causes(obj: Obj, *, allow_invalid_label_value: bool = False) -> list[FieldCause]:
    """ValidateCSIStorageCapacity without the metadata: the node topology a label selector, the
    storage class name a DNS subdomain, the capacity not negative."""
    out = label_selector_causes(obj.get("nodeTopology"), "nodeTopology",
                                allow_invalid_label_value=allow_invalid_label_value)
    out += _subdomain("storageClassName", str(obj.get("storageClassName") or ""))
    capacity = obj.get("capacity")
    if capacity is not None:
        try:
            negative = parse_quantity(capacity) < 0
        except QuantityError:
            negative = False  # not a quantity: refused as a type error before validation
        if negative:
            out.append(field_invalid("capacity", canonical_string(capacity), "must be greater than or equal to 0"))
    return out


class CSIStorageCapacityStrategy(Strategy):
    """CSIStorageCapacities: ValidateCSIStorageCapacity (an update may keep invalid label values
    its stored selector had); on update nodeTopology and storageClassName immutable."""

    def validate(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
        out = validate_object(rk, obj, old)
        if old is None:
            return out + csi_storage_capacity_causes(obj)
        allow = bool(label_selector_causes(old.get("nodeTopology"), "nodeTopology"))
        out += csi_storage_capacity_causes(obj, allow_invalid_label_value=allow)
        out += _immutable("nodeTopology", obj.get("nodeTopology"), old.get("nodeTopology"))
        out += _immutable("storageClassName", obj.get("storageClassName") or "", old.get("storageClassName") or "")
        return out


register("storage.k8s.io", "csidrivers", CSIDriverStrategy())
register("storage.k8s.io", "csinodes", CSINodeStrategy())
register("storage.k8s.io", "volumeattachments", VolumeAttachmentStrategy())
register("storage.k8s.io", "csistoragecapacities", CSIStorageCapacityStrategy())
