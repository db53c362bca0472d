"""Validation of built-in objects (and object metadata of every kind) on create and update.

The API server calls :func:`validate_object` after defaulting and admission; a non-empty result
becomes a 422 Invalid ``Status`` with these causes. Messages are kube-apiserver's (the cause
``message`` is the ``field.Error`` body: ``Invalid value: "Foo": a lowercase RFC 1123 ...``).

Mirrors: kubernetes pkg/apis/core/validation/validation.go (ValidateObjectMeta, ValidatePod,
ValidatePodUpdate, ValidateService, ValidateNode, ValidateConfigMap, ValidateNamespace),
pkg/apis/apps/validation, pkg/apis/batch/validation, pkg/apis/scheduling/validation and
apimachinery pkg/util/validation (name, label and qualified-name rules).

Deviates: only the rules listed per kind below are checked (a subset of upstream's); a Job
without ``spec.selector`` is accepted (upstream generates one before validating);
CustomResourceDefinition specs are checked by the API server (pumice.apiserver.crds), not here.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

import msgspec

from pumice.api import Obj
from pumice.api.admission import FieldCause
from pumice.api.memo import FixedPoints
from pumice.api.quantity import QuantityError, parse_quantity
from pumice.api.schema import format_value, json_type_name
from pumice.api.scheme import ResourceKind
from pumice.api.selectors import SelectorError, from_label_selector

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"

DNS1123_LABEL_ERR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    f"validation is '{DNS1123_LABEL_FMT}')"
)
DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    f"validation is '{DNS1123_SUBDOMAIN_FMT}')"
)
DNS1035_LABEL_ERR = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    f"regex used for validation is '{DNS1035_LABEL_FMT}')"
)
QUALIFIED_NAME_ERR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    f"validation is '{QUALIFIED_NAME_FMT}')"
)
LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    f"'12345', regex used for validation is '{LABEL_VALUE_FMT}')"
)
CONFIG_KEY_ERR = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
    f"or 'KEY_NAME',  or 'key-name', regex used for validation is '{CONFIG_KEY_FMT}')"
)

_DNS1123_LABEL = re.compile(f"^{DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN = re.compile(f"^{DNS1123_SUBDOMAIN_FMT}$")
_DNS1035_LABEL = re.compile(f"^{DNS1035_LABEL_FMT}$")
_QUALIFIED_NAME = re.compile(f"^{QUALIFIED_NAME_FMT}$")
_LABEL_VALUE = re.compile(f"^{LABEL_VALUE_FMT}$")
_CONFIG_KEY = re.compile(f"^{CONFIG_KEY_FMT}$")
_IANA_SVC_NAME = re.compile("^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")


def _invalid(field: str, value: Any, detail: str) -> FieldCause:
    return FieldCause(field, f"Invalid value: {format_value(value)}: {detail}", "FieldValueInvalid")


def _required(field: str, detail: str = "") -> FieldCause:
    return FieldCause(field, "Required value" + (f": {detail}" if detail else ""), "FieldValueRequired")


def _forbidden(field: str, detail: str) -> FieldCause:
    return FieldCause(field, f"Forbidden: {detail}", "FieldValueForbidden")


def _duplicate(field: str, value: Any) -> FieldCause:
    return FieldCause(field, f"Duplicate value: {format_value(value)}", "FieldValueDuplicate")


def _not_supported(field: str, value: Any, supported: list[str]) -> FieldCause:
    values = ", ".join(format_value(v) for v in supported)
    return FieldCause(field, f"Unsupported value: {format_value(value)}: supported values: {values}",
                      "FieldValueNotSupported")


# --- name rules -----------------------------------------------------------------------------------


def is_dns1123_label(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1123 label (``[]`` when valid; max 63 characters)."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.match(value):
        errs.append(DNS1123_LABEL_ERR)
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1123 subdomain (max 253 characters)."""
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(DNS1123_SUBDOMAIN_ERR)
    return errs


def is_dns1035_label(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1035 label (Service names; max 63 characters)."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1035_LABEL.match(value):
        errs.append(DNS1035_LABEL_ERR)
    return errs


def is_path_segment_name(value: str) -> list[str]:
    """Problems with ``value`` as a URL path segment (RBAC object names)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def is_qualified_name(value: str) -> list[str]:
    """Problems with a label or annotation key: ``[prefix/]name`` (prefix a DNS subdomain). The
    name part is checked even when the prefix is bad, as upstream.

    Mirrors: k8s.io/apimachinery pkg/util/validation IsQualifiedName.
    """
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + e for e in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
            f"used for validation is '{QUALIFIED_NAME_FMT}') with an optional DNS subdomain prefix and "
            "'/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.match(name):
        errs.append(QUALIFIED_NAME_ERR)
    return errs


def is_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        errs.append(LABEL_VALUE_ERR)
    return errs


@functools.lru_cache(maxsize=4096)
def _key_errors(value: str) -> tuple[str, ...]:
    """:func:`is_qualified_name` of a label or annotation key, remembered (a pure function of
    the string; every Pod of a workload carries the same keys)."""
    return tuple(is_qualified_name(value))


NameRule = Callable[[str], list[str]]

_NAME_RULES: dict[tuple[str, str], NameRule] = {
    ("", "Namespace"): is_dns1123_label,
    ("", "Service"): is_dns1035_label,
    ("rbac.authorization.k8s.io", "Role"): is_path_segment_name,
    ("rbac.authorization.k8s.io", "RoleBinding"): is_path_segment_name,
    ("rbac.authorization.k8s.io", "ClusterRole"): is_path_segment_name,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): is_path_segment_name,
}


def name_rule(rk: ResourceKind) -> NameRule:
    """The metadata.name rule of a kind (DNS-1123 subdomain unless listed otherwise)."""
    return _NAME_RULES.get((rk.group, rk.kind), is_dns1123_subdomain)


# --- metadata -------------------------------------------------------------------------------------


def validate_labels(labels: Any, field: str) -> list[FieldCause]:
    """Label keys are qualified names and values label values; causes at ``field``."""
    out: list[FieldCause] = []
    if labels is None:
        return out
    if not isinstance(labels, dict):
        return [_invalid(field, labels, "must be a map of string keys to string values")]
    for k, v in labels.items():
        out += [_invalid(field, k, e) for e in _key_errors(str(k))]
        if not isinstance(v, str):
            out.append(_invalid(f"{field}[{k}]", v, "must be a string"))
        else:
            out += [_invalid(field, v, e) for e in is_label_value(v)]
    return out


#: the most bytes an object's annotations may hold, keys and values together
#: (apimachinery pkg/api/validation TotalAnnotationSizeLimitB)
TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * 1024


def annotations_too_long(annotations: dict[str, Any]) -> bool:
    """Whether keys and values together exceed :data:`TOTAL_ANNOTATION_SIZE_LIMIT_B` bytes of
    UTF-8. Mirrors: apimachinery pkg/api/validation ValidateAnnotationsSize."""
    total = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
    return total > TOTAL_ANNOTATION_SIZE_LIMIT_B


def validate_annotations(annotations: Any, field: str) -> list[FieldCause]:
    out: list[FieldCause] = []
    if annotations is None:
        return out
    if not isinstance(annotations, dict):
        return [_invalid(field, annotations, "must be a map of string keys to string values")]
    for k in annotations:
        out += [_invalid(field, k, e) for e in _key_errors(str(k).lower())]
    if annotations_too_long(annotations):
        out.append(FieldCause(field, f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT_B} bytes",
                              "FieldValueTooLong"))
    return out


def validate_owner_references(refs: Any, field: str) -> list[FieldCause]:
    """Owner references name their owner fully (version, kind, name, uid; never a core/v1 Event),
    and at most one is the controller. Causes at ``field`` (no index, as upstream).

    Mirrors: apimachinery pkg/api/validation/objectmeta.go ValidateOwnerReferences.
    """
    out: list[FieldCause] = []
    if not isinstance(refs, list):
        return out
    first_controller = ""
    for ref in refs:
        if not isinstance(ref, dict):
            continue
        api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
        # schema.FromAPIVersionAndKind: "v1" is the core group, "g/v" a group; more slashes: no version
        group, _, version = api_version.rpartition("/") if api_version.count("/") <= 1 else ("", "", "")
        if not version:
            out.append(_invalid(f"{field}.apiVersion", api_version, "version must not be empty"))
        for key in ("kind", "name", "uid"):
            if not ref.get(key):
                out.append(_invalid(f"{field}.{key}", str(ref.get(key) or ""), "must not be empty"))
        if (group, version, kind) == ("", "v1", "Event"):
            out.append(_invalid(field, ref, "/v1, Kind=Event is disallowed from being an owner"))
        if ref.get("controller") is True:
            current = f"{kind}/{ref.get('name') or ''}"
            if first_controller:
                out.append(_invalid(field, refs, "Only one reference can have Controller set to true. Found "
                                                 f'"true" in references for {first_controller} and {current}'))
            else:
                first_controller = current
    return out


def validate_finalizers(finalizers: Any, field: str) -> list[FieldCause]:
    """Finalizer names are qualified names, and ``orphan`` and ``foregroundDeletion`` exclude each
    other. Causes at ``field`` (no index, as upstream).

    Mirrors: apimachinery pkg/api/validation/objectmeta.go ValidateFinalizers.
    """
    out: list[FieldCause] = []
    if not isinstance(finalizers, list):
        return out
    for f in finalizers:
        out += [_invalid(field, f, e) for e in is_qualified_name(str(f))]
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        out.append(_invalid(field, finalizers, "finalizer orphan and foregroundDeletion cannot be both set"))
    return out


def validate_object_meta(rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
    """metadata rules of every kind: name (or generateName) and its format, namespace presence for
    namespaced kinds (the server fills it from the URL first), labels, annotations, owner
    references, finalizers, and on update name and namespace immutability."""
    out: list[FieldCause] = []
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [_required("metadata")]
    name = meta.get("name") or ""
    generate = meta.get("generateName") or ""
    rule = name_rule(rk)
    if not name and not generate:
        out.append(_required("metadata.name", "name or generateName is required"))
    if name:
        out += [_invalid("metadata.name", name, e) for e in rule(name)]
    if generate and not name:
        # upstream validates the prefix with a trailing character stripped of its last '-'
        prefix = generate[:-1] if generate.endswith("-") else generate
        out += [_invalid("metadata.generateName", generate, e) for e in rule(prefix or "a")]
    ns = meta.get("namespace") or ""
    if rk.namespaced:
        if not ns:
            out.append(_required("metadata.namespace"))
        else:
            out += [_invalid("metadata.namespace", ns, e) for e in is_dns1123_label(ns)]
    elif ns:
        out.append(_forbidden("metadata.namespace", "not allowed on this type"))
    out += validate_labels(meta.get("labels"), "metadata.labels")
    out += validate_annotations(meta.get("annotations"), "metadata.annotations")
    out += validate_owner_references(meta.get("ownerReferences"), "metadata.ownerReferences")
    out += validate_finalizers(meta.get("finalizers"), "metadata.finalizers")
    if old is not None:
        old_meta = old.get("metadata") or {}
        if name != (old_meta.get("name") or ""):
            out.append(_invalid("metadata.name", name, "field is immutable"))
        if ns != (old_meta.get("namespace") or ""):
            out.append(_invalid("metadata.namespace", ns, "field is immutable"))
        if old_meta.get("deletionTimestamp"):
            out += _no_new_finalizers(meta.get("finalizers"), old_meta.get("finalizers"))
    return out


def _no_new_finalizers(new: Any, old: Any) -> list[FieldCause]:
    """An object being deleted takes no finalizer it did not have.

    Mirrors: apimachinery pkg/api/validation/objectmeta.go ValidateNoNewFinalizers (the new names
    sorted, printed as Go's ``%#v`` of a ``[]string``)."""
    have = {str(f) for f in old} if isinstance(old, list) else set()
    extra = sorted({str(f) for f in new} - have) if isinstance(new, list) else []
    if not extra:
        return []
    listed = "[]string{" + ", ".join(json.dumps(f) for f in extra) + "}"
    return [_forbidden("metadata.finalizers",
                       f"no new finalizers can be added if the object is being deleted, found new finalizers {listed}")]


# --- pods -----------------------------------------------------------------------------------------

RESTART_POLICIES = ["Always", "OnFailure", "Never"]
PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]


def _validate_resources(res: Any, field: str) -> list[FieldCause]:
    out: list[FieldCause] = []
    if not isinstance(res, dict):
        return out
    parsed: dict[str, dict[str, Any]] = {}
    for part in ("limits", "requests"):
        values = res.get(part) or {}
        if not isinstance(values, dict):
            out.append(_invalid(f"{field}.{part}", values, "must be a map of resource names to quantities"))
            continue
        parsed[part] = {}
        for rname, q in values.items():
            try:
                amount = parse_quantity(q)
            except (QuantityError, TypeError, ValueError):
                out.append(_invalid(f"{field}.{part}[{rname}]", q,
                                    "quantities must match the regular expression "
                                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"))
                continue
            if amount < 0:
                out.append(_invalid(f"{field}.{part}[{rname}]", q, "must be greater than or equal to 0"))
            parsed[part][rname] = amount
    for rname, req in (parsed.get("requests") or {}).items():
        lim = (parsed.get("limits") or {}).get(rname)
        if lim is not None and req > lim:
            raw = (res.get("requests") or {}).get(rname)
            out.append(_invalid(f"{field}.requests", str(raw),
                                f"must be less than or equal to {rname} limit of {(res.get('limits') or {})[rname]}"))
    return out


def _validate_containers(containers: Any, field: str, names: set[str], required: bool) -> list[FieldCause]:
    out: list[FieldCause] = []
    if not containers:
        if required:
            out.append(_required(field))
        return out
    if not isinstance(containers, list):
        return [_invalid(field, containers, "must be a list of containers")]
    for i, ctr in enumerate(containers):
        out += validate_container(ctr, f"{field}[{i}]", names)
    return out


def validate_container(ctr: Any, field: str, names: set[str] | None = None) -> list[FieldCause]:
    """The causes of one container (at ``field``, e.g. ``spec.containers[0]``): name required and
    a DNS-1123 label, image required, pull policy, ports, resources, env names. ``names``: the
    container names seen so far in the Pod (a repeated name is a duplicate; this one is added);
    None: no duplicate check (the caller has its own).

    Mirrors (the subset pumice checks): kubernetes pkg/apis/core/validation/validation.go
    validateContainerCommon."""
    if not isinstance(ctr, dict):
        return [_invalid(field, ctr, "must be an object")]
    out: list[FieldCause] = []
    cf = field
    name = ctr.get("name") or ""
    if not name:
        out.append(_required(f"{cf}.name"))
    else:
        out += [_invalid(f"{cf}.name", name, e) for e in is_dns1123_label(name)]
        if names is not None:
            if name in names:
                out.append(_duplicate(f"{cf}.name", name))
            names.add(name)
    if not ctr.get("image"):
        out.append(_required(f"{cf}.image"))
    pull = ctr.get("imagePullPolicy")
    if pull and pull not in PULL_POLICIES:
        out.append(_not_supported(f"{cf}.imagePullPolicy", pull, PULL_POLICIES))
    port_names: set[str] = set()
    for j, port in enumerate(ctr.get("ports") or []):
        pf = f"{cf}.ports[{j}]"
        cp = port.get("containerPort") if isinstance(port, dict) else None
        if not isinstance(cp, int) or isinstance(cp, bool) or not 1 <= cp <= 65535:
            out.append(_invalid(f"{pf}.containerPort", cp, "must be between 1 and 65535, inclusive"))
        pname = port.get("name") if isinstance(port, dict) else None
        if pname:
            if pname in port_names:
                out.append(_duplicate(f"{pf}.name", pname))
            port_names.add(pname)
        proto = port.get("protocol") if isinstance(port, dict) else None
        if proto and proto not in PROTOCOLS:
            out.append(_not_supported(f"{pf}.protocol", proto, PROTOCOLS))
    out += _validate_resources(ctr.get("resources"), f"{cf}.resources")
    for j, env in enumerate(ctr.get("env") or []):
        if not isinstance(env, dict) or not env.get("name"):
            out.append(_required(f"{cf}.env[{j}].name"))
    return out


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode

#: Pod specs (by field, restart policies and JSON encoding) in which validate_pod_spec found
#: nothing: it is a pure function of those, and a metadata write sends the same spec again
_VALID = FixedPoints()


def _valid_key(rule: Any, value: Any) -> tuple[Any, bytes] | None:
    """The memo key of ``value`` under ``rule``, or None when it cannot be one: an encoding
    with ``null`` (see :meth:`~pumice.api.memo.FixedPoints.usable`), or a value that does not
    decode back to itself (a tuple, a set: JSON would not tell them from a list)."""
    try:
        encoded = _encode(value)
    except (TypeError, msgspec.EncodeError):
        return None
    if not _VALID.usable(encoded) or _decode(encoded) != value:
        return None
    return (rule, encoded)


def _remember_valid(key: tuple[Any, bytes] | None, out: list[FieldCause]) -> list[FieldCause]:
    if key is not None and not out:
        _VALID.add(key)
    return out


def validate_pod_spec(spec: Any, field: str, restart_policies: list[str] | None = None) -> list[FieldCause]:
    """Rules for a PodSpec at ``field`` (``spec`` or ``spec.template.spec``): containers present,
    names unique DNS-1123 labels, images set, quantities parse, restartPolicy in
    ``restart_policies`` (default Always/OnFailure/Never)."""
    if not isinstance(spec, dict):
        return [_required(field)]
    out: list[FieldCause] = []
    key = _valid_key(("podspec", field, tuple(restart_policies or ())), spec)
    if key is not None and key in _VALID:
        return out
    out = _validate_pod_spec(spec, field, restart_policies)
    return _remember_valid(key, out)


def _validate_pod_spec(spec: Obj, field: str, restart_policies: list[str] | None) -> list[FieldCause]:
    out: list[FieldCause] = []
    names: set[str] = set()
    out += _validate_containers(spec.get("initContainers"), f"{field}.initContainers", names, False)
    out += _validate_containers(spec.get("containers"), f"{field}.containers", names, True)
    policy = spec.get("restartPolicy")
    allowed = restart_policies or RESTART_POLICIES
    if policy is not None and policy not in allowed:
        out.append(_not_supported(f"{field}.restartPolicy", policy, allowed))
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not isinstance(ads, int) or ads <= 0):
        out.append(_invalid(f"{field}.activeDeadlineSeconds", ads, "must be between 1 and 2147483647, inclusive"))
    tgps = spec.get("terminationGracePeriodSeconds")
    if tgps is not None and (not isinstance(tgps, int) or tgps < 0):
        out.append(_invalid(f"{field}.terminationGracePeriodSeconds", tgps, "must be greater than or equal to 0"))
    for i, tol in enumerate(spec.get("tolerations") or []):
        if isinstance(tol, dict):
            op = tol.get("operator")
            if op and op not in ("Exists", "Equal"):
                out.append(_not_supported(f"{field}.tolerations[{i}].operator", op, ["Equal", "Exists"]))
            eff = tol.get("effect")
            if eff and eff not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                out.append(_not_supported(f"{field}.tolerations[{i}].effect", eff,
                                          ["NoExecute", "NoSchedule", "PreferNoSchedule"]))
    node_selector = spec.get("nodeSelector")
    if node_selector is not None:
        out += validate_labels(node_selector, f"{field}.nodeSelector")
    return out


POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def _mutable_pod_view(spec: Obj) -> Obj:
    """The pod spec with the fields an update may change blanked out."""
    view = {k: v for k, v in spec.items() if k not in ("activeDeadlineSeconds", "tolerations", "schedulingGates")}
    for key in ("containers", "initContainers"):
        if isinstance(view.get(key), list):
            view[key] = [{k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c
                         for c in view[key]]
    if not spec.get("nodeName"):
        view.pop("nodeName", None)
    return view


def validate_pod_update(new: Obj, old: Obj) -> list[FieldCause]:
    """Pod spec immutability: only images, activeDeadlineSeconds, added tolerations, removed
    schedulingGates and a first nodeName may change."""
    nspec, ospec = new.get("spec") or {}, old.get("spec") or {}
    out: list[FieldCause] = []
    nview, oview = _mutable_pod_view(nspec), _mutable_pod_view(ospec)
    if ospec.get("nodeName") and not nspec.get("nodeName"):
        nview["nodeName"] = None
    if not ospec.get("nodeName"):
        nview.pop("nodeName", None)
    if nview != oview:
        out.append(_forbidden("spec", POD_UPDATE_FORBIDDEN))
    old_tol = ospec.get("tolerations") or []
    new_tol = nspec.get("tolerations") or []
    if any(t not in new_tol for t in old_tol):
        out.append(_forbidden("spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"))
    old_gates = [g.get("name") for g in ospec.get("schedulingGates") or [] if isinstance(g, dict)]
    new_gates = [g.get("name") for g in nspec.get("schedulingGates") or [] if isinstance(g, dict)]
    if any(g not in old_gates for g in new_gates):
        out.append(_forbidden("spec.schedulingGates", "only deletion is allowed, but found new scheduling gate"))
    old_ads, new_ads = ospec.get("activeDeadlineSeconds"), nspec.get("activeDeadlineSeconds")
    if old_ads is not None and (new_ads is None or new_ads > old_ads):
        out.append(_invalid("spec.activeDeadlineSeconds", new_ads,
                            "must be less than or equal to previous value"))
    return out


# --- workloads ------------------------------------------------------------------------------------


def _selector_matches(selector: Obj, labels: dict[str, str]) -> bool:
    """Whether the template labels match; a selector that does not convert has its own causes
    (from :func:`_validate_selector`) and is not also reported as not matching, as upstream's
    ``if err == nil && !selector.Matches(...)``."""
    try:
        return from_label_selector(selector).matches(labels)
    except SelectorError:
        return True


def _validate_selector(selector: Any, field: str) -> list[FieldCause]:
    if not isinstance(selector, dict):
        return [_invalid(field, selector, "must be a label selector")]
    out = validate_labels(selector.get("matchLabels"), f"{field}.matchLabels")
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        op = expr.get("operator") if isinstance(expr, dict) else None
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            out.append(_not_supported(f"{field}.matchExpressions[{i}].operator", op,
                                      ["DoesNotExist", "Exists", "In", "NotIn"]))
        elif op in ("In", "NotIn") and not expr.get("values"):
            out.append(_required(f"{field}.matchExpressions[{i}].values",
                                 "must be specified when `operator` is 'In' or 'NotIn'"))
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        out.append(_invalid(field, selector, "empty selector is invalid for deployment"))
    return out


def _validate_template(spec: Obj, restart_policies: list[str], selector_required: bool) -> list[FieldCause]:
    out: list[FieldCause] = []
    selector = spec.get("selector")
    template = spec.get("template")
    if selector is None:
        if selector_required:
            out.append(_required("spec.selector"))
    else:
        out += _validate_selector(selector, "spec.selector")
    if not isinstance(template, dict):
        out.append(_required("spec.template"))
        return out
    tlabels = (template.get("metadata") or {}).get("labels") or {}
    out += validate_labels(tlabels, "spec.template.metadata.labels")
    if isinstance(selector, dict) and (selector.get("matchLabels") or selector.get("matchExpressions")) \
            and not _selector_matches(selector, tlabels):
        out.append(_invalid("spec.template.metadata.labels", tlabels, "`selector` does not match template `labels`"))
    out += validate_pod_spec(template.get("spec"), "spec.template.spec", restart_policies)
    tspec = template.get("spec")
    if isinstance(tspec, dict) and tspec.get("ephemeralContainers"):  # ValidatePodTemplateSpec
        out.append(_forbidden("spec.template.spec.ephemeralContainers",
                              "ephemeral containers not allowed in pod template"))
    return out


INT32_MAX = 2**31 - 1


def _non_negative(spec: Obj, key: str) -> list[FieldCause]:
    """An int32 field that must be >= 0 (types were checked before: a non-integer is a type error)."""
    v = spec.get(key)
    if v is None or not isinstance(v, int) or isinstance(v, bool):
        return []
    if v < 0:
        return [_invalid(f"spec.{key}", v, "must be greater than or equal to 0")]
    if v > INT32_MAX:
        return [_invalid(f"spec.{key}", v, f"must be less than or equal to {INT32_MAX}")]
    return []


def _validate_replicated(obj: Obj, old: Obj | None) -> list[FieldCause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    out = _non_negative(spec, "replicas") + _non_negative(spec, "minReadySeconds")
    out += _validate_template(spec, ["Always"], selector_required=True)
    if old is not None and (old.get("spec") or {}).get("selector") != spec.get("selector"):
        out.append(_invalid("spec.selector", spec.get("selector"), "field is immutable"))
    return out


def _validate_job(obj: Obj, old: Obj | None) -> list[FieldCause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    out: list[FieldCause] = []
    for key in ("parallelism", "completions", "backoffLimit"):
        out += _non_negative(spec, key)
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not isinstance(ads, int) or ads <= 0):
        out.append(_invalid("spec.activeDeadlineSeconds", ads, "must be greater than or equal to 1"))
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        out.append(_not_supported("spec.completionMode", mode, ["NonIndexed", "Indexed"]))
    out += _validate_template(spec, ["OnFailure", "Never"], selector_required=False)
    if old is not None:
        ospec = old.get("spec") or {}
        for key in ("completions", "selector", "template", "completionMode"):
            if key == "completions" and spec.get("completionMode") != "Indexed":
                if ospec.get(key) != spec.get(key):
                    out.append(_invalid(f"spec.{key}", spec.get(key), "field is immutable"))
            elif key == "template":
                if _template_without_gates(ospec.get(key)) != _template_without_gates(spec.get(key)):
                    out.append(_invalid("spec.template", spec.get(key), "field is immutable"))
            elif key != "completions" and ospec.get(key) != spec.get(key):
                out.append(_invalid(f"spec.{key}", spec.get(key), "field is immutable"))
    return out


def _template_without_gates(t: Any) -> Any:
    if not isinstance(t, dict):
        return t
    spec = {k: v for k, v in (t.get("spec") or {}).items() if k != "schedulingGates"}
    return {**t, "spec": spec}


def _is_iana_svc_name(value: str) -> bool:
    return (len(value) <= 15 and bool(_IANA_SVC_NAME.match(value)) and "--" not in value
            and re.search("[a-z]", value) is not None)


# --- other kinds ----------------------------------------------------------------------------------

SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]


def _validate_service(obj: Obj, old: Obj | None) -> list[FieldCause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    out: list[FieldCause] = []
    stype = spec.get("type") or "ClusterIP"
    if stype not in SERVICE_TYPES:
        out.append(_not_supported("spec.type", stype, SERVICE_TYPES))
    ports = spec.get("ports") or []
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and stype != "ExternalName":
        out.append(_required("spec.ports"))
    names: set[str] = set()
    seen: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        pf = f"spec.ports[{i}]"
        if not isinstance(port, dict):
            out.append(_invalid(pf, port, "must be an object"))
            continue
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            out.append(_required(f"{pf}.name"))
        elif name:
            out += [_invalid(f"{pf}.name", name, e) for e in is_dns1123_label(name)]
            if name in names:
                out.append(_duplicate(f"{pf}.name", name))
            names.add(name)
        num = port.get("port")
        if not isinstance(num, int) or isinstance(num, bool) or not 1 <= num <= 65535:
            out.append(_invalid(f"{pf}.port", num, "must be between 1 and 65535, inclusive"))
        proto = port.get("protocol") or "TCP"
        if proto not in PROTOCOLS:
            out.append(_not_supported(f"{pf}.protocol", proto, PROTOCOLS))
        if (num, proto) in seen:
            out.append(_duplicate(pf, {"port": num, "protocol": proto}))
        seen.add((num, proto))
        target = port.get("targetPort")
        if isinstance(target, int) and not isinstance(target, bool):
            if not 1 <= target <= 65535:
                out.append(_invalid(f"{pf}.targetPort", target, "must be between 1 and 65535, inclusive"))
        elif isinstance(target, str) and not _is_iana_svc_name(target):
            out.append(_invalid(f"{pf}.targetPort", target,
                                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"))
        node_port = port.get("nodePort")
        if node_port and stype not in ("NodePort", "LoadBalancer"):
            out.append(_forbidden(f"{pf}.nodePort", "may not be used when `type` is 'ClusterIP'"))
    selector = spec.get("selector")
    if selector is not None:
        out += validate_labels(selector, "spec.selector")
    if old is not None:
        old_ip = (old.get("spec") or {}).get("clusterIP")
        new_ip = spec.get("clusterIP")
        # an update without clusterIP keeps the allocated one (upstream copies it before validating)
        if old_ip and new_ip and new_ip != old_ip and stype != "ExternalName":
            out.append(_invalid("spec.clusterIP", new_ip, "field is immutable"))
    return out


def _validate_node(obj: Obj, old: Obj | None) -> list[FieldCause]:
    out: list[FieldCause] = []
    spec = obj.get("spec") or {}
    for i, taint in enumerate(spec.get("taints") or []):
        tf = f"spec.taints[{i}]"
        if not isinstance(taint, dict) or not taint.get("key"):
            out.append(_required(f"{tf}.key"))
            continue
        out += [_invalid(f"{tf}.key", taint["key"], e) for e in is_qualified_name(taint["key"])]
        eff = taint.get("effect")
        if eff not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            out.append(_not_supported(f"{tf}.effect", eff, ["NoExecute", "NoSchedule", "PreferNoSchedule"]))
    for part in ("capacity", "allocatable"):
        for rname, q in ((obj.get("status") or {}).get(part) or {}).items():
            try:
                parse_quantity(q)
            except (QuantityError, TypeError, ValueError):
                out.append(_invalid(f"status.{part}[{rname}]", q, "quantities must match the regular expression "
                                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"))
    return out


#: core.MaxSecretSize: the total size of a ConfigMap's or Secret's data
MAX_DATA_SIZE = 1024 * 1024


def _data_size(values: dict[str, Any]) -> int:
    return sum(len(v.encode()) if isinstance(v, str) else 0 for v in values.values())


def _validate_config_map(obj: Obj, old: Obj | None, *, secret: bool = False) -> list[FieldCause]:
    """Mirrors: kubernetes pkg/apis/core/validation ValidateConfigMap (keys, 1 MiB in total);
    ``secret``: values are shown as ``<secret contents redacted>``, as ValidateSecret does."""
    out: list[FieldCause] = []
    keys: set[str] = set()
    total = 0
    for part in ("data", "binaryData"):
        values = obj.get(part) or {}
        if not isinstance(values, dict):
            out.append(_invalid(part, "<secret contents redacted>" if secret else values, "must be a map"))
            continue
        for k, v in values.items():
            if len(k) > 253 or not _CONFIG_KEY.match(k):
                out.append(_invalid(f"{part}[{k}]", k, CONFIG_KEY_ERR))
            if k in keys:
                out.append(_invalid(f"{part}[{k}]", k, "duplicate of key present in data"))
            if not isinstance(v, str):
                shown = '"<secret contents redacted>"' if secret else format_value(v)
                out.append(FieldCause(f"{part}[{k}]", f"Invalid value: {shown}: {part}[{k}] in body must "
                                      f"be of type string: \"{json_type_name(v)}\"", "FieldValueTypeInvalid"))
            keys.add(k)
        total += _data_size(values)
    if total > MAX_DATA_SIZE:
        out.append(FieldCause("[]", f"Too long: may not be more than {MAX_DATA_SIZE} bytes", "FieldValueTooLong"))
    if old is not None and old.get("immutable") and (
            old.get("data") != obj.get("data") or old.get("binaryData") != obj.get("binaryData")):
        out.append(_forbidden("data", "field is immutable when `immutable` is set"))
    return out


def _validate_secret(obj: Obj, old: Obj | None) -> list[FieldCause]:
    out = _validate_config_map({k: v for k, v in obj.items() if k == "data"}, None, secret=True)
    for c in out:
        if c.field == "[]":  # a Secret reports the size on data
            c.field = "data"
    if old is not None and old.get("type") and old.get("type") != obj.get("type"):
        out.append(_invalid("type", obj.get("type"), "field is immutable"))
    # data values that are not base64 never get here: kube-apiserver's JSON decoding refuses them
    # (400, see pumice.apiserver.fields.bytes_error)
    return out


PRIORITY_USER_MAX = 1_000_000_000


#: the PriorityClasses kube-apiserver makes itself, name -> value (their globalDefault is false);
#: the only names the ``system-`` prefix may have (pkg/apis/scheduling/types.go, helpers.go)
SYSTEM_PRIORITY_CLASS_VALUES: dict[str, int] = {"system-node-critical": 2_000_001_000,
                                                "system-cluster-critical": 2_000_000_000}


def _system_class_error(name: str, value: Any, global_default: Any) -> str | None:
    """Why ``name`` (``system-`` prefixed) may not be a PriorityClass with ``value`` and
    ``globalDefault``, or None. Mirrors: pkg/apis/scheduling/helpers.go IsKnownSystemPriorityClass."""
    want = SYSTEM_PRIORITY_CLASS_VALUES.get(name)
    if want is None:
        return f"{name} is not a known system priority class"
    if value != want:
        return f"value of {name} PriorityClass must be {want}"
    if bool(global_default):
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def _validate_priority_class(obj: Obj, old: Obj | None) -> list[FieldCause]:
    """Mirrors: pkg/apis/scheduling/validation/validation.go ValidatePriorityClass (and
    ValidatePriorityClassUpdate's immutable value)."""
    out: list[FieldCause] = []
    value = obj.get("value")
    name = (obj.get("metadata") or {}).get("name") or ""
    if not isinstance(value, int) or isinstance(value, bool):
        out.append(_invalid("value", value, "must be an integer"))
    elif name.startswith("system-"):
        why = _system_class_error(name, value, obj.get("globalDefault"))
        if why is not None:
            out.append(_forbidden("metadata.name", "priority class names with 'system-' prefix are reserved for "
                                                   f"system use only. error: {why}"))
    elif value > PRIORITY_USER_MAX:
        out.append(_forbidden("value", f"maximum allowed value of a user defined priority is {PRIORITY_USER_MAX}"))
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in ("PreemptLowerPriority", "Never"):
        out.append(_not_supported("preemptionPolicy", policy, ["Never", "PreemptLowerPriority"]))
    if old is not None and old.get("value") != value:
        out.append(_forbidden("value", "may not be changed in an update."))
    return out


KindValidator = Callable[[Obj, "Obj | None"], list[FieldCause]]


def _validate_pod(obj: Obj, old: Obj | None) -> list[FieldCause]:
    """ValidatePodCreate / ValidatePodUpdate: ephemeral containers come only through the
    ``ephemeralcontainers`` subresource, never with a create (validation.go ValidatePodCreate)."""
    out = validate_pod_spec(obj.get("spec"), "spec")
    if old is None:
        spec = obj.get("spec")
        if isinstance(spec, dict) and spec.get("ephemeralContainers"):
            out.append(_forbidden("spec.ephemeralContainers", "cannot be set on create"))
    else:
        out += validate_pod_update(obj, old)
    return out


_KIND_RULES: dict[tuple[str, str], KindValidator] = {
    ("", "Pod"): _validate_pod,
    ("", "Service"): _validate_service,
    ("", "Node"): _validate_node,
    ("", "ConfigMap"): _validate_config_map,
    ("", "Secret"): _validate_secret,
    ("apps", "Deployment"): _validate_replicated,
    ("apps", "ReplicaSet"): _validate_replicated,
    ("batch", "Job"): _validate_job,
    ("scheduling.k8s.io", "PriorityClass"): _validate_priority_class,
}


def validate_object(rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
    """Validate an object of kind ``rk`` on create (``old`` None) or update.

    Args:
        rk: the served kind (custom kinds get metadata rules only; their schema is checked by
            :func:`pumice.api.schema.validate`).
        obj: the new object, wire form, after defaulting; the server must already have set
            ``metadata.namespace`` for namespaced kinds.
        old: the stored object on update.

    Returns:
        The causes (``[]`` when valid), e.g.
        ``FieldCause("metadata.name", 'Invalid value: "Foo": a lowercase RFC 1123 subdomain ...')``.
    """
    out = validate_object_meta(rk, obj, old)
    rule = _KIND_RULES.get((rk.group, rk.kind))
    if rule is not None:
        out += rule(obj, old)
    return out
