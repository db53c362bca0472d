"""Validation of built-in objects (and object metadata of every kind) on create and update.

The API server calls :func:`validate_object` after defaulting and admission; a non-empty result
becomes a 422 Invalid ``Status`` with these causes. Messages are kube-apiserver's (the cause
``message`` is the ``field.Error`` body: ``Invalid value: "Foo": a lowercase RFC 1123 ...``).

Mirrors: kubernetes pkg/apis/core/validation/validation.go (ValidateObjectMeta, ValidatePod,
ValidatePodUpdate, ValidateService, ValidateNode, ValidateConfigMap, ValidateNamespace),
pkg/apis/apps/validation, pkg/apis/batch/validation, pkg/apis/scheduling/validation and
apimachinery pkg/util/validation (name, label and qualified-name rules).

Pod specs (Pods and every pod template) get ValidatePodSpec's rules for volumes (names, one
source, emptyDir sizeLimit, a few required source fields), containers (names, images, ports with
IANA names, env names and valueFrom, envFrom, volume mounts of known volumes, resource names and
quantities, extended resources' limits, probes' and lifecycle hooks' handlers, securityContext
ids), init containers (restartPolicy, probes only when restartable), restartPolicy, dnsPolicy,
nodeSelector, securityContext, imagePullSecrets, node and pod affinity, dnsConfig, readiness and
scheduling gates, topology spread, nodeName, hostname, subdomain, tolerations, hostAliases,
priorityClassName, runtimeClassName, preemptionPolicy, overhead, os; Services get ValidateService's (clusterIPs, families,
ExternalName, ports, session affinity, traffic policies) and the node port range; Secrets the
keys their type needs; Deployments the strategy rules, Jobs ttlSecondsAfterFinished, the Indexed
limits (completions required, parallelism, backoffLimitPerIndex, maxFailedIndexes, the index
hostname fitting the name), successPolicy (rules and their index lists), podFailurePolicy (rules,
actions, onExitCodes, onPodConditions, restartPolicy Never), podReplacementPolicy, managedBy and
the immutable fields.

Container and pod securityContexts also get the seccompProfile rules; hostPath volumes their
path (no '..') and type rules; generic ephemeral volumes their claim template (labels and
annotations only in its metadata, the claim spec rules of :func:`validate_claim_spec`) and, in a
Pod, a valid claim name ``<pod>-<volume>``.

Deviates: only the rules listed per kind are checked (a subset of upstream's: not the volume
sources' own fields beyond the required ones, volume devices, resize policies, sysctls,
AppArmor profiles, Windows options, pod resource claims, LoadBalancer source ranges); fields the
defaulter leaves unset (probe periods, Service traffic policies) are checked only when set; a
Job without ``spec.selector`` is accepted (upstream generates one before validating);
CustomResourceDefinition specs are checked by the API server (pumice.apiserver.crds), not here.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re
from collections.abc import Callable
from typing import Any, TypeGuard

import msgspec

from pumice._util.gobase64 import std_decode
from pumice._util.gostrings import atoi, quote
from pumice.api import Obj
from pumice.api.admission import FieldCause
from pumice.api.godecode import go_json_value
from pumice.api.intstr import int_value
from pumice.api.memo import FixedPoints
from pumice.api.quantity import ERR_FORMAT_WRONG, QuantityError, canonical_string, parse_quantity
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


def field_invalid(field: str, value: Any, detail: str) -> FieldCause:
    """The cause ``<field>: Invalid value: <value>: <detail>`` (``value`` shown as
    :func:`format_value` shows it). Mirrors: apimachinery pkg/util/validation/field Invalid."""
    return FieldCause(field, f"Invalid value: {format_value(value)}: {detail}", "FieldValueInvalid")


def field_required(field: str, detail: str = "") -> FieldCause:
    """The cause ``<field>: Required value[: <detail>]``. Mirrors: field.Required."""
    return FieldCause(field, "Required value" + (f": {detail}" if detail else ""), "FieldValueRequired")


def field_forbidden(field: str, detail: str) -> FieldCause:
    """The cause ``<field>: Forbidden: <detail>``. Mirrors: field.Forbidden."""
    return FieldCause(field, f"Forbidden: {detail}", "FieldValueForbidden")


def _duplicate(field: str, value: Any) -> FieldCause:
    return FieldCause(field, f"Duplicate value: {format_value(value)}", "FieldValueDuplicate")


def field_not_supported(field: str, value: Any, supported: list[str]) -> FieldCause:
    """The cause ``<field>: Unsupported value: <value>: supported values: "a", "b"`` (in the
    order given). Mirrors: field.NotSupported."""
    values = ", ".join(format_value(v) for v in supported)
    return FieldCause(field, f"Unsupported value: {format_value(value)}: supported values: {values}",
                      "FieldValueNotSupported")


_invalid, _required, _forbidden, _not_supported = field_invalid, field_required, field_forbidden, field_not_supported


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


WILDCARD_DNS1123_SUBDOMAIN_FMT = r"\*\." + DNS1123_SUBDOMAIN_FMT
_WILDCARD_DNS1123_SUBDOMAIN = re.compile(f"^{WILDCARD_DNS1123_SUBDOMAIN_FMT}$")


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    """Problems with ``value`` as a wildcard subdomain (``*.example.com``; max 253 characters).

    Mirrors: k8s.io/apimachinery pkg/util/validation IsWildcardDNS1123Subdomain."""
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _WILDCARD_DNS1123_SUBDOMAIN.match(value):
        errs.append(regex_error("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS "
                                "subdomain, which must consist of lower case alphanumeric characters, '-' or '.' "
                                "and end with an alphanumeric character", WILDCARD_DNS1123_SUBDOMAIN_FMT,
                                "*.example.com"))
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


def mask_trailing_dash(name: str) -> str:
    """A generateName with its trailing ``-`` made checkable as a name: the last two characters
    become ``a`` (upstream's slice drops the one before the dash too), a lone ``-`` stays. Used
    for generateName and for CEL's ``format.*Prefix()`` (both NameIsDNS*(name, prefix=true)
    upstream).

    Mirrors: k8s.io/apimachinery pkg/api/validation/generic.go maskTrailingDash."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def generate_name_errors(rk: ResourceKind, prefix: str) -> list[str]:
    """Problems with ``prefix`` as the kind's ``metadata.generateName``: the kind's name rule
    (:func:`name_rule`) on the prefix with a trailing dash masked; a path-segment kind (RBAC) only
    forbids ``/`` and ``%``.

    Mirrors: k8s.io/apimachinery pkg/api/validation NameIsDNSSubdomain / NameIsDNSLabel /
    NameIsDNS1035Label with prefix true, and pkg/api/validation/path ValidatePathSegmentName
    (IsValidPathSegmentPrefix)."""
    rule = name_rule(rk)
    if rule is is_path_segment_name:
        return [f"may not contain '{c}'" for c in ("/", "%") if c in prefix]
    return rule(mask_trailing_dash(prefix))


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
    for k, v in annotations.items():
        out += [_invalid(field, k, e) for e in _key_errors(str(k).lower())]
        if not isinstance(v, str):  # Go's map[string]string cannot hold it (built-in kinds: a decode error first)
            out.append(_invalid(f"{field}[{k}]", v, "must be a string"))
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


_STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def validate_kube_finalizer_name(name: str, field: str) -> list[FieldCause]:
    """A finalizer name of a built-in kind: a qualified name that, without a ``/``, must be one of
    the standard ones (``kubernetes``, ``orphan``, ``foregroundDeletion``). Causes at ``field``.

    Mirrors: kubernetes pkg/apis/core/validation validateFinalizerName (apimachinery's
    ValidateFinalizerName, then validateKubeFinalizerName).
    """
    out = [_invalid(field, name, e) for e in is_qualified_name(name)]
    if "/" not in name and name not in _STANDARD_FINALIZERS:
        out.append(_invalid(field, name, "name is neither a standard finalizer name nor is it fully qualified"))
    return out


def _validate_namespace(obj: Obj, old: Obj | None) -> list[FieldCause]:
    """``spec.finalizers`` names: on create at ``spec.finalizers`` (ValidateNamespace), on a change
    (the ``finalize`` subresource; an update of the main resource keeps the stored spec) at
    ``spec.finalizers[i]`` (ValidateNamespaceFinalizeUpdate).

    Mirrors: kubernetes pkg/apis/core/validation ValidateNamespace, ValidateNamespaceFinalizeUpdate.
    """
    finalizers = (obj.get("spec") or {}).get("finalizers")
    if not isinstance(finalizers, list):
        return []
    if old is None:
        return [c for f in finalizers for c in validate_kube_finalizer_name(str(f), "spec.finalizers")]
    if finalizers == (old.get("spec") or {}).get("finalizers"):
        return []
    return [c for i, f in enumerate(finalizers) for c in validate_kube_finalizer_name(str(f), f"spec.finalizers[{i}]")]


#: kinds whose update validates the new object's whole metadata again, generateName included:
#: their upstream ValidateXUpdate (or strategy ValidateUpdate) runs ValidateX on the new object
#: (core ConfigMap, Secret, Service, ServiceAccount, PersistentVolume, LimitRange; rbac Role,
#: ClusterRole, RoleBinding, ClusterRoleBinding; storage CSINode, VolumeAttachment; apps
#: ControllerRevision; apiregistration APIService). Every other kind's update runs only
#: ValidateObjectMetaAccessorUpdate (CSIDriver's, Lease's, PodDisruptionBudget's and
#: CSIStorageCapacity's validate their spec, not their metadata, again).
_FULL_META_ON_UPDATE = frozenset({
    ("", "ConfigMap"), ("", "Secret"), ("", "Service"), ("", "ServiceAccount"), ("", "PersistentVolume"),
    ("", "LimitRange"),
    *(("rbac.authorization.k8s.io", k) for k in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")),
    ("storage.k8s.io", "CSINode"), ("storage.k8s.io", "VolumeAttachment"), ("apps", "ControllerRevision"),
    ("apiregistration.k8s.io", "APIService"),
})


def validate_object_meta(rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
    """metadata rules of every kind: generateName as a prefix (:func:`generate_name_errors`), then
    name (or generateName) and its format, namespace presence for namespaced kinds (the server
    fills it from the URL first), labels, annotations, owner references, finalizers, and on update
    name and namespace immutability. The generateName is checked on create, and on update only
    for the kinds of :data:`_FULL_META_ON_UPDATE` (upstream's ValidateObjectMetaAccessorUpdate
    does not look at it); a create's name is the generated one by the time the registry validates, so
    a bad prefix can give causes at both ``metadata.generateName`` and ``metadata.name``.

    Mirrors: k8s.io/apimachinery pkg/api/validation/objectmeta.go ValidateObjectMetaAccessor.
    Deviates: an object with a generateName and no name yet (validated before the server
    generated one) gets no ``name or generateName is required``."""
    out: list[FieldCause] = []
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [_required("metadata")]
    name = meta.get("name") or ""
    generate = meta.get("generateName") or ""
    rule = name_rule(rk)
    if generate and (old is None or (rk.group, rk.kind) in _FULL_META_ON_UPDATE):
        out += [_invalid("metadata.generateName", generate, e) for e in generate_name_errors(rk, generate)]
    if not name and not generate:
        out.append(_required("metadata.name", "name or generateName is required"))
    if name:
        out += [_invalid("metadata.name", name, e) for e in rule(name)]
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
DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
TERMINATION_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
INT32_MAX = 2**31 - 1

_PORT_NAME_CHARSET = re.compile("^[-a-z0-9]+$")
#: IsRelaxedEnvVarName (RelaxedEnvironmentVariableValidation, on by default since 1.32)
_RELAXED_ENV_NAME = re.compile("^[ -<>-~]+$")
RELAXED_ENV_NAME_ERR = "a valid environment variable name must consist only of printable ASCII characters other than '='"
PERCENT_FMT = "[0-9]+%"
_PERCENT = re.compile(f"^{PERCENT_FMT}$")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery validation.RegexError: ``msg (e.g. 'a',  or 'b', regex used for validation is 'fmt')``."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def is_valid_port_num(port: Any) -> list[str]:
    """IsValidPortNum (1-65535)."""
    if not _is_int(port) or not 1 <= port <= 65535:
        return [inclusive_range_error(1, 65535)]
    return []


_HAS_LETTER = re.compile("[a-z]")


@functools.lru_cache(maxsize=4096)
def _port_name_errors(port: str) -> tuple[str, ...]:
    return tuple(is_valid_port_name(port))


def is_valid_port_name(port: str) -> list[str]:
    """IsValidPortName: an IANA_SVC_NAME (at most 15 characters, a-z0-9 and '-', one letter)."""
    errs = []
    if len(port) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.match(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _HAS_LETTER.search(port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port.startswith("-") or port.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _is_int(v: Any) -> TypeGuard[int]:
    return type(v) is int


def _port_num_or_name(port: Any, field: str) -> list[FieldCause]:
    """ValidatePortNumOrName of an int-or-string port."""
    if isinstance(port, str):
        return [_invalid(field, port, e) for e in _port_name_errors(port)]
    return [_invalid(field, port if _is_int(port) else 0, e) for e in is_valid_port_num(port)]


def _non_negative_at(value: Any, field: str) -> list[FieldCause]:
    """ValidateNonnegativeField (types were checked before: a non-integer is a type error)."""
    if _is_int(value) and value < 0:
        return [_invalid(field, value, "must be greater than or equal to 0")]
    return []


def _is_valid_ip(value: str) -> bool:
    """netutils.ParseIPSloppy: IPv4 (leading zeros allowed) or IPv6."""
    return parse_ip_sloppy(value) is not None


IP_ERR = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


# resource names: pkg/apis/core/helper/helpers.go
_STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers"})
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})


def _is_huge_page(name: str) -> bool:
    return name.startswith("hugepages-")


def is_native_resource(name: str) -> bool:
    """IsNativeResource: unprefixed, or prefixed with ``kubernetes.io/``."""
    return "/" not in name or "kubernetes.io/" in name


@functools.lru_cache(maxsize=4096)
def is_extended_resource_name(name: str) -> bool:
    """IsExtendedResourceName: a fully qualified name outside kubernetes.io (``nvidia.com/gpu``)."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def is_overcommit_allowed(name: str) -> bool:
    """IsOvercommitAllowed: native resources but huge pages; extended resources are not."""
    return is_native_resource(name) and not _is_huge_page(name)


@functools.lru_cache(maxsize=4096)
def container_resource_name_errors(name: str) -> tuple[str, ...]:
    """validateContainerResourceName (after validateResourceName): why ``name`` may not be a
    container's resource (``()`` for cpu, memory, ephemeral-storage, hugepages-*, extended names)."""
    if name in _STANDARD_CONTAINER_RESOURCES:
        return ()
    errs = is_qualified_name(name)
    if not errs and "/" not in name and name not in _STANDARD_RESOURCES and not name.startswith(
            ("hugepages-", "requests.hugepages-", "limits.hugepages-")):
        errs = ["must be a standard resource type or fully qualified"]
    if "/" not in name:
        if not _is_huge_page(name):
            errs.append("must be a standard resource for containers")
    elif not is_native_resource(name) and not is_extended_resource_name(name):
        errs.append("doesn't follow extended resource name standard")
    return tuple(errs)


QUANTITY_ERR = ERR_FORMAT_WRONG


def _resource_list(values: dict[str, Any], field: str, out: list[FieldCause]) -> dict[str, Any]:
    """Names and quantities of a limits or requests map; the parsed amounts that parse."""
    parsed: dict[str, Any] = {}
    for rname, q in values.items():
        at = f"{field}[{rname}]"
        out += [_invalid(at, rname, e) for e in container_resource_name_errors(str(rname))]
        try:
            amount = parse_quantity(q)
        except (QuantityError, TypeError, ValueError):
            out.append(_invalid(at, q, QUANTITY_ERR))
            continue
        if amount < 0:
            out.append(_invalid(at, q, "must be greater than or equal to 0"))
        if is_extended_resource_name(str(rname)) and amount.denominator != 1:
            out.append(_invalid(at, q, "must be an integer"))
        parsed[rname] = amount
    return parsed


@functools.lru_cache(maxsize=4096)
def _exceeds(request: str, limit: str) -> bool:
    """Whether the quantity ``request`` is more than ``limit`` (both parse)."""
    return parse_quantity(request) > parse_quantity(limit)


def validate_resource_requirements(res: Any, field: str) -> list[FieldCause]:
    """validateResourceRequirements of a container: names, quantities, requests <= limits, and
    requests == limits for resources that may not be overcommitted (extended resources, huge pages),
    whose limit is required. ``res``: a container's ``resources``; ``field``: its path, e.g.
    ``spec.containers[0].resources``. Returns the causes, limits' before requests', as upstream."""
    out: list[FieldCause] = []
    if not isinstance(res, dict):
        return out
    parts: dict[str, dict[str, Any]] = {}
    for part in ("limits", "requests"):
        values = res.get(part) or {}
        if not isinstance(values, dict):
            out.append(_invalid(f"{field}.{part}", values, "must be a map of resource names to quantities"))
            continue
        parts[part] = _resource_list(values, f"{field}.{part}", out)
    limits = parts.get("limits") or {}
    raw_limits: dict[str, Any] = res["limits"] if isinstance(res.get("limits"), dict) else {}
    for rname, req in (parts.get("requests") or {}).items():
        raw = (res.get("requests") or {}).get(rname)
        lim = limits.get(rname)
        if lim is not None and raw == raw_limits.get(rname):  # the defaulter copies limits to requests
            continue
        if lim is not None:
            if not is_overcommit_allowed(str(rname)) and req != lim:
                out.append(_invalid(f"{field}.requests", str(raw),
                                    f"must be equal to {rname} limit of {raw_limits[rname]}"))
            elif (_exceeds(raw, raw_limits[rname]) if isinstance(raw, str) and isinstance(raw_limits[rname], str)
                  else req > lim):
                out.append(_invalid(f"{field}.requests", str(raw),
                                    f"must be less than or equal to {rname} limit of {raw_limits[rname]}"))
        elif rname not in raw_limits and not is_overcommit_allowed(str(rname)):
            out.append(_required(f"{field}.limits", "Limit must be set for non overcommitable resources"))
    return out


#: volume source keys, in ValidateVolumes' order, with the child name its "more than 1" error uses
_VOLUME_SOURCES: dict[str, str] = {
    "emptyDir": "emptyDir", "hostPath": "hostPath", "gitRepo": "gitRepo", "gcePersistentDisk": "gcePersistentDisk",
    "awsElasticBlockStore": "awsElasticBlockStore", "secret": "secret", "nfs": "nfs", "iscsi": "iscsi",
    "glusterfs": "glusterfs", "flocker": "flocker", "persistentVolumeClaim": "persistentVolumeClaim", "rbd": "rbd",
    "cinder": "cinder", "cephfs": "cephFS", "quobyte": "quobyte", "downwardAPI": "downwarAPI", "fc": "fc",
    "flexVolume": "flexVolume", "configMap": "configMap", "azureFile": "azureFile", "vsphereVolume": "vsphereVolume",
    "photonPersistentDisk": "photonPersistentDisk", "portworxVolume": "portworxVolume", "azureDisk": "azureDisk",
    "storageos": "storageos", "projected": "projected", "scaleIO": "scaleIO", "csi": "csi", "ephemeral": "ephemeral",
    "image": "image"}
#: the required string field of some sources (validate*VolumeSource)
_VOLUME_REQUIRED = {"hostPath": ("path",), "secret": ("secretName",), "configMap": ("name",),
                    "persistentVolumeClaim": ("claimName",), "nfs": ("server", "path"), "csi": ("driver",)}
FILE_MODE_ERR = "must be a number between 0 and 0777 (octal), both inclusive"


_VOLUME_SOURCE_ORDER = {key: i for i, key in enumerate(_VOLUME_SOURCES)}


def _validate_volume_source(vol: Obj, field: str, pod_name: str = "") -> list[FieldCause]:
    """validateVolumeSource of the volume at ``field``; ``pod_name`` (a Pod's, "" for a template)
    names the claim of a generic ephemeral volume, which must be a valid object name."""
    out: list[FieldCause] = []
    count = 0
    keys = [k for k in vol if k in _VOLUME_SOURCE_ORDER and vol[k] is not None]
    if len(keys) > 1:
        keys.sort(key=_VOLUME_SOURCE_ORDER.__getitem__)
    for key in keys:
        child, src = _VOLUME_SOURCES[key], vol[key]
        if count:
            out.append(_forbidden(f"{field}.{child}", "may not specify more than 1 volume type"))
            continue
        count += 1
        sf = f"{field}.{key}"
        if not isinstance(src, dict):
            continue
        if key == "emptyDir" and src.get("sizeLimit") is not None:
            try:
                negative = parse_quantity(src["sizeLimit"]) < 0
            except (QuantityError, TypeError, ValueError):
                negative = False
            if negative:
                out.append(_forbidden(f"{sf}.sizeLimit", "SizeLimit field must be a valid resource quantity"))
        for req in _VOLUME_REQUIRED.get(key, ()):
            if not src.get(req):
                out.append(_required(f"{sf}.{req}"))
        if key == "hostPath" and src.get("path"):
            out += _host_path(src, sf)
        mode = src.get("defaultMode")
        if _is_int(mode) and not 0 <= mode <= 0o777:
            out.append(_invalid(f"{sf}.defaultMode", mode, FILE_MODE_ERR))
        if key in ("secret", "configMap"):
            for j, item in enumerate(src.get("items") or ()):
                out += _key_to_path(item, f"{sf}.items[{j}]")
        elif key == "downwardAPI":
            for item in src.get("items") or ():
                out += _downward_api_file(item, sf)
        elif key == "projected":
            out += _projection_sources(src, sf)
        elif key == "ephemeral":
            out += _ephemeral_source(src, sf)
            vname = vol.get("name")
            if pod_name and vname and isinstance(vname, str):
                claim = f"{pod_name}-{vname}"
                out += [_invalid(f"{field}.name", vname, f"PVC name {quote(claim)}: {e}")
                        for e in is_dns1123_subdomain(claim)]
    if not count:
        out.append(_required(field, "must specify a volume type"))
    return out


#: metadata fields a claim template may set (allowedTemplateObjectMetaFields); the others, in
#: ObjectMeta's field order, are Forbidden when set
_TEMPLATE_META_ALLOWED = ("labels", "annotations")
_OBJECT_META_FIELDS = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
                       "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
                       "annotations", "ownerReferences", "finalizers", "managedFields")
#: ObjectMeta's pointer fields: set whenever given, their zero value included
_OBJECT_META_POINTERS = frozenset({"deletionTimestamp", "deletionGracePeriodSeconds"})
#: the path Go reports for a field: its Go name with the first letter lowered (UID -> uID)
_OBJECT_META_GO_PATHS = {"uid": "uID"}


def _ephemeral_source(src: Obj, field: str) -> list[FieldCause]:
    """validateEphemeralVolumeSource: a ``volumeClaimTemplate`` (ValidatePersistentVolumeClaimTemplate:
    only labels and annotations in its metadata, valid ones, and a valid claim spec)."""
    template = src.get("volumeClaimTemplate")
    tf = f"{field}.volumeClaimTemplate"
    if template is None:
        return [_required(tf)]
    if not isinstance(template, dict):
        return [_invalid(tf, template, "must be an object")]
    md = template.get("metadata") or {}
    out: list[FieldCause] = []
    if isinstance(md, dict):
        out += validate_annotations(md.get("annotations"), f"{tf}.metadata.annotations")
        out += validate_labels(md.get("labels"), f"{tf}.metadata.labels")
        # validateFieldAllowList: set is anything but Go's zero value (an empty list is set, as a
        # non-nil empty slice; a pointer is set when given, 0 included)
        out += [_forbidden(f"{tf}.metadata.{_OBJECT_META_GO_PATHS.get(k, k)}", "cannot be set")
                for k in _OBJECT_META_FIELDS if k not in _TEMPLATE_META_ALLOWED
                and (md.get(k) is not None if k in _OBJECT_META_POINTERS else md.get(k) not in (None, "", 0))]
    return out + validate_claim_spec(template.get("spec"), f"{tf}.spec")


#: supportedAccessModes and supportedVolumeModes, sorted (sets.List)
ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
VOLUME_MODES = ["Block", "Filesystem"]


def validate_claim_spec(spec: Any, field: str) -> list[FieldCause]:
    """ValidatePersistentVolumeClaimSpec at ``field`` (a claim's ``spec``, or a claim template's):
    at least one access mode, each supported and ReadWriteOncePod alone; a valid selector; a
    positive ``resources.requests.storage``; a valid storageClassName and volumeMode.

    Mirrors: kubernetes pkg/apis/core/validation/validation.go ValidatePersistentVolumeClaimSpec.
    Deviates: dataSource, dataSourceRef and volumeAttributesClassName are not checked."""
    spec = spec if isinstance(spec, dict) else {}
    out: list[FieldCause] = []
    modes = spec.get("accessModes") or []
    if not modes:
        out.append(_required(f"{field}.accessModes", "at least 1 access mode is required"))
    out += label_selector_causes(spec.get("selector"), f"{field}.selector")
    if isinstance(modes, list):
        for mode in modes:
            if mode not in ACCESS_MODES:
                out.append(_not_supported(f"{field}.accessModes", mode, ACCESS_MODES))
        known = [m for m in modes if m in ACCESS_MODES]
        if "ReadWriteOncePod" in known and any(m != "ReadWriteOncePod" for m in known):
            out.append(_forbidden(f"{field}.accessModes", "may not use ReadWriteOncePod with other access modes"))
    requests = (spec.get("resources") or {}).get("requests") if isinstance(spec.get("resources"), dict) else None
    storage = requests.get("storage") if isinstance(requests, dict) else None
    at = f"{field}.resources[storage]"
    if storage is None:
        out.append(_required(at))
    else:
        try:
            if parse_quantity(storage) <= 0:
                out.append(_invalid(at, canonical_string(storage), "must be greater than zero"))
        except (QuantityError, TypeError, ValueError):
            out.append(_invalid(at, storage, QUANTITY_ERR))
    cls = spec.get("storageClassName")
    if isinstance(cls, str) and cls:
        out += [_invalid(f"{field}.storageClassName", cls, e) for e in is_dns1123_subdomain(cls)]
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        out.append(_not_supported(f"{field}.volumeMode", mode, VOLUME_MODES))
    return out


#: supportedHostPathTypes, sorted (sets.List): "" is the unset type
HOST_PATH_TYPES = ["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"]


def _host_path(src: Obj, field: str) -> list[FieldCause]:
    """validateHostPathVolumeSource past the required path: no '..' element, a known type."""
    out: list[FieldCause] = []
    path = str(src["path"])
    if ".." in path.split("/"):
        out.append(_invalid(f"{field}.path", path, "must not contain '..'"))
    htype = src.get("type")
    if htype is not None and htype not in HOST_PATH_TYPES:
        out.append(_not_supported(f"{field}.type", htype, HOST_PATH_TYPES))
    return out


def _local_descending_path(path: str, field: str) -> list[FieldCause]:
    """validateLocalDescendingPath: relative, no '..' element (one cause however many)."""
    out: list[FieldCause] = []
    if path.startswith("/"):
        out.append(_invalid(field, path, "must be a relative path"))
    if ".." in path.split("/"):
        out.append(_invalid(field, path, "must not contain '..'"))
    return out


def _local_path(path: str, field: str) -> list[FieldCause]:
    """ValidateLocalNonReservedPath: a local descending path not starting with '..'."""
    out = _local_descending_path(path, field)
    if path.startswith("..") and not path.startswith("../"):
        out.append(_invalid(field, path, "must not start with '..'"))
    return out


def _key_to_path(item: Any, field: str) -> list[FieldCause]:
    """validateKeyToPath of a secret or configMap volume item."""
    if not isinstance(item, dict):
        return []
    out: list[FieldCause] = []
    if not item.get("key"):
        out.append(_required(f"{field}.key"))
    path = str(item.get("path") or "")
    if not path:
        out.append(_required(f"{field}.path"))
    out += _local_path(path, f"{field}.path")
    mode = item.get("mode")
    if _is_int(mode) and not 0 <= mode <= 0o777:
        out.append(_invalid(f"{field}.mode", mode, FILE_MODE_ERR))
    return out


def _downward_api_file(item: Any, field: str) -> list[FieldCause]:
    """validateDownwardAPIVolumeFile (its causes are at the volume source's path, as upstream)."""
    if not isinstance(item, dict):
        return []
    out: list[FieldCause] = []
    path = str(item.get("path") or "")
    if not path:
        out.append(_required(f"{field}.path"))
    out += _local_path(path, f"{field}.path")
    if item.get("fieldRef") is not None:
        if item.get("resourceFieldRef") is not None:
            out.append(_invalid(field, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
    elif item.get("resourceFieldRef") is None:
        out.append(_required(field, "one of fieldRef and resourceFieldRef is required"))
    mode = item.get("mode")
    if _is_int(mode) and not 0 <= mode <= 0o777:
        out.append(_invalid(f"{field}.mode", mode, FILE_MODE_ERR))
    return out


def _projection_sources(src: Obj, field: str) -> list[FieldCause]:
    """validateProjectionSources: one type per source, names and items of secret/configMap sources."""
    out: list[FieldCause] = []
    for i, source in enumerate(src.get("sources") or ()):
        if not isinstance(source, dict):
            continue
        sf = f"{field}.sources[{i}]"
        kinds = [k for k in ("secret", "configMap", "downwardAPI", "serviceAccountToken", "clusterTrustBundle")
                 if source.get(k) is not None]
        for kind in ("secret", "configMap"):
            ref = source.get(kind)
            if isinstance(ref, dict):
                if not ref.get("name"):
                    out.append(_required(f"{sf}.{kind}.name"))
                for j, item in enumerate(ref.get("items") or ()):
                    out += _key_to_path(item, f"{sf}.{kind}.items[{j}]")
        token = source.get("serviceAccountToken")
        if isinstance(token, dict):
            secs = token.get("expirationSeconds")
            if _is_int(secs) and secs < 600:
                out.append(_invalid(f"{sf}.serviceAccountToken.expirationSeconds", secs,
                                    "may not specify a duration less than 10 minutes"))
            if not token.get("path"):
                out.append(_required(f"{field}.path"))
        if len(kinds) > 1:
            out.append(_forbidden(sf, "may not specify more than 1 volume type per source"))
    return out


def _validate_volumes(volumes: Any, field: str, pod_name: str = "") -> tuple[set[str], list[FieldCause]]:
    """ValidateVolumes: the names of the valid volumes (the ones mounts may name) and the causes
    (``pod_name``: see :func:`_validate_volume_source`)."""
    names: set[str] = set()
    out: list[FieldCause] = []
    if not isinstance(volumes, list):
        return names, out
    for i, vol in enumerate(volumes):
        vf = f"{field}[{i}]"
        if not isinstance(vol, dict):
            out.append(_invalid(vf, vol, "must be an object"))
            continue
        name = vol.get("name") or ""
        errs = _validate_volume_source(vol, vf, pod_name)
        if not name:
            errs.append(_required(f"{vf}.name"))
        else:
            errs += [_invalid(f"{vf}.name", name, e) for e in is_dns1123_label(name)]
        if name in names:
            errs.append(_duplicate(f"{vf}.name", name))
        if errs:
            out += errs
        else:
            names.add(name)
    return names, out


def _validate_volume_mounts(mounts: Any, volumes: set[str] | None, field: str) -> list[FieldCause]:
    """ValidateVolumeMounts: name and mountPath required, the volume exists, paths unique, subPath
    relative without '..'. ``volumes`` None: the volumes are not known (no existence check)."""
    out: list[FieldCause] = []
    paths: set[str] = set()
    for i, m in enumerate(mounts if isinstance(mounts, list) else ()):
        mf = f"{field}[{i}]"
        if not isinstance(m, dict):
            out.append(_invalid(mf, m, "must be an object"))
            continue
        name, path = m.get("name") or "", m.get("mountPath") or ""
        if not name:
            out.append(_required(f"{mf}.name"))
        if volumes is not None and name not in volumes:
            out.append(FieldCause(f"{mf}.name", f"Not found: {format_value(name)}", "FieldValueNotFound"))
        if not path:
            out.append(_required(f"{mf}.mountPath"))
        if path in paths:
            out.append(_invalid(f"{mf}.mountPath", path, "must be unique"))
        paths.add(path)
        for key in ("subPath", "subPathExpr"):
            sub = m.get(key)
            if isinstance(sub, str) and sub:
                if sub.startswith("/"):
                    out.append(_invalid(f"{field}.{key}", sub, "must be a relative path"))
                if ".." in sub.split("/"):
                    out.append(_invalid(f"{field}.{key}", sub, "must not contain '..'"))
    return out


#: validEnvDownwardAPIFieldPathExpressions, sorted (sets.List)
ENV_FIELD_PATHS = ["metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
                   "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"]
#: what ConvertDownwardAPIFieldLabel accepts for v1 Pods
_POD_FIELD_LABELS = frozenset({
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
    "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName", "status.phase",
    "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"})
_SUBSCRIPTED = re.compile(r"^([^\[]+)\['(.*)'\]$")
RESOURCE_FIELD_PATHS = ["limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu",
                        "requests.ephemeral-storage", "requests.memory"]


def _field_ref(ref: Obj, field: str) -> list[FieldCause]:
    """validateObjectFieldSelector for env (after ConvertDownwardAPIFieldLabel)."""
    if not ref.get("apiVersion"):
        return [_required(f"{field}.apiVersion")]
    path = ref.get("fieldPath") or ""
    if not path:
        return [_required(f"{field}.fieldPath")]
    return [FieldCause(field + sub, msg, reason) for sub, msg, reason in _field_ref_errors(str(ref["apiVersion"]), path)]


@functools.lru_cache(maxsize=1024)
def _field_ref_errors(api_version: str, path: str) -> tuple[tuple[str, str, str], ...]:
    """The causes of a fieldRef (field suffix, message, reason): a pure function of its two strings."""
    return tuple((c.field, c.message, c.reason) for c in _field_ref_causes(api_version, path, ""))


def _field_ref_causes(api_version: str, path: str, field: str) -> list[FieldCause]:
    if api_version != "v1":
        return [_invalid(f"{field}.fieldPath", path, f"error converting fieldPath: unsupported pod version: {api_version}")]
    sub = _SUBSCRIPTED.match(path)
    if sub:
        base, key = sub.group(1), sub.group(2)
        if base not in ("metadata.annotations", "metadata.labels"):
            return [_invalid(f"{field}.fieldPath", path,
                             f"error converting fieldPath: field label does not support subscript: {path}")]
        name = key.lower() if base == "metadata.annotations" else key
        return [_invalid(field, name, e) for e in is_qualified_name(name)]
    if path == "spec.host":
        path = "spec.nodeName"
    if path not in _POD_FIELD_LABELS:
        return [_invalid(f"{field}.fieldPath", path, f"error converting fieldPath: field label not supported: {path}")]
    if path not in ENV_FIELD_PATHS:
        return [_not_supported(f"{field}.fieldPath", path, ENV_FIELD_PATHS)]
    return []


def _key_ref(ref: Obj, field: str) -> list[FieldCause]:
    """validateConfigMapKeySelector / validateSecretKeySelector."""
    name = ref.get("name") or ""
    out = [_invalid(f"{field}.name", name, e) for e in is_dns1123_subdomain(name)]
    key = ref.get("key") or ""
    if not key:
        out.append(_required(f"{field}.key"))
    elif len(key) > 253 or not _CONFIG_KEY.match(key):
        out.append(_invalid(f"{field}.key", key, CONFIG_KEY_ERR))
    return out


def _validate_env(env: Any, field: str) -> list[FieldCause]:
    """ValidateEnv: names (relaxed rule), and valueFrom: one source, not with a value."""
    out: list[FieldCause] = []
    for j, ev in enumerate(env if isinstance(env, list) else ()):
        ef = f"{field}[{j}]"
        if not isinstance(ev, dict):
            out.append(_invalid(ef, ev, "must be an object"))
            continue
        name = ev.get("name") or ""
        if not name:
            out.append(_required(f"{ef}.name"))
        elif not _RELAXED_ENV_NAME.match(name):
            out.append(_invalid(f"{ef}.name", name, RELAXED_ENV_NAME_ERR))
        vf = ev.get("valueFrom")
        if not isinstance(vf, dict):
            continue
        vff = f"{ef}.valueFrom"
        sources = 0
        if isinstance(vf.get("fieldRef"), dict):
            sources += 1
            out += _field_ref(vf["fieldRef"], f"{vff}.fieldRef")
        rf = vf.get("resourceFieldRef")
        if isinstance(rf, dict):
            sources += 1
            res = rf.get("resource") or ""
            if not res:
                out.append(_required(f"{vff}.resourceFieldRef.resource"))
            elif res not in RESOURCE_FIELD_PATHS and not res.startswith(("requests.hugepages-", "limits.hugepages-")):
                out.append(_not_supported(f"{vff}.resourceFieldRef.resource", res, RESOURCE_FIELD_PATHS))
        for key in ("configMapKeyRef", "secretKeyRef"):
            if isinstance(vf.get(key), dict):
                sources += 1
                out += _key_ref(vf[key], f"{vff}.{key}")
        if sources == 0:
            out.append(_invalid(vff, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` "
                                         "or `secretKeyRef`"))
        elif ev.get("value"):
            out.append(_invalid(vff, "", "may not be specified when `value` is not empty"))
        elif sources > 1:
            out.append(_invalid(vff, "", "may not have more than one field specified at a time"))
    return out


def _validate_env_from(env_from: Any, field: str) -> list[FieldCause]:
    """ValidateEnvFrom: prefix a valid name, exactly one of configMapRef and secretRef."""
    out: list[FieldCause] = []
    for j, ef in enumerate(env_from if isinstance(env_from, list) else ()):
        if not isinstance(ef, dict):
            continue
        prefix = ef.get("prefix") or ""
        if prefix and not _RELAXED_ENV_NAME.match(prefix):
            out.append(_invalid(f"{field}[{j}].prefix", prefix, RELAXED_ENV_NAME_ERR))
        sources = 0
        for key in ("configMapRef", "secretRef"):
            ref = ef.get(key)
            if isinstance(ref, dict):
                sources += 1
                if not ref.get("name"):
                    out.append(_required(f"{field}[{j}].{key}.name"))
        if sources == 0:
            out.append(_invalid(field, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif sources > 1:
            out.append(_invalid(field, "", "may not have more than one field specified at a time"))
    return out


_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc", "sleep")


def _validate_handler(handler: Obj, kinds: tuple[str, ...], grace: Any, field: str) -> list[FieldCause]:
    """validateHandler: exactly one handler type of ``kinds``, each checked."""
    out: list[FieldCause] = []
    count = 0
    for kind in _HANDLERS:
        action = handler.get(kind)
        if kind not in kinds or action is None:
            continue
        if count:
            out.append(_forbidden(f"{field}.{kind}", "may not specify more than 1 handler type"))
            continue
        count += 1
        af = f"{field}.{kind}"
        action = action if isinstance(action, dict) else {}
        if kind == "exec" and not action.get("command"):
            out.append(_required(f"{af}.command"))
        elif kind in ("httpGet", "tcpSocket", "grpc"):
            out += _port_num_or_name(action.get("port"), f"{af}.port")
            scheme = action.get("scheme")
            if kind == "httpGet" and scheme is not None and scheme not in ("HTTP", "HTTPS"):
                out.append(_not_supported(f"{af}.scheme", scheme, ["HTTP", "HTTPS"]))
        elif kind == "sleep" and _is_int(grace):
            secs = action.get("seconds")
            if _is_int(secs) and (secs <= 0 or secs > grace):
                out.append(_invalid(af, secs, f"must be greater than 0 and less than terminationGracePeriodSeconds "
                                              f"({grace}). Enable AllowPodLifecycleSleepActionZeroValue feature "
                                              "gate for zero sleep."))
    if not count:
        out.append(_required(field, "must specify a handler type"))
    return out


_PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
_LIFECYCLE_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")


def _validate_probe(probe: Any, kind: str, grace: Any, field: str) -> list[FieldCause]:
    """validateLivenessProbe / validateReadinessProbe / validateStartupProbe."""
    if not isinstance(probe, dict):
        return []
    out = _validate_handler(probe, _PROBE_HANDLERS, grace, field)
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        v = probe.get(key)
        if type(v) is int and v < 0:
            out.append(_invalid(f"{field}.{key}", v, "must be greater than or equal to 0"))
    tgps = probe.get("terminationGracePeriodSeconds")
    if _is_int(tgps) and tgps <= 0:
        out.append(_invalid(f"{field}.terminationGracePeriodSeconds", tgps, "must be greater than 0"))
    success = probe.get("successThreshold")
    if kind != "readinessProbe" and _is_int(success) and success not in (0, 1):  # 0 is defaulted to 1
        out.append(_invalid(f"{field}.successThreshold", success, "must be 1"))
    if kind == "readinessProbe" and tgps is not None:
        out.append(_invalid(f"{field}.terminationGracePeriodSeconds", tgps, "must not be set for readinessProbes"))
    return out


_PROBE_KEYS = frozenset({"lifecycle", "livenessProbe", "readinessProbe", "startupProbe"})


def _probes_and_lifecycle(ctr: Obj, grace: Any, cf: str) -> list[FieldCause]:
    out: list[FieldCause] = []
    if _PROBE_KEYS.isdisjoint(ctr):
        return out
    lifecycle = ctr.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                out += _validate_handler(lifecycle[hook], _LIFECYCLE_HANDLERS, grace, f"{cf}.lifecycle.{hook}")
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        out += _validate_probe(ctr.get(kind), kind, grace, f"{cf}.{kind}")
    return out


def _validate_security_context(sc: Any, field: str, *, pod: bool) -> list[FieldCause]:
    """The user and group ids of a pod's or container's securityContext (IsValidUserID/GroupID)."""
    out: list[FieldCause] = []
    if not isinstance(sc, dict):
        return out
    keys = ("fsGroup", "runAsUser", "runAsGroup") if pod else ("runAsUser", "runAsGroup")
    for key in keys:
        v = sc.get(key)
        if _is_int(v) and not 0 <= v <= INT32_MAX:
            out.append(_invalid(f"{field}.{key}", v, inclusive_range_error(0, INT32_MAX)))
    if pod:
        for g, gid in enumerate(sc.get("supplementalGroups") or []):
            if _is_int(gid) and not 0 <= gid <= INT32_MAX:
                out.append(_invalid(f"{field}.supplementalGroups[{g}]", gid, inclusive_range_error(0, INT32_MAX)))
    if isinstance(sc.get("seccompProfile"), dict):
        out += _seccomp_profile(sc["seccompProfile"], f"{field}.seccompProfile")
    return out


SECCOMP_PROFILE_TYPES = ["Localhost", "RuntimeDefault", "Unconfined"]


def _seccomp_profile(sp: Obj, field: str) -> list[FieldCause]:
    """validateSeccompProfileField: a known type; localhostProfile set, a local descending path,
    exactly when the type is Localhost.

    Deviates: the cause for a localhostProfile beside another type shows the profile as Go's
    ``%#v`` would, but without the pointer address Go prints for the profile string."""
    out: list[FieldCause] = []
    stype, local = sp.get("type") or "", sp.get("localhostProfile")
    if not stype:
        out.append(_required(f"{field}.type", "type is required when seccompProfile is set"))
    elif stype not in SECCOMP_PROFILE_TYPES:
        out.append(_not_supported(f"{field}.type", stype, SECCOMP_PROFILE_TYPES))
    if stype == "Localhost":
        if local is None:
            out.append(_required(f"{field}.localhostProfile", "must be set when seccomp type is Localhost"))
        else:
            out += _local_descending_path(str(local), f"{field}.localhostProfile")
    elif local is not None:
        value = f"core.SeccompProfile{{Type:{quote(str(stype))}, LocalhostProfile:(*string)(...)}}"
        out.append(FieldCause(f"{field}.localhostProfile",
                              f"Invalid value: {value}: can only be set when seccomp type is Localhost",
                              "FieldValueInvalid"))
    return out


def _validate_container_ports(ports: Any, field: str) -> list[FieldCause]:
    out: list[FieldCause] = []
    names: set[str] = set()
    for j, port in enumerate(ports if isinstance(ports, list) else ()):
        pf = f"{field}[{j}]"
        if not isinstance(port, dict):
            out.append(_invalid(pf, port, "must be an object"))
            continue
        pname = port.get("name")
        if pname:
            errs = _port_name_errors(str(pname))
            if errs:
                out += [_invalid(f"{pf}.name", pname, e) for e in errs]
            elif pname in names:
                out.append(_duplicate(f"{pf}.name", pname))
            else:
                names.add(pname)
        cp = port.get("containerPort")
        if cp in (None, 0):
            out.append(_required(f"{pf}.containerPort"))
        else:
            out += [_invalid(f"{pf}.containerPort", cp, e) for e in is_valid_port_num(cp)]
        hp = port.get("hostPort")
        if hp not in (None, 0):
            out += [_invalid(f"{pf}.hostPort", hp, e) for e in is_valid_port_num(hp)]
        proto = port.get("protocol")
        if proto and proto not in PROTOCOLS:
            out.append(_not_supported(f"{pf}.protocol", proto, PROTOCOLS))
    return out


def validate_container(ctr: Any, field: str, names: set[str] | None = None,
                       volumes: set[str] | None = None) -> list[FieldCause]:
    """The checks every container gets (at ``field``, e.g. ``spec.containers[0]``): name required
    and a DNS-1123 label, image required, terminationMessagePolicy, ports (IANA names, numbers),
    env and envFrom, volume mounts (of ``volumes``; None: not checked), pull policy, resources
    (names, quantities, limits of extended resources), securityContext ids. ``names``: the
    container names seen so far (a repeated name is a duplicate; this one is added); None: no
    duplicate check (the caller has its own).

    Mirrors: kubernetes pkg/apis/core/validation/validation.go validateContainerCommon."""
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
        elif name:
            names.add(name)
    if not ctr.get("image"):
        out.append(_required(f"{cf}.image"))
    tmp = ctr.get("terminationMessagePolicy")
    if tmp and tmp not in TERMINATION_MESSAGE_POLICIES:
        out.append(_not_supported(f"{cf}.terminationMessagePolicy", tmp, TERMINATION_MESSAGE_POLICIES))
    if "ports" in ctr:
        out += _validate_container_ports(ctr["ports"], f"{cf}.ports")
    if "env" in ctr:
        out += _validate_env(ctr["env"], f"{cf}.env")
    if "envFrom" in ctr:
        out += _validate_env_from(ctr["envFrom"], f"{cf}.envFrom")
    if "volumeMounts" in ctr:
        out += _validate_volume_mounts(ctr["volumeMounts"], volumes, f"{cf}.volumeMounts")
    pull = ctr.get("imagePullPolicy")
    if pull and pull not in PULL_POLICIES:
        out.append(_not_supported(f"{cf}.imagePullPolicy", pull, PULL_POLICIES))
    res = ctr.get("resources")
    if res:
        out += validate_resource_requirements(res, f"{cf}.resources")
    if ctr.get("securityContext"):
        out += _validate_security_context(ctr["securityContext"], f"{cf}.securityContext", pod=False)
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


def validate_pod_spec(spec: Any, field: str, restart_policies: list[str] | None = None, *,
                      pod_name: str = "") -> list[FieldCause]:
    """Rules for a PodSpec at ``field`` (``spec`` or ``spec.template.spec``), in upstream's order:
    volumes, containers, init containers, hostNetwork ports, restartPolicy (in ``restart_policies``,
    default Always/OnFailure/Never), dnsPolicy, nodeSelector, securityContext, affinity, dnsConfig,
    topologySpreadConstraints, serviceAccountName, nodeName, activeDeadlineSeconds, hostname,
    subdomain, tolerations, priorityClassName. One pass; a spec found valid is remembered.
    ``pod_name``: a Pod's name (not a template's), with which each generic ephemeral volume's
    claim name must be a valid object name.

    Mirrors: kubernetes pkg/apis/core/validation/validation.go ValidatePodSpec (the rules listed in
    the module docstring; volume sources are checked for count and a few required fields only)."""
    if not isinstance(spec, dict):
        return [_required(field)]
    out: list[FieldCause] = []
    # the Pod's name matters only to a spec with an ephemeral volume (its claim names)
    vols = spec.get("volumes")
    named = pod_name if isinstance(vols, list) and any(isinstance(v, dict) and "ephemeral" in v for v in vols) else ""
    key = _valid_key(("podspec", field, tuple(restart_policies or ()), named), spec)
    if key is not None and key in _VALID:
        return out
    out = _validate_pod_spec(spec, field, restart_policies, named)
    return _remember_valid(key, out)


def _validate_pod_spec(spec: Obj, field: str, restart_policies: list[str] | None, pod_name: str) -> list[FieldCause]:
    grace = spec.get("terminationGracePeriodSeconds")
    volumes, out = _validate_volumes(spec["volumes"], f"{field}.volumes", pod_name) if "volumes" in spec \
        else (set(), [])
    out += _validate_containers(spec, field, volumes, grace)
    if spec.get("hostNetwork") is True:
        out += _host_network_ports(spec, field)
    policy = spec.get("restartPolicy")
    allowed = restart_policies or RESTART_POLICIES
    if policy is not None and policy not in allowed:
        out.append(_not_supported(f"{field}.restartPolicy", policy, allowed))
    dns = spec.get("dnsPolicy")
    if dns and dns not in DNS_POLICIES:
        out.append(_not_supported(f"{field}.dnsPolicy", dns, DNS_POLICIES))
    node_selector = spec.get("nodeSelector")
    if node_selector is not None:
        out += validate_labels(node_selector, f"{field}.nodeSelector")
    if spec.get("securityContext"):
        out += _validate_security_context(spec["securityContext"], f"{field}.securityContext", pod=True)
    for i, ref in enumerate(spec.get("imagePullSecrets") or ()):
        if isinstance(ref, dict) and set(ref) - {"name"}:
            out.append(FieldCause(f"{field}.imagePullSecrets[{i}]", "Invalid value: core.LocalObjectReference"
                                  f"{{Name:{quote(str(ref.get('name') or ''))}}}: only name may be set",
                                  "FieldValueInvalid"))
    if spec.get("affinity"):
        out += _validate_affinity(spec["affinity"], f"{field}.affinity")
    if dns == "None" or spec.get("dnsConfig"):
        out += _validate_dns_config(spec.get("dnsConfig"), dns, f"{field}.dnsConfig")
    for i, gate in enumerate(spec.get("readinessGates") or ()):
        ctype = str((gate or {}).get("conditionType") or "") if isinstance(gate, dict) else ""
        out += [_invalid(f"{field}.readinessGates[{i}].conditionType", ctype, e) for e in is_qualified_name(ctype)]
    seen_gates: set[str] = set()
    for i, gate in enumerate(spec.get("schedulingGates") or ()):
        gname = str(gate.get("name") or "") if isinstance(gate, dict) else ""
        out += [_invalid(f"{field}.schedulingGates[{i}]", gname, e) for e in is_qualified_name(gname)]
        if gname in seen_gates:
            out.append(_duplicate(f"{field}.schedulingGates[{i}]", gname))
        seen_gates.add(gname)
    if spec.get("topologySpreadConstraints"):
        out += _validate_spread(spec["topologySpreadConstraints"], f"{field}.topologySpreadConstraints")
    for key, check in (("serviceAccountName", is_dns1123_subdomain), ("nodeName", is_dns1123_subdomain)):
        value = spec.get(key)
        if isinstance(value, str) and value:
            out += [_invalid(f"{field}.{key}", value, e) for e in check(value)]
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not _is_int(ads) or not 1 <= ads <= INT32_MAX):
        out.append(_invalid(f"{field}.activeDeadlineSeconds", ads, inclusive_range_error(1, INT32_MAX)))
    for key in ("hostname", "subdomain"):
        value = spec.get(key)
        if isinstance(value, str) and value:
            out += [_invalid(f"{field}.{key}", value, e) for e in is_dns1123_label(value)]
    if spec.get("tolerations"):
        out += _validate_tolerations(spec["tolerations"], f"{field}.tolerations")
    for i, alias in enumerate(spec.get("hostAliases") or ()):
        if not isinstance(alias, dict):
            continue
        ip = alias.get("ip") or ""
        if not isinstance(ip, str) or not _is_valid_ip(ip):
            out.append(_invalid(f"{field}.hostAliases[{i}].ip", ip, IP_ERR))
        for j, host in enumerate(alias.get("hostnames") or ()):
            out += [_invalid(f"{field}.hostAliases[{i}].hostnames[{j}]", host, e) for e in is_dns1123_subdomain(str(host))]
    pcn = spec.get("priorityClassName")
    if isinstance(pcn, str) and pcn:
        out += [_invalid(f"{field}.priorityClassName", pcn, e) for e in is_dns1123_subdomain(pcn)]
    rcn = spec.get("runtimeClassName")
    if isinstance(rcn, str):
        out += [_invalid(f"{field}.runtimeClassName", rcn, e) for e in is_dns1123_subdomain(rcn)]
    pp = spec.get("preemptionPolicy")
    if pp is not None:
        if not pp:
            out.append(_required(f"{field}.preemptionPolicy"))
        elif pp not in ("PreemptLowerPriority", "Never"):
            out.append(_not_supported(f"{field}.preemptionPolicy", pp, ["PreemptLowerPriority", "Never"]))
    overhead = spec.get("overhead")
    if isinstance(overhead, dict) and overhead:
        _resource_list(overhead, f"{field}.overhead.limits", out)
    pod_os = spec.get("os")
    if isinstance(pod_os, dict):
        os_name = pod_os.get("name") or ""
        if not os_name:
            out.append(_required(f"{field}.os.name", "cannot be empty"))
        elif os_name not in ("linux", "windows"):
            out.append(_not_supported(f"{field}.os", os_name, ["linux", "windows"]))
    tgps = spec.get("terminationGracePeriodSeconds")
    if tgps is not None and (not _is_int(tgps) or tgps < 0):
        out.append(_invalid(f"{field}.terminationGracePeriodSeconds", tgps, "must be greater than or equal to 0"))
    return out


def _validate_containers(spec: Obj, field: str, volumes: set[str], grace: Any) -> list[FieldCause]:
    """validateContainers then validateInitContainers: regular containers required, names unique
    across both lists (a clash reported on the init container), probes and lifecycle only on
    regular and restartable init containers, restartPolicy only on init containers."""
    out: list[FieldCause] = []
    containers = spec.get("containers")
    cfield = f"{field}.containers"
    names: set[str] = set()
    if not containers:
        out.append(_required(cfield))
    elif not isinstance(containers, list):
        out.append(_invalid(cfield, containers, "must be a list of containers"))
    else:
        for i, ctr in enumerate(containers):
            cf = f"{cfield}[{i}]"
            out += validate_container(ctr, cf, names, volumes)
            if not isinstance(ctr, dict):
                continue
            out += _probes_and_lifecycle(ctr, grace, cf)
            if ctr.get("restartPolicy") is not None:
                out.append(_forbidden(f"{cf}.restartPolicy", "may not be set for non-init containers"))
    inits = spec.get("initContainers")
    ifield = f"{field}.initContainers"
    if inits and not isinstance(inits, list):
        return [*out, _invalid(ifield, inits, "must be a list of containers")]
    for i, ctr in enumerate(inits or ()):
        cf = f"{ifield}[{i}]"
        out += validate_container(ctr, cf, names, volumes)
        if not isinstance(ctr, dict):
            continue
        rp = ctr.get("restartPolicy")
        if rp is not None and rp != "Always":
            out.append(_not_supported(f"{cf}.restartPolicy", rp, ["Always"]))
        if rp == "Always":
            out += _probes_and_lifecycle(ctr, grace, cf)
        else:
            for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if ctr.get(key) is not None:
                    out.append(_forbidden(f"{cf}.{key}", "may not be set for init containers without "
                                                         "restartPolicy=Always"))
    return out


def go_strings(values: list[Any]) -> str:
    """A []string as Go's ``%#v`` prints it: ``[]string{"a", "b"}``."""
    return "[]string{" + ", ".join(quote(str(v)) for v in values) + "}"


def _validate_dns_config(cfg: Any, policy: Any, field: str) -> list[FieldCause]:
    """validatePodDNSConfig: dnsPolicy None needs nameservers; at most 3 nameservers (IPs), 32
    search domains (subdomains, 2048 characters), option names set."""
    if policy == "None":
        if not isinstance(cfg, dict):
            return [_required(field, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not cfg.get("nameservers"):
            return [_required(f"{field}.nameservers", "must provide at least one DNS nameserver when `dnsPolicy` is None")]
    out: list[FieldCause] = []
    if not isinstance(cfg, dict):
        return out
    servers = [str(n) for n in cfg.get("nameservers") or ()]
    if len(servers) > 3:
        out.append(FieldCause(f"{field}.nameservers", f"Invalid value: {go_strings(servers)}: must not have more "
                              "than 3 nameservers", "FieldValueInvalid"))
    for i, ns in enumerate(servers):
        if not _is_valid_ip(ns):
            out.append(_invalid(f"{field}.nameservers[{i}]", ns, IP_ERR))
    searches = [str(d) for d in cfg.get("searches") or ()]
    if len(searches) > 32:
        out.append(FieldCause(f"{field}.searches", f"Invalid value: {go_strings(searches)}: must not have more than "
                              "32 search paths", "FieldValueInvalid"))
    if len(" ".join(searches)) > 2048:
        out.append(FieldCause(f"{field}.searches", f"Invalid value: {go_strings(searches)}: must not have more than "
                              "2048 characters (including spaces) in the search list", "FieldValueInvalid"))
    for i, domain in enumerate(searches):
        d = domain.removesuffix(".")
        out += [_invalid(f"{field}.searches[{i}]", d, e) for e in is_dns1123_subdomain(d)]
    for i, opt in enumerate(cfg.get("options") or ()):
        if not isinstance(opt, dict) or not opt.get("name"):
            out.append(_required(f"{field}.options[{i}]", "must not be empty"))
    return out


def _host_network_ports(spec: Obj, field: str) -> list[FieldCause]:
    """validatePodHostNetworkDeps: with hostNetwork a hostPort must be the containerPort (an unset
    hostPort is defaulted to it, so only a set, different one is refused)."""
    out: list[FieldCause] = []
    if spec.get("hostNetwork") is not True:
        return out
    for i, ctr in enumerate(spec.get("containers") or []):
        for j, port in enumerate((ctr.get("ports") or []) if isinstance(ctr, dict) else ()):
            if isinstance(port, dict) and port.get("hostPort") not in (None, 0) \
                    and port.get("hostPort") != port.get("containerPort"):
                out.append(_invalid(f"{field}.containers[{i}].ports[{j}].hostPort", port["hostPort"],
                                    "must match `containerPort` when `hostNetwork` is true"))
    return out


def _validate_tolerations(tolerations: Any, field: str) -> list[FieldCause]:
    """ValidateTolerations."""
    out: list[FieldCause] = []
    for i, tol in enumerate(tolerations if isinstance(tolerations, list) else ()):
        tf = f"{field}[{i}]"
        if not isinstance(tol, dict):
            out.append(_invalid(tf, tol, "must be an object"))
            continue
        key, op = tol.get("key") or "", tol.get("operator") or ""
        value, effect = tol.get("value") or "", tol.get("effect") or ""
        if key:
            out += [_invalid(f"{tf}.key", key, e) for e in is_qualified_name(key)]
        if not key and op != "Exists":
            out.append(_invalid(f"{tf}.operator", op,
                                'operator must be Exists when `key` is empty, which means "match all values and all keys"'))
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            out.append(_invalid(f"{tf}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if op in ("Equal", ""):
            errs = is_label_value(value)
            if errs:
                out.append(_invalid(f"{tf}.operator", value, ";".join(errs)))
        elif op == "Exists":
            if value:
                out.append(_invalid(f"{tf}.operator", value, "value must be empty when `operator` is 'Exists'"))
        else:
            out.append(_not_supported(f"{tf}.operator", op, ["Equal", "Exists"]))
        if effect and effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            out.append(_not_supported(f"{tf}.effect", effect, ["NoSchedule", "PreferNoSchedule", "NoExecute"]))
    return out


def _node_selector_term(term: Any, field: str, *, check_values: bool) -> list[FieldCause]:
    """ValidateNodeSelectorTerm: matchExpressions (operator and values) and matchFields."""
    out: list[FieldCause] = []
    if not isinstance(term, dict):
        return out
    for j, req in enumerate(term.get("matchExpressions") or []):
        rf = f"{field}.matchExpressions[{j}]"
        if not isinstance(req, dict):
            continue
        op, values = req.get("operator"), req.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                out.append(_required(f"{rf}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                out.append(_forbidden(f"{rf}.values", "may not be specified when `operator` is 'Exists' or "
                                                      "'DoesNotExist'"))
        elif op in ("Gt", "Lt"):
            if len(values) != 1:
                out.append(_required(f"{rf}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"))
        else:
            out.append(_invalid(f"{rf}.operator", op or "", "not a valid selector operator"))
        out += [_invalid(f"{rf}.key", req.get("key") or "", e) for e in is_qualified_name(str(req.get("key") or ""))]
        if check_values:
            for k, v in enumerate(values):
                out += [_invalid(f"{rf}.values[{k}]", v, e) for e in is_label_value(str(v))]
    for j, req in enumerate(term.get("matchFields") or []):
        rf = f"{field}.matchFields[{j}]"
        if not isinstance(req, dict):
            continue
        if req.get("operator") in ("In", "NotIn"):
            if len(req.get("values") or []) != 1:
                out.append(_required(f"{rf}.values", "must be only one value when `operator` is 'In' or 'NotIn' "
                                                     "for node field selector"))
        else:
            out.append(_invalid(f"{rf}.operator", req.get("operator") or "", "not a valid selector operator"))
        if req.get("key") != "metadata.name":
            out.append(_invalid(f"{rf}.key", req.get("key") or "", "not a valid field selector key"))
        else:
            for k, v in enumerate(req.get("values") or []):
                out += [_invalid(f"{rf}.values[{k}]", v, e) for e in is_dns1123_subdomain(str(v))]
    return out


def _pod_affinity_terms(terms: Any, field: str, *, weighted: bool) -> list[FieldCause]:
    out: list[FieldCause] = []
    for i, term in enumerate(terms if isinstance(terms, list) else ()):
        if not isinstance(term, dict):
            continue
        tf = f"{field}[{i}]"
        if weighted:
            w = term.get("weight")
            if _is_int(w) and not 1 <= w <= 100:
                out.append(_invalid(f"{tf}.weight", w, "must be in the range 1-100"))
            tf, term = f"{tf}.podAffinityTerm", term.get("podAffinityTerm") or {}
        topology = term.get("topologyKey") or ""
        if not topology:
            out.append(_required(f"{tf}.topologyKey", "can not be empty"))
        out += [_invalid(f"{tf}.topologyKey", topology, e) for e in is_qualified_name(topology)]
    return out


def _validate_affinity(affinity: Any, field: str) -> list[FieldCause]:
    """validateAffinity: node affinity terms, pod (anti-)affinity topology keys and weights."""
    out: list[FieldCause] = []
    if not isinstance(affinity, dict):
        return out
    na = affinity.get("nodeAffinity")
    if isinstance(na, dict):
        nf = f"{field}.nodeAffinity"
        req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(req, dict):
            tf = f"{nf}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            terms = req.get("nodeSelectorTerms") or []
            if not terms:
                out.append(_required(tf, "must have at least one node selector term"))
            for i, term in enumerate(terms):
                out += _node_selector_term(term, f"{tf}[{i}]", check_values=True)
        for i, pref in enumerate(na.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
            if not isinstance(pref, dict):
                continue
            pf = f"{nf}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            w = pref.get("weight")
            if _is_int(w) and not 1 <= w <= 100:
                out.append(_invalid(f"{pf}.weight", w, "must be in the range 1-100"))
            out += _node_selector_term(pref.get("preference"), f"{pf}.preference", check_values=False)
    for kind in ("podAffinity", "podAntiAffinity"):
        pa = affinity.get(kind)
        if isinstance(pa, dict):
            pf = f"{field}.{kind}"
            out += _pod_affinity_terms(pa.get("requiredDuringSchedulingIgnoredDuringExecution"),
                                       f"{pf}.requiredDuringSchedulingIgnoredDuringExecution", weighted=False)
            out += _pod_affinity_terms(pa.get("preferredDuringSchedulingIgnoredDuringExecution"),
                                       f"{pf}.preferredDuringSchedulingIgnoredDuringExecution", weighted=True)
    return out


def _validate_spread(constraints: Any, field: str) -> list[FieldCause]:
    """validateTopologySpreadConstraints: maxSkew > 0, topologyKey set, whenUnsatisfiable, no
    repeated {topologyKey, whenUnsatisfiable}, minDomains."""
    out: list[FieldCause] = []
    items = [c for c in constraints if isinstance(c, dict)] if isinstance(constraints, list) else []
    for i, c in enumerate(items):
        cf = f"{field}[{i}]"
        skew = c.get("maxSkew")
        if not _is_int(skew) or skew <= 0:
            out.append(_invalid(f"{cf}.maxSkew", skew if skew is not None else 0, "must be greater than zero"))
        if not c.get("topologyKey"):
            out.append(_required(f"{cf}.topologyKey", "can not be empty"))
        action = c.get("whenUnsatisfiable") or ""
        if action not in ("DoNotSchedule", "ScheduleAnyway"):
            out.append(_not_supported(f"{cf}.whenUnsatisfiable", action, ["DoNotSchedule", "ScheduleAnyway"]))
        pair = (c.get("topologyKey"), c.get("whenUnsatisfiable"))
        if any((o.get("topologyKey"), o.get("whenUnsatisfiable")) == pair for o in items[i + 1:]):
            out.append(_duplicate(f"{cf}.{{topologyKey, whenUnsatisfiable}}", f"{{{pair[0] or ''}, {pair[1] or ''}}}"))
        md = c.get("minDomains")
        if md is not None:
            if not _is_int(md) or md <= 0:
                out.append(_invalid(f"{cf}.minDomains", md, "must be greater than zero"))
            if action != "DoNotSchedule":
                out.append(_invalid(f"{cf}.minDomains", md, "can only use minDomains if "
                                                            f"whenUnsatisfiable=DoNotSchedule, not {action}"))
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
    if old_ads is not None and new_ads is None:
        out.append(_invalid("spec.activeDeadlineSeconds", None, "must not update from a positive integer to nil value"))
    elif old_ads is not None and _is_int(new_ads) and _is_int(old_ads) and new_ads > old_ads:
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


def _validate_selector(selector: Any, field: str, empty_invalid: bool) -> list[FieldCause]:
    """A workload's selector: metav1 ValidateLabelSelector, and with ``empty_invalid`` the apps
    kinds' rule that an empty selector is refused (ValidateDeploymentSpec and
    ValidateReplicaSetSpec both say "for deployment"; batch ValidateJobSpec has no such rule: an
    empty manual selector matches every Pod)."""
    if not isinstance(selector, dict):
        return [_invalid(field, selector, "must be a label selector")]
    out = label_selector_causes(selector, field)
    if empty_invalid and not selector.get("matchLabels") and not selector.get("matchExpressions"):
        out.append(_invalid(field, selector, "empty selector is invalid for deployment"))
    return out


def _selector_converts(selector: Any) -> bool:
    """Whether metav1.LabelSelectorAsSelector takes ``selector`` (None and ``{}`` included): it
    refuses exactly what ValidateLabelSelector without AllowInvalidLabelValueInSelector refuses
    (labels.NewRequirement: the key, the operator, the number of values, each value)."""
    return not isinstance(selector, dict) or not label_selector_causes(selector, "")


def _validate_template(spec: Obj, restart_policies: list[str], selector_required: bool) -> list[FieldCause]:
    """The selector and Pod template of a Deployment or ReplicaSet (``selector_required``: a
    missing selector is Required and an empty one Invalid) or of a Job (the selector is defaulted
    from the template unless manual; an empty one is allowed)."""
    out: list[FieldCause] = []
    selector = spec.get("selector")
    template = spec.get("template")
    if selector is None:
        if selector_required:
            out.append(_required("spec.selector"))
    else:
        causes = _validate_selector(selector, "spec.selector", empty_invalid=selector_required)
        out += causes
        if selector_required and not _selector_converts(selector):
            # ValidateDeploymentSpec/ValidateReplicaSetSpec: a selector LabelSelectorAsSelector
            # refuses is named once more, and the template is then not validated at all
            out.append(_invalid("spec.selector", selector, "invalid label selector"))
            return out
    if not isinstance(template, dict):
        out.append(_required("spec.template"))
        return out
    tlabels = (template.get("metadata") or {}).get("labels") or {}
    out += validate_labels(tlabels, "spec.template.metadata.labels")
    # a missing selector is labels.Nothing(), which matches no template either
    missing = selector is None and selector_required
    if missing or (isinstance(selector, dict) and (selector.get("matchLabels") or selector.get("matchExpressions"))
                   and not _selector_matches(selector, tlabels)):
        out.append(_invalid("spec.template.metadata.labels", tlabels, "`selector` does not match template `labels`"))
    out += validate_pod_spec(template.get("spec"), "spec.template.spec", restart_policies)
    tspec = template.get("spec")
    if isinstance(tspec, dict) and tspec.get("ephemeralContainers"):  # ValidatePodTemplateSpec
        out.append(_forbidden("spec.template.spec.ephemeralContainers",
                              "ephemeral containers not allowed in pod template"))
    return out


def pod_template_spec_causes(template: Any, field: str) -> list[FieldCause]:
    """ValidatePodTemplateSpec at ``field`` (a PodTemplate's ``template``): the template's labels
    and annotations (at ``<field>.labels``, ``<field>.annotations``, as upstream names them), its
    pod spec with every restart policy allowed (a missing spec is the empty one: its containers
    are then Required), and no ephemeral containers.

    Mirrors: kubernetes pkg/apis/core/validation/validation.go ValidatePodTemplateSpec."""
    tpl: Obj = template if isinstance(template, dict) else {}
    md: Obj = tpl["metadata"] if isinstance(tpl.get("metadata"), dict) else {}
    out = validate_labels(md.get("labels") or {}, f"{field}.labels")
    out += validate_annotations(md.get("annotations"), f"{field}.annotations")
    spec: Obj = tpl["spec"] if isinstance(tpl.get("spec"), dict) else {}
    out += validate_pod_spec(spec, f"{field}.spec")
    if spec.get("ephemeralContainers"):
        out.append(_forbidden(f"{field}.spec.ephemeralContainers", "ephemeral containers not allowed in pod template"))
    return out


def _validate_pod_template(obj: Obj, old: Obj | None) -> list[FieldCause]:
    """ValidatePodTemplate / ValidatePodTemplateUpdate (the metadata is checked before): the
    ``template`` as :func:`pod_template_spec_causes`."""
    return pod_template_spec_causes(obj.get("template"), "template")


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
    ads = ((spec.get("template") or {}).get("spec") or {}).get("activeDeadlineSeconds")
    if ads is not None and _selector_converts(spec.get("selector")):  # ValidatePodTemplateSpecForReplicaSet
        out.append(_invalid("spec.template.spec.activeDeadlineSeconds", ads, "must not be specified"))
    if old is not None and (old.get("spec") or {}).get("selector") != spec.get("selector"):
        out.append(_invalid("spec.selector", spec.get("selector"), "field is immutable"))
    return out


def _go_int_or_string(v: Any) -> str:
    """An intstr.IntOrString as Go's ``%#v`` prints it in a field error (the type has no value
    String method): ``intstr.IntOrString{Type:1, IntVal:0, StrVal:"25%"}``."""
    if isinstance(v, str):
        return f'intstr.IntOrString{{Type:1, IntVal:0, StrVal:{quote(v)}}}'
    return f'intstr.IntOrString{{Type:0, IntVal:{v if _is_int(v) else 0}, StrVal:""}}'


def _invalid_int_or_string(field: str, v: Any, detail: str) -> FieldCause:
    return FieldCause(field, f"Invalid value: {_go_int_or_string(v)}: {detail}", "FieldValueInvalid")


def _int_or_percent(v: Any) -> int:
    """getIntOrPercentValue: a valid percentage's number, else the IntValue (0 for a bad string)."""
    if isinstance(v, str):
        return int_value(v[:-1] if _PERCENT.match(v) else v)
    return v if _is_int(v) else 0


def _positive_int_or_percent(v: Any, field: str) -> list[FieldCause]:
    """ValidatePositiveIntOrPercent."""
    if isinstance(v, str):
        if not _PERCENT.match(v):
            return [_invalid_int_or_string(field, v, regex_error(
                "a valid percent string must be a numeric string followed by an ending '%'", PERCENT_FMT, "1%", "93%"))]
        return []
    return _non_negative_at(v, field)


def _not_more_than_100_percent(v: Any, field: str) -> list[FieldCause]:
    """IsNotMoreThan100Percent: a valid percent string above 100%."""
    if isinstance(v, str) and _PERCENT.match(v) and int(v[:-1]) > 100:
        return [_invalid_int_or_string(field, v, "must not be greater than 100%")]
    return []


def validate_percent_or_count(v: Any, field: str) -> list[FieldCause]:
    """A PodDisruptionBudget's minAvailable / maxUnavailable (an int or a percent string):
    ValidatePositiveIntOrPercent then IsNotMoreThan100Percent, as FieldCauses at ``field``.

    Mirrors: kubernetes pkg/apis/policy/validation ValidatePodDisruptionBudgetSpec."""
    return _positive_int_or_percent(v, field) + _not_more_than_100_percent(v, field)


def _validate_deployment_strategy(strategy: Any, field: str) -> list[FieldCause]:
    """ValidateDeploymentStrategy (the strategy is defaulted: type RollingUpdate, 25%/25%)."""
    if not isinstance(strategy, dict):
        return []
    stype, ru = strategy.get("type"), strategy.get("rollingUpdate")
    if stype == "Recreate":
        if ru is not None:
            return [_forbidden(f"{field}.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if stype == "RollingUpdate":
        if not isinstance(ru, dict):
            return [_required(f"{field}.rollingUpdate", "this should be defaulted and never be nil")]
        rf = f"{field}.rollingUpdate"
        unavailable, surge = ru.get("maxUnavailable"), ru.get("maxSurge")
        out = _positive_int_or_percent(unavailable, f"{rf}.maxUnavailable")
        out += _positive_int_or_percent(surge, f"{rf}.maxSurge")
        if _int_or_percent(unavailable) == 0 and _int_or_percent(surge) == 0:
            out.append(_invalid_int_or_string(f"{rf}.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0"))
        out += _not_more_than_100_percent(unavailable, f"{rf}.maxUnavailable")
        return out
    # Go prints the whole (dereferenced) strategy struct; a set rollingUpdate is a pointer there
    ru_shown = "(*apps.RollingUpdateDeployment)(nil)" if ru is None else "(*apps.RollingUpdateDeployment)(0xc000000000)"
    shown = f"apps.DeploymentStrategy{{Type:{quote(str(stype or ''))}, RollingUpdate:{ru_shown}}}"
    return [FieldCause(field, f'Unsupported value: {shown}: supported values: "Recreate", "RollingUpdate"',
                       "FieldValueNotSupported")]


def _validate_deployment(obj: Obj, old: Obj | None) -> list[FieldCause]:
    """ValidateDeploymentSpec: the ReplicaSet rules, then strategy, revisionHistoryLimit and
    progressDeadlineSeconds (> minReadySeconds)."""
    out = _validate_replicated(obj, old)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return out
    out += _validate_deployment_strategy(spec.get("strategy"), "spec.strategy")
    out += _non_negative_at(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    pds = spec.get("progressDeadlineSeconds")
    if _is_int(pds):
        out += _non_negative_at(pds, "spec.progressDeadlineSeconds")
        mrs = spec.get("minReadySeconds")
        if pds <= (mrs if _is_int(mrs) else 0):
            out.append(_invalid("spec.progressDeadlineSeconds", pds, "must be greater than minReadySeconds"))
    return out


#: batch validation maxParallelismForIndexedJob, maxFailedIndexesForIndexedJob, completionsSoftLimit
MAX_PARALLELISM_INDEXED = 100_000
MAX_FAILED_INDEXES_INDEXED = 100_000
COMPLETIONS_SOFT_LIMIT = 100_000
#: parallelismLimitForHighCompletions, maxFailedIndexesLimitForHighCompletions
PARALLELISM_LIMIT_HIGH_COMPLETIONS = 10_000
MAX_FAILED_INDEXES_HIGH_COMPLETIONS = 10_000
#: maxSuccessPolicyRule, maxJobSuccessPolicySucceededIndexesLimit
MAX_SUCCESS_POLICY_RULES = 20
MAX_SUCCEEDED_INDEXES_LENGTH = 64 * 1024


def _parse_index_interval(text: str, completions: int) -> tuple[int, int]:
    """parseIndexInterval: ``x`` or ``x-y`` with ``x < y < completions``. Raises ValueError
    with upstream's message."""
    limits = text.split("-")
    if len(limits) > 2:
        raise ValueError(f"the fragment {quote(text)} violates the requirement that an index interval can have at "
                         "most two parts separated by '-'")
    bounds = []
    for part in limits:
        try:
            v = atoi(part)
        except ValueError:
            raise ValueError(f"cannot convert string to integer for index: {quote(part)}") from None
        if v >= completions:
            raise ValueError(f"too large index: {quote(part)}")
        bounds.append(v)
    if len(bounds) > 1 and bounds[0] >= bounds[1]:
        raise ValueError(f"non-increasing order, previous: {bounds[0]}, current: {bounds[1]}")
    return bounds[0], bounds[-1]


def validate_indexes_format(text: str, completions: int) -> int:
    """validateIndexesFormat of a compressed index list (``"0-2,5"``): returns how many indexes
    it holds. Raises ValueError with upstream's message (bad fragment, index ``>= completions``,
    intervals not increasing)."""
    if not text:
        return 0
    last: int | None = None
    n = 0
    for frag in text.split(","):
        x, y = _parse_index_interval(frag, completions)
        if last is not None and last >= x:
            raise ValueError(f"non-increasing order, previous: {last}, current: {x}")
        n += y - x + 1
        last = y
    return n


def _go_success_policy(sp: Any) -> str:
    """A successPolicy as Go's %#v prints batch.SuccessPolicy in a field error (pointer fields as
    an address: Go prints the real one, we print 0xc000000000)."""
    rules = sp.get("rules") if isinstance(sp, dict) else None
    if rules is None:
        shown = "[]batch.SuccessPolicyRule(nil)"
    else:
        items = []
        for r in rules if isinstance(rules, list) else []:
            r = r if isinstance(r, dict) else {}
            si = "(*string)(nil)" if r.get("succeededIndexes") is None else "(*string)(0xc000000000)"
            sc = "(*int32)(nil)" if r.get("succeededCount") is None else "(*int32)(0xc000000000)"
            items.append(f"batch.SuccessPolicyRule{{SucceededIndexes:{si}, SucceededCount:{sc}}}")
        shown = "[]batch.SuccessPolicyRule{" + ", ".join(items) + "}"
    return f"batch.SuccessPolicy{{Rules:{shown}}}"


def _invalid_shown(field: str, shown: str, detail: str) -> FieldCause:
    return FieldCause(field, f"Invalid value: {shown}: {detail}", "FieldValueInvalid")


def _validate_success_policy(sp: Obj, completions: Any) -> list[FieldCause]:
    """validateSuccessPolicy / validateSuccessPolicyRule (an Indexed Job's spec.successPolicy)."""
    out: list[FieldCause] = []
    rules = sp.get("rules") or []
    path = "spec.successPolicy.rules"
    if not rules:
        out.append(_required(path, "at least one rules must be specified when the successPolicy is specified"))
    if len(rules) > MAX_SUCCESS_POLICY_RULES:
        out.append(FieldCause(path, f"Too many: {len(rules)}: must have at most {MAX_SUCCESS_POLICY_RULES} items",
                              "FieldValueTooMany"))
    if not _is_int(completions):
        return out  # spec.completions is required for Indexed Jobs and reported already
    for i, rule in enumerate(rules):
        rp = f"{path}[{i}]"
        si, sc = rule.get("succeededIndexes"), rule.get("succeededCount")
        if si is None and sc is None:
            out.append(_required(rp, "at least one of succeededCount or succeededIndexes must be specified"))
        n_indexes = 0
        if isinstance(si, str):
            if len(si) > MAX_SUCCEEDED_INDEXES_LENGTH:
                out.append(FieldCause(f"{rp}.succeededIndexes",
                                      f"Too long: may not be more than {MAX_SUCCEEDED_INDEXES_LENGTH} bytes",
                                      "FieldValueTooLong"))
            try:
                n_indexes = validate_indexes_format(si, completions)
            except ValueError as e:
                out.append(_invalid(f"{rp}.succeededIndexes", si, f"error parsing succeededIndexes: {e}"))
        if _is_int(sc):
            out += _non_negative_at(sc, f"{rp}.succeededCount")
            if sc > completions:
                out.append(_invalid(f"{rp}.succeededCount", sc,
                                    f"must be less than or equal to {completions} (the number of specified completions)"))
            if si is not None and sc > n_indexes:
                out.append(_invalid(f"{rp}.succeededCount", sc, f"must be less than or equal to {n_indexes} (the "
                                                                 "number of indexes in the specified succeededIndexes field)"))
    return out


#: pkg/apis/batch/validation limits of a podFailurePolicy and of spec.managedBy
MAX_POD_FAILURE_POLICY_RULES = 20
MAX_ON_EXIT_CODES_VALUES = 255
MAX_ON_POD_CONDITIONS_PATTERNS = 20
MAX_MANAGED_BY_LENGTH = 63
POD_FAILURE_POLICY_ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"]
ON_EXIT_CODES_OPERATORS = ["In", "NotIn"]
CONDITION_STATUSES = ["False", "True", "Unknown"]
POD_REPLACEMENT_POLICIES = ["Failed", "TerminatingOrFailed"]
_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH = re.compile(f"^{_HTTP_PATH_FMT}$")


def _go_list_q(values: list[str]) -> str:
    """A string slice as Go's ``%q`` prints it: ``["In" "NotIn"]``."""
    return "[" + " ".join(quote(v) for v in values) + "]"


def _go_int32s(values: Any) -> str:
    """A ``[]int32`` as Go's ``%#v`` prints it (``[]int32(nil)`` when absent)."""
    if values is None:
        return "[]int32(nil)"
    return "[]int32{" + ", ".join(str(v) for v in values) + "}"


def _go_pod_failure_policy(pfp: Any) -> str:
    """A podFailurePolicy as Go's %#v prints batch.PodFailurePolicy in a field error (pointer
    fields as an address: Go prints the real one, we print 0xc000000000)."""
    rules = pfp.get("rules") if isinstance(pfp, dict) else None
    if rules is None:
        return "batch.PodFailurePolicy{Rules:[]batch.PodFailurePolicyRule(nil)}"
    items = []
    for r in rules if isinstance(rules, list) else []:
        r = r if isinstance(r, dict) else {}
        codes = ("(*batch.PodFailurePolicyOnExitCodesRequirement)(nil)" if r.get("onExitCodes") is None
                 else "(*batch.PodFailurePolicyOnExitCodesRequirement)(0xc000000000)")
        pcs = r.get("onPodConditions")
        if pcs is None:
            shown = "[]batch.PodFailurePolicyOnPodConditionsPattern(nil)"
        else:
            shown = "[]batch.PodFailurePolicyOnPodConditionsPattern{" + ", ".join(
                f"batch.PodFailurePolicyOnPodConditionsPattern{{Type:{quote(str(p.get('type') or ''))}, "
                f"Status:{quote(str(p.get('status') or ''))}}}" for p in pcs if isinstance(p, dict)) + "}"
        items.append(f"batch.PodFailurePolicyRule{{Action:{quote(str(r.get('action') or ''))}, "
                     f"OnExitCodes:{codes}, OnPodConditions:{shown}}}")
    return "batch.PodFailurePolicy{Rules:[]batch.PodFailurePolicyRule{" + ", ".join(items) + "}}"


def domain_prefixed_path_causes(value: str, field: str) -> list[FieldCause]:
    """IsDomainPrefixedPath: ``acme.io/foo``, the part before the first ``/`` a DNS-1123 subdomain,
    the rest HTTP path characters; ``Required value`` when empty.

    Mirrors: k8s.io/apimachinery pkg/util/validation IsDomainPrefixedPath."""
    if not value:
        return [_required(field)]
    host, _, rest = value.partition("/")
    if not host or not rest:
        return [_invalid(field, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    out = [_invalid(field, host, e) for e in is_dns1123_subdomain(host)]
    if not _HTTP_PATH.match(rest):
        out.append(_invalid(field, rest, f"Invalid path (regex used for validation is '{_HTTP_PATH_FMT}')"))
    return out


def _validate_managed_by(value: Any) -> list[FieldCause]:
    """spec.managedBy: IsDomainPrefixedPath, then at most 63 characters."""
    path = "spec.managedBy"
    if not isinstance(value, str):
        return []
    out = domain_prefixed_path_causes(value, path)
    if len(value) > MAX_MANAGED_BY_LENGTH:
        out.append(FieldCause(path, f"Too long: may not be more than {MAX_MANAGED_BY_LENGTH} bytes",
                              "FieldValueTooLong"))
    return out


def _too_many(field: str, actual: int, limit: int) -> FieldCause:
    return FieldCause(field, f"Too many: {actual}: must have at most {limit} items", "FieldValueTooMany")


def _validate_on_exit_codes(codes: Obj, path: str, container_names: set[str]) -> list[FieldCause]:
    """validatePodFailurePolicyRuleOnExitCodes: the operator, the container name, then the values
    (1 to 255, none 0 with In, no duplicates, in ascending order)."""
    out: list[FieldCause] = []
    op = codes.get("operator") or ""
    if not op:
        out.append(_required(f"{path}.operator", f"valid values: {_go_list_q(ON_EXIT_CODES_OPERATORS)}"))
    elif op not in ON_EXIT_CODES_OPERATORS:
        out.append(_not_supported(f"{path}.operator", op, ON_EXIT_CODES_OPERATORS))
    name = codes.get("containerName")
    if name is not None and name not in container_names:
        out.append(_invalid(f"{path}.containerName", name,
                            "must be one of the container or initContainer names in the pod template"))
    values = codes.get("values")
    vals = [v for v in values if _is_int(v)] if isinstance(values, list) else []
    if not vals:
        out.append(_invalid_shown(f"{path}.values", _go_int32s(values), "at least one value is required"))
    elif len(vals) > MAX_ON_EXIT_CODES_VALUES:
        out.append(_too_many(f"{path}.values", len(vals), MAX_ON_EXIT_CODES_VALUES))
    seen: set[int] = set()
    ordered = True
    for j, v in enumerate(vals):
        if op == "In" and v == 0:
            out.append(_invalid(f"{path}.values[{j}]", v, "must not be 0 for the In operator"))
        if v in seen:
            out.append(_duplicate(f"{path}.values[{j}]", v))
        seen.add(v)
        if j > 0 and vals[j - 1] > v:
            ordered = False
    if not ordered:
        out.append(_invalid_shown(f"{path}.values", _go_int32s(vals), "must be ordered"))
    return out


def _validate_on_pod_conditions(patterns: list[Any], path: str) -> list[FieldCause]:
    """validatePodFailurePolicyRuleOnPodConditions: at most 20 patterns, each a qualified
    condition type and a True/False/Unknown status."""
    out: list[FieldCause] = []
    if len(patterns) > MAX_ON_POD_CONDITIONS_PATTERNS:
        out.append(_too_many(path, len(patterns), MAX_ON_POD_CONDITIONS_PATTERNS))
    for j, p in enumerate(patterns):
        p = p if isinstance(p, dict) else {}
        ctype = str(p.get("type") or "")
        out += [_invalid(f"{path}[{j}].type", ctype, e) for e in is_qualified_name(ctype)]
        status = p.get("status") or ""
        if not status:
            out.append(_required(f"{path}[{j}].status", f"valid values: {_go_list_q(CONDITION_STATUSES)}"))
        elif status not in CONDITION_STATUSES:
            out.append(_not_supported(f"{path}[{j}].status", status, CONDITION_STATUSES))
    return out


def _validate_pod_failure_policy(spec: Obj, pfp: Obj) -> list[FieldCause]:
    """validatePodFailurePolicy / validatePodFailurePolicyRule: at most 20 rules; each an action
    (FailIndex only with backoffLimitPerIndex) and exactly one of onExitCodes and onPodConditions."""
    out: list[FieldCause] = []
    rules = pfp.get("rules") or []
    path = "spec.podFailurePolicy.rules"
    if len(rules) > MAX_POD_FAILURE_POLICY_RULES:
        out.append(_too_many(path, len(rules), MAX_POD_FAILURE_POLICY_RULES))
    tspec = ((spec.get("template") or {}).get("spec")) or {}
    names = {str(c.get("name")) for key in ("containers", "initContainers")
             for c in tspec.get(key) or [] if isinstance(c, dict)}
    for i, rule in enumerate(rules):
        rule = rule if isinstance(rule, dict) else {}
        rp = f"{path}[{i}]"
        action = rule.get("action") or ""
        if not action:
            out.append(_required(f"{rp}.action", f"valid values: {_go_list_q(POD_FAILURE_POLICY_ACTIONS)}"))
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                out.append(_invalid(f"{rp}.action", action, "requires the backoffLimitPerIndex to be set"))
        elif action not in POD_FAILURE_POLICY_ACTIONS:
            out.append(_not_supported(f"{rp}.action", action, POD_FAILURE_POLICY_ACTIONS))
        codes, patterns = rule.get("onExitCodes"), rule.get("onPodConditions") or []
        if isinstance(codes, dict):
            out += _validate_on_exit_codes(codes, f"{rp}.onExitCodes", names)
        if patterns:
            out += _validate_on_pod_conditions(patterns, f"{rp}.onPodConditions")
        if codes is not None and patterns:
            out.append(FieldCause(rp, "Invalid value: specifying both OnExitCodes and OnPodConditions is not "
                                      "supported", "FieldValueInvalid"))
        if codes is None and not patterns:
            out.append(FieldCause(rp, "Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
                                  "FieldValueInvalid"))
    return out


def _validate_pod_replacement_policy(spec: Obj) -> list[FieldCause]:
    """validatePodReplacementPolicy: Failed or TerminatingOrFailed; only Failed with a
    podFailurePolicy."""
    prp = spec.get("podReplacementPolicy")
    if prp is None:
        return []
    if spec.get("podFailurePolicy") is not None:
        return [] if prp == "Failed" else [_not_supported("spec.podReplacementPolicy", prp, ["Failed"])]
    if prp not in POD_REPLACEMENT_POLICIES:
        return [_not_supported("spec.podReplacementPolicy", prp, POD_REPLACEMENT_POLICIES)]
    return []


def _validate_indexed_limits(spec: Obj) -> list[FieldCause]:
    """validateJobSpec's rules for completionMode Indexed."""
    out: list[FieldCause] = []
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    bpi, mfi = spec.get("backoffLimitPerIndex"), spec.get("maxFailedIndexes")
    if completions is None:
        out.append(_required("spec.completions", "when completion mode is Indexed"))
    if _is_int(parallelism) and parallelism > MAX_PARALLELISM_INDEXED:
        out.append(_invalid("spec.parallelism", parallelism, f"must be less than or equal to "
                                                             f"{MAX_PARALLELISM_INDEXED} when completion mode is Indexed"))
    if _is_int(completions) and _is_int(mfi) and mfi > completions:
        out.append(_invalid("spec.maxFailedIndexes", mfi, "must be less than or equal to completions"))
    if _is_int(mfi) and mfi > MAX_FAILED_INDEXES_INDEXED:
        out.append(_invalid("spec.maxFailedIndexes", mfi, f"must be less than or equal to {MAX_FAILED_INDEXES_INDEXED}"))
    if _is_int(completions) and completions > COMPLETIONS_SOFT_LIMIT and bpi is not None:
        above = f"when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
        if mfi is None:
            out.append(_required("spec.maxFailedIndexes",
                                 f"must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"))
        if _is_int(parallelism) and parallelism > PARALLELISM_LIMIT_HIGH_COMPLETIONS:
            out.append(_invalid("spec.parallelism", parallelism,
                                f"must be less than or equal to {PARALLELISM_LIMIT_HIGH_COMPLETIONS} {above}"))
        if _is_int(mfi) and mfi > MAX_FAILED_INDEXES_HIGH_COMPLETIONS:
            out.append(_invalid("spec.maxFailedIndexes", mfi,
                                f"must be less than or equal to {MAX_FAILED_INDEXES_HIGH_COMPLETIONS} {above}"))
    return out


def _validate_job_spec(spec: Obj) -> list[FieldCause]:
    """validateJobSpec in upstream's order (the counters, backoffLimitPerIndex and
    maxFailedIndexes, managedBy, completionMode and its Indexed limits, podFailurePolicy,
    successPolicy, podReplacementPolicy, the template and its restartPolicy), with the selector
    rules of ValidateJobSpec when a selector is set. Paths under ``spec``."""
    out: list[FieldCause] = []
    for key in ("parallelism", "completions"):
        out += _non_negative(spec, key)
    out += _non_negative_at(spec.get("activeDeadlineSeconds"), "spec.activeDeadlineSeconds")
    out += _non_negative(spec, "backoffLimit")
    out += _non_negative_at(spec.get("ttlSecondsAfterFinished"), "spec.ttlSecondsAfterFinished")
    bpi, mfi = spec.get("backoffLimitPerIndex"), spec.get("maxFailedIndexes")
    out += _non_negative_at(bpi, "spec.backoffLimitPerIndex")
    if mfi is not None:
        out += _non_negative_at(mfi, "spec.maxFailedIndexes")
        if bpi is None:
            out.append(_required("spec.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    if spec.get("managedBy") is not None:
        out += _validate_managed_by(spec["managedBy"])
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        out.append(_not_supported("spec.completionMode", mode, ["NonIndexed", "Indexed"]))
    if mode == "Indexed":
        out += _validate_indexed_limits(spec)
    if mode in (None, "NonIndexed"):
        if bpi is not None:
            out.append(_invalid("spec.backoffLimitPerIndex", bpi, "requires indexed completion mode"))
        if mfi is not None:
            out.append(_invalid("spec.maxFailedIndexes", mfi, "requires indexed completion mode"))
    pfp = spec.get("podFailurePolicy")
    if isinstance(pfp, dict):
        out += _validate_pod_failure_policy(spec, pfp)
    sp = spec.get("successPolicy")
    if sp is not None:
        if mode != "Indexed":
            out.append(_invalid_shown("spec.successPolicy", _go_success_policy(sp), "requires indexed completion mode"))
        elif isinstance(sp, dict):
            out += _validate_success_policy(sp, spec.get("completions"))
    out += _validate_pod_replacement_policy(spec)
    out += _validate_template(spec, RESTART_POLICIES, selector_required=False)
    template = spec.get("template")
    tspec = template.get("spec") if isinstance(template, dict) else None
    restart = tspec.get("restartPolicy") if isinstance(tspec, dict) else "Never"
    if restart in ("Always", "", None):
        out.append(_required("spec.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        out.append(_not_supported("spec.template.spec.restartPolicy", restart, ["OnFailure", "Never"]))
    elif pfp is not None and restart != "Never":
        out.append(_invalid("spec.template.spec.restartPolicy", restart,
                            'only "Never" is supported when podFailurePolicy is specified'))
    return out


def validate_job_template_spec(spec: Any, field: str) -> list[FieldCause]:
    """ValidateJobTemplateSpec (a CronJob's ``spec.jobTemplate`` spec at ``field``): the Job
    spec rules, then no selector (it is generated) and no manualSelector true."""
    if not isinstance(spec, dict):
        return []
    out = [FieldCause(field + c.field[len("spec"):], c.message, c.reason)
           for c in _validate_job_spec({k: v for k, v in spec.items() if k != "selector"})]
    if spec.get("selector") is not None:
        out.append(_invalid(f"{field}.selector", spec["selector"], "`selector` will be auto-generated"))
    if spec.get("manualSelector") is True:
        out.append(_not_supported(f"{field}.manualSelector", True, ["nil", "false"]))
    return out


def _validate_generated_selector(obj: Obj, old: Obj | None) -> list[FieldCause]:
    """validateGeneratedSelector: unless ``spec.manualSelector``, the Pod template carries the
    generated labels with the Job's uid and name (``controller-uid``, ``job-name``, and their
    ``batch.kubernetes.io/`` forms unless an update's stored Job lacks those) and the selector
    selects them (else "`selector` not auto-generated": a selector given with other labels).

    Mirrors: kubernetes pkg/apis/batch/validation validateGeneratedSelector, ValidateHasLabel;
    pkg/registry/batch/job/strategy.go validationOptionsForJob (RequirePrefixedLabels)."""
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    if spec.get("manualSelector") is True or not isinstance(selector, dict):
        return []
    md = obj.get("metadata") or {}
    uid, name = str(md.get("uid") or ""), str(md.get("name") or "")
    out: list[FieldCause] = [] if uid else [_required("metadata.uid")]
    template = spec.get("template")
    labels = ((template.get("metadata") or {}).get("labels") or {}) if isinstance(template, dict) else {}
    labels = labels if isinstance(labels, dict) else {}
    prefixed = ("batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name")
    if old is None:
        require_prefixed = True
    else:
        old_labels = (((old.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
        require_prefixed = all(k in old_labels for k in prefixed)
    wanted = [("controller-uid", uid), ("job-name", name)]
    if require_prefixed:
        wanted += [(prefixed[0], uid), (prefixed[1], name)]
    for key, value in wanted:
        at = f"spec.template.metadata.labels[{key}]"
        if key not in labels:
            out.append(_required(at, f"must be '{value}'"))
        elif labels[key] != value:
            out.append(_invalid(at, labels, f"must be '{value}'"))
    try:
        if not from_label_selector(selector).matches(dict(wanted)):
            out.append(_invalid("spec.selector", selector, "`selector` not auto-generated"))
    except SelectorError:  # its own causes come from the selector's validation
        pass
    return out


def _validate_job(obj: Obj, old: Obj | None) -> list[FieldCause]:
    """ValidateJob / ValidateJobSpecUpdate: the generated selector
    (:func:`_validate_generated_selector`), the spec (:func:`_validate_job_spec`), then the
    Indexed hostname check on the name and, on update, the immutable fields and the elastic
    completions rule."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    out = _validate_generated_selector(obj, old) + _validate_job_spec(spec)
    mode, bpi = spec.get("completionMode"), spec.get("backoffLimitPerIndex")
    pfp, sp = spec.get("podFailurePolicy"), spec.get("successPolicy")
    completions = spec.get("completions")
    name = str((obj.get("metadata") or {}).get("name") or "")
    if mode == "Indexed" and _is_int(completions) and completions > 0 and name:
        # the controller names Pod hostnames <job>-<index>
        hostname = f"{name}-{completions - 1}"
        if is_dns1123_label(hostname):
            out.append(_invalid("metadata.name", name, f"will not able to create pod with invalid DNS label: {hostname}"))
    if old is not None:
        ospec = old.get("spec") or {}
        for key in ("completions", "selector", "template", "completionMode"):
            if key == "completions" and spec.get("completionMode") != "Indexed":
                if ospec.get(key) != spec.get(key):
                    out.append(_invalid(f"spec.{key}", spec.get(key), "field is immutable"))
            elif key == "completions":
                # elastic Indexed Jobs: completions changes only together with parallelism
                if _is_int(completions) and ospec.get(key) != completions and completions != spec.get("parallelism"):
                    out.append(_invalid("spec.completions", completions,
                                        "can only be modified in tandem with spec.parallelism"))
            elif key == "template":
                if _template_without_gates(ospec.get(key)) != _template_without_gates(spec.get(key)):
                    out.append(_invalid("spec.template", spec.get(key), "field is immutable"))
            elif ospec.get(key) != spec.get(key):
                out.append(_invalid(f"spec.{key}", spec.get(key), "field is immutable"))
        if ospec.get("podFailurePolicy") != pfp:
            shown = "null" if pfp is None else _go_pod_failure_policy(pfp)
            out.append(_invalid_shown("spec.podFailurePolicy", shown, "field is immutable"))
        if ospec.get("backoffLimitPerIndex") != bpi:
            out.append(_invalid("spec.backoffLimitPerIndex", bpi, "field is immutable"))
        if ospec.get("managedBy") != spec.get("managedBy"):
            out.append(_invalid("spec.managedBy", spec.get("managedBy"), "field is immutable"))
        if ospec.get("successPolicy") != sp:
            shown = "null" if sp is None else _go_success_policy(sp)
            out.append(_invalid_shown("spec.successPolicy", shown, "field is immutable"))
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


def _service_ports(spec: Obj, headless: bool, out: list[FieldCause]) -> None:
    """validateServicePort of each port, then the duplicate nodePort and (port, protocol) checks."""
    ports = spec.get("ports") or []
    names: set[str] = set()
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
        out += [_invalid(f"{pf}.port", port.get("port"), e) for e in is_valid_port_num(port.get("port"))]
        proto = port.get("protocol") or "TCP"  # defaulted before validation
        if proto not in PROTOCOLS:
            out.append(_not_supported(f"{pf}.protocol", proto, PROTOCOLS))
        if port.get("targetPort") is not None:
            out += _port_num_or_name(port.get("targetPort"), f"{pf}.targetPort")
        app = port.get("appProtocol")
        if isinstance(app, str):
            out += [_invalid(f"{pf}.appProtocol", app, e) for e in is_qualified_name(app)]


def service_cluster_ips_causes(spec: Obj) -> list[FieldCause]:
    """ValidateServiceClusterIPsRelatedFields of a Service spec (clusterIPs is made from clusterIP
    first, as the REST storage's normalizeClusterIPs does); the Service allocator runs it before it
    allocates (:mod:`pumice.apiserver.servicealloc`)."""
    out: list[FieldCause] = []
    _cluster_ips(spec, out)
    return out


def _cluster_ips(spec: Obj, out: list[FieldCause]) -> None:
    """ValidateServiceClusterIPsRelatedFields (clusterIPs is made from clusterIP first, as the
    strategy's PrepareForCreate does)."""
    ip = spec.get("clusterIP") or ""
    ips = spec.get("clusterIPs") or ([ip] if ip else [])
    if ip and ips and ips[0] != ip:
        out.append(FieldCause("spec.clusterIPs", f"Invalid value: {go_strings(ips)}: first value must match "
                              "`clusterIP`", "FieldValueInvalid"))
    elif not ip and spec.get("clusterIPs"):
        out.append(FieldCause("spec.clusterIPs", f"Invalid value: {go_strings(ips)}: must be empty when `clusterIP` "
                              "is not specified", "FieldValueInvalid"))
    seen: set[str] = set()
    for i, fam in enumerate(spec.get("ipFamilies") or []):
        if fam not in ("IPv4", "IPv6"):
            out.append(_not_supported(f"spec.ipFamilies[{i}]", fam, ["IPv4", "IPv6"]))
        if fam in seen:
            out.append(_duplicate(f"spec.ipFamilies[{i}]", fam))
        seen.add(fam)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in ("PreferDualStack", "RequireDualStack", "SingleStack"):
        out.append(_not_supported("spec.ipFamilyPolicy", policy, ["PreferDualStack", "RequireDualStack", "SingleStack"]))
    for i, cip in enumerate(ips):
        if i == 0 and cip == "None":
            if len(ips) > 1:
                out.append(FieldCause("spec.clusterIPs", f"Invalid value: {go_strings(ips)}: 'None' must be the first "
                                      "and only value", "FieldValueInvalid"))
            continue
        if not isinstance(cip, str) or not _is_valid_ip(cip):
            out.append(_invalid(f"spec.clusterIPs[{i}]", cip, IP_ERR))
    if len(ips) > 2:
        out.append(FieldCause("spec.clusterIPs", f"Invalid value: {go_strings(ips)}: may only hold up to 2 values",
                              "FieldValueInvalid"))


def _validate_service(obj: Obj, old: Obj | None) -> list[FieldCause]:
    """ValidateService, in upstream's order. Node ports and cluster IPs are checked against their
    ranges (and for clashes) by the API server's allocator before this runs
    (:mod:`pumice.apiserver.servicealloc`).

    Mirrors: kubernetes pkg/apis/core/validation/validation.go ValidateService (sessionAffinityConfig,
    loadBalancerSourceRanges and loadBalancerClass are not checked)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    out: list[FieldCause] = []
    stype = spec.get("type") or "ClusterIP"
    ip = spec.get("clusterIP") or ""
    ips = spec.get("clusterIPs") or ([ip] if ip else [])
    headless = len(ips) == 1 and ips[0] == "None"
    if not spec.get("ports") and not headless and stype != "ExternalName":
        out.append(_required("spec.ports"))
    if stype in ("LoadBalancer", "NodePort") and headless:
        out.append(_invalid("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {stype} services"))
    elif stype == "ExternalName":
        if ips:
            out.append(_forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if spec.get("ipFamilies"):
            out.append(_forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            out.append(_forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        cname = str(spec.get("externalName") or "").removesuffix(".")
        if cname:
            out += [_invalid("spec.externalName", cname, e) for e in is_dns1123_subdomain(cname)]
        else:
            out.append(_required("spec.externalName"))
    _service_ports(spec, headless, out)
    selector = spec.get("selector")
    if selector is not None:
        out += validate_labels(selector, "spec.selector")
    affinity = spec.get("sessionAffinity")
    if affinity is not None and affinity not in ("ClientIP", "None"):
        out.append(_not_supported("spec.sessionAffinity", affinity, ["ClientIP", "None"]))
    if affinity == "None" and spec.get("sessionAffinityConfig") is not None:
        out.append(_forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None"))
    if stype != "ExternalName":
        _cluster_ips(spec, out)
    for i, eip in enumerate(spec.get("externalIPs") or []):
        if not isinstance(eip, str) or not _is_valid_ip(eip):
            out.append(_invalid(f"spec.externalIPs[{i}]", eip, IP_ERR))
    if stype not in SERVICE_TYPES:
        out.append(_not_supported("spec.type", stype, SERVICE_TYPES))
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    if stype == "ClusterIP":
        for i, port in enumerate(ports):
            if port.get("nodePort"):
                out.append(_forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'"))
    node_ports: set[tuple[Any, Any]] = set()
    pairs: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        proto = port.get("protocol") or "TCP"
        np = port.get("nodePort")
        if np:
            if (proto, np) in node_ports:
                out.append(_duplicate(f"spec.ports[{i}].nodePort", np))
            node_ports.add((proto, np))
        pair = (proto, port.get("port"))
        if pair in pairs:
            out.append(FieldCause(f"spec.ports[{i}]", f"Duplicate value: core.ServicePort{{Name:\"\", Protocol:"
                                  f"{quote(str(proto))}, AppProtocol:(*string)(nil), Port:{port.get('port')}, "
                                  "TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}",
                                  "FieldValueDuplicate"))
        pairs.add(pair)
    externally = stype in ("LoadBalancer", "NodePort") or (stype == "ClusterIP" and bool(spec.get("externalIPs")))
    etp = spec.get("externalTrafficPolicy")
    if etp:
        if not externally:
            out.append(_invalid("spec.externalTrafficPolicy", etp, "may only be set for externally-accessible services"))
        elif etp not in ("Cluster", "Local"):
            out.append(_not_supported("spec.externalTrafficPolicy", etp, ["Cluster", "Local"]))
    hc = spec.get("healthCheckNodePort")
    if hc:  # upstream validateServiceExternalTrafficPolicy, its healthCheckNodePort half
        if not (stype == "LoadBalancer" and etp == "Local"):
            out.append(_invalid("spec.healthCheckNodePort", hc,
                                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
        else:
            out.extend(_invalid("spec.healthCheckNodePort", hc, m) for m in is_valid_port_num(hc))
    itp = spec.get("internalTrafficPolicy")
    if itp is not None and itp not in ("Cluster", "Local"):
        out.append(_not_supported("spec.internalTrafficPolicy", itp, ["Cluster", "Local"]))
    if old is not None:
        old_ip = (old.get("spec") or {}).get("clusterIP")
        # an update without clusterIP keeps the allocated one (upstream copies it before validating)
        if old_ip and ip and ip != old_ip and stype != "ExternalName":
            out.append(_invalid("spec.clusterIPs[0]", [ip], "may not change once set"))
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
                out.append(_invalid(f"status.{part}[{rname}]", q, QUANTITY_ERR))
    return out


#: core.MaxSecretSize: the total size of a ConfigMap's or Secret's data
MAX_DATA_SIZE = 1024 * 1024


def _data_size(values: dict[str, Any], *, base64: bool = False) -> int:
    """The bytes of ``values`` as upstream counts them: a string's UTF-8 bytes, a ``[]byte``
    value's decoded bytes (``base64``: the values are canonical base64, checked at decode)."""
    if not base64:
        return sum(len(v.encode()) if isinstance(v, str) else 0 for v in values.values())
    return sum(len(v) // 4 * 3 - v[-2:].count("=") if isinstance(v, str) and v else 0 for v in values.values())


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
        total += _data_size(values, base64=secret or part == "binaryData")
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
    # (400, see pumice.api.fields.bytes_error)
    data = obj.get("data")
    out += _secret_type_keys(obj, data if isinstance(data, dict) else {})
    return out


def _secret_type_keys(obj: Obj, data: dict[str, Any]) -> list[FieldCause]:
    """ValidateSecret's rules per type: the keys a typed Secret must hold (dockercfg and
    dockerconfigjson: well-formed JSON objects; service-account-token: the account annotation)."""
    stype = obj.get("type")
    if stype == "kubernetes.io/service-account-token":
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if not annotations.get("kubernetes.io/service-account.name"):
            return [_required("metadata.annotations[kubernetes.io/service-account.name]")]
    elif stype in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if stype == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if key not in data:
            return [_required(f"data[{key}]")]
        try:
            parsed = json.loads(std_decode(str(data[key])))
        except ValueError as e:
            return [FieldCause(f"data[{key}]", f'Invalid value: "<secret contents redacted>": {_json_error(e)}',
                               "FieldValueInvalid")]
        if not isinstance(parsed, dict) and parsed is not None:  # null decodes into a map: no error
            return [FieldCause(f"data[{key}]", 'Invalid value: "<secret contents redacted>": json: cannot '
                               f"unmarshal {go_json_value(parsed)} into Go value of type map[string]interface {{}}",
                               "FieldValueInvalid")]
    elif stype == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            return [_required("data[username]"), _required("data[password]")]
    elif stype == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            return [_required("data[ssh-privatekey]")]
    elif stype == "kubernetes.io/tls":
        return [_required(f"data[{key}]") for key in ("tls.crt", "tls.key") if key not in data]
    return []


def _json_error(e: Exception) -> str:
    """encoding/json's text for a malformed document (the common case; Python's position differs)."""
    if isinstance(e, json.JSONDecodeError) and e.pos >= len(e.doc):
        return "unexpected end of JSON input"
    if isinstance(e, json.JSONDecodeError):
        ch = e.doc[e.pos] if e.pos < len(e.doc) else ""
        return f"invalid character {quote_rune(ch)} looking for beginning of value"
    return "invalid character looking for beginning of value"


def quote_rune(ch: str) -> str:
    """Go's %q of a rune for the ASCII printable ones (``'x'``)."""
    return "'" + ch.replace("\\", "\\\\").replace("'", "\\'") + "'"


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


#: Go's unicode.IsSpace, what strings.TrimSpace trims
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"


def _containers_only_for_pod(spec: Any) -> list[FieldCause]:
    """What a Pod's containers and init containers must be beyond a template's: an image without
    leading or trailing whitespace. Mirrors: validation.go validateContainersOnlyForPod,
    validateInitContainersOnlyForPod (validateContainerOnlyForPod)."""
    out: list[FieldCause] = []
    if not isinstance(spec, dict):
        return out
    for part in ("containers", "initContainers"):
        ctrs = spec.get(part)
        for i, ctr in enumerate(ctrs if isinstance(ctrs, list) else ()):
            image = ctr.get("image") if isinstance(ctr, dict) else None
            if isinstance(image, str) and image != image.strip(_GO_SPACE):
                out.append(_invalid(f"spec.{part}[{i}].image", image, "must not have leading or trailing whitespace"))
    return out


def _validate_pod(obj: Obj, old: Obj | None) -> list[FieldCause]:
    """ValidatePodCreate / ValidatePodUpdate: the spec, then what only a Pod's containers must be
    (:func:`_containers_only_for_pod`); ephemeral containers come only through the
    ``ephemeralcontainers`` subresource, never with a create (validation.go ValidatePodCreate).
    An update validates the whole new Pod again (validatePodMetadataAndSpec), also when only its
    metadata changed: a stored Pod that breaks a rule cannot change its labels or finalizers
    until its spec is fixed, as upstream (a spec validated before is remembered, so this costs
    one encoding of the spec)."""
    out = validate_pod_spec(obj.get("spec"), "spec", pod_name=str((obj.get("metadata") or {}).get("name") or "")) \
        + _containers_only_for_pod(obj.get("spec"))
    if old is None:
        spec = obj.get("spec")
        if isinstance(spec, dict) and spec.get("ephemeralContainers"):
            out.append(_forbidden("spec.ephemeralContainers", "cannot be set on create"))
        if isinstance(spec, dict) and spec.get("nodeName") and spec.get("schedulingGates"):
            out.append(_forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
    else:
        out += validate_pod_update(obj, old)
    return out


def _validate_events_v1_event(obj: Obj, old: Obj | None) -> list[FieldCause]:
    """The strict rules of an Event created through events.k8s.io/v1 (an update, and a core/v1
    create, keep the legacy rules only): eventTime set, type Normal or Warning, the reporting
    controller (a qualified name) and instance, action and reason set, and the length limits
    (128 characters; note 1024). Field paths are the internal Event's, values shown as ``""``.

    Mirrors: kubernetes pkg/apis/core/validation/events.go ValidateEventCreate."""
    out: list[FieldCause] = []
    if old is not None:
        return out
    if not obj.get("eventTime"):
        out.append(_required("eventTime"))
    etype = obj.get("type") or ""
    if etype not in ("Normal", "Warning"):
        out.append(_invalid("type", "", f"has invalid value: {etype}"))
    controller = obj.get("reportingController") or ""
    if not controller:
        out.append(_required("reportingController"))
    out += [_invalid("reportingController", controller, e) for e in is_qualified_name(str(controller))]
    for key, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
        value = obj.get(key) or ""
        if not value:
            out.append(_required(key))
        if len(str(value).encode()) > limit:  # Go's len: bytes of the UTF-8 text
            out.append(_invalid(key, "", f"can have at most {limit} characters"))
    if len(str(obj.get("note") or "").encode()) > 1024:
        out.append(_invalid("note", "", "can have at most 1024 characters"))
    return out


# --- label selectors, CIDRs -----------------------------------------------------------------------

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def label_selector_causes(selector: Any, field: str, *, allow_invalid_label_value: bool = False) -> list[FieldCause]:
    """ValidateLabelSelector of a ``metav1.LabelSelector`` (None: nothing to check): matchLabels
    keys and values at ``<field>.matchLabels``, then per expression the operator's values rule,
    the key, and each value a label value (unless ``allow_invalid_label_value``).

    Mirrors: k8s.io/apimachinery pkg/apis/meta/v1/validation ValidateLabelSelector,
    ValidateLabelSelectorRequirement."""
    if not isinstance(selector, dict):
        return []
    out = validate_labels(selector.get("matchLabels"), f"{field}.matchLabels")
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        if not isinstance(expr, dict):
            continue
        at = f"{field}.matchExpressions[{i}]"
        op, values = expr.get("operator") or "", list(expr.get("values") or [])
        if op in ("In", "NotIn"):
            if not values:
                out.append(_required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                out.append(_forbidden(f"{at}.values", "may not be specified when `operator` is 'Exists' or "
                                                      "'DoesNotExist'"))
        else:
            out.append(_invalid(f"{at}.operator", op, "not a valid selector operator"))
        key = str(expr.get("key") or "")
        out += [_invalid(f"{at}.key", key, e) for e in _key_errors(key)]
        if not allow_invalid_label_value:
            for j, v in enumerate(values):
                out += [_invalid(f"{at}.values[{j}]", v, e) for e in is_label_value(str(v))]
    return out


CIDR_ERR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def parse_ip_sloppy(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """netutils.ParseIPSloppy: an IPv4 address (leading zeros allowed, read as decimal) or an IPv6
    one; None when ``value`` is neither."""
    parts = value.split(".")
    if len(parts) == 4 and all(p.isdigit() and p.isascii() and int(p) <= 255 for p in parts):
        return ipaddress.IPv4Address(".".join(str(int(p)) for p in parts))
    if ":" not in value or "%" in value:  # Go's ParseIP takes no zone
        return None
    try:
        return ipaddress.IPv6Address(value)
    except ValueError:
        return None


def parse_cidr_sloppy(value: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """netutils.ParseCIDRSloppy: ``<ip>/<prefix length>`` (host bits may be set; the network is
    masked), or None when ``value`` is not one."""
    addr, sep, mask = value.partition("/")
    ip = parse_ip_sloppy(addr) if sep else None
    if ip is None or not (mask.isdigit() and mask.isascii()) or int(mask) > ip.max_prefixlen:
        return None
    return ipaddress.ip_network((ip, int(mask)), strict=False)


_KIND_RULES: dict[tuple[str, str], KindValidator] = {
    ("events.k8s.io", "Event"): _validate_events_v1_event,
    ("", "Pod"): _validate_pod,
    ("", "PodTemplate"): _validate_pod_template,
    ("", "Service"): _validate_service,
    ("", "Node"): _validate_node,
    ("", "ConfigMap"): _validate_config_map,
    ("", "Secret"): _validate_secret,
    ("", "Namespace"): _validate_namespace,
    ("apps", "Deployment"): _validate_deployment,
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
