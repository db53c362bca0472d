"""networking.k8s.io/v1: Ingress, IngressClass and NetworkPolicy, stored and validated as
kube-apiserver 1.32 does, registered as strategies (:func:`pumice.apiserver.strategy.register`)
when this module is imported (the registry imports it).

Nothing acts on these objects: pumice runs no ingress controller and no network policy agent (as
Services are not routed), so an Ingress's ``status.loadBalancer`` stays empty unless a client
writes it through the status subresource, and a NetworkPolicy admits or blocks no traffic.

Defaults: a NetworkPolicy's ``policyTypes`` (``Ingress``, plus ``Egress`` when it has egress
rules) and each port's ``protocol`` (``TCP``); an IngressClass's ``parameters.scope``
(``Cluster``). Ingresses start with ``status: {loadBalancer: {}}`` (the Go zero value
kube-apiserver writes) and every kind starts at ``metadata.generation`` 1, one more on each change
of its spec.

Mirrors: kubernetes pkg/apis/networking/v1/defaults.go, pkg/apis/networking/validation
(ValidateNetworkPolicy, ValidateNetworkPolicyUpdate, ValidateIngressCreate, ValidateIngressUpdate,
ValidateIngressStatusUpdate, ValidateIngressClass, ValidateIngressClassUpdate),
pkg/registry/networking/{ingress,ingressclass,networkpolicy}/strategy.go.

Deviates: a NetworkPolicy CIDR is checked as 1.32 does (no leniency for an invalid CIDR an
update keeps, which 1.34 added).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pumice.api import Obj
from pumice.api.admission import FieldCause
from pumice.api.scheme import ResourceKind
from pumice.api.validation import (
    CIDR_ERR,
    IP_ERR,
    domain_prefixed_path_causes,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_path_segment_name,
    is_valid_port_name,
    is_valid_port_num,
    is_wildcard_dns1123_subdomain,
    label_selector_causes,
    parse_cidr_sloppy,
    parse_ip_sloppy,
    validate_object,
)
from pumice.api.validation import field_forbidden as _forbidden
from pumice.api.validation import field_invalid as _invalid
from pumice.api.validation import field_not_supported as _not_supported
from pumice.api.validation import field_required as _required
from pumice.apiserver.strategy import Strategy, register

if TYPE_CHECKING:
    from pumice.apiserver.registry import Registry

__all__ = ["ingress_class_defaults", "network_policy_defaults"]

#: the annotation that named an Ingress's class before ``spec.ingressClassName``
ANNOTATION_INGRESS_CLASS = "kubernetes.io/ingress.class"
PROTOCOLS = ["TCP", "UDP", "SCTP"]
POLICY_TYPES = ["Ingress", "Egress"]
PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]
PARAMETERS_SCOPES = ["Cluster", "Namespace"]
MAX_CONTROLLER_LENGTH = 250
_INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_PATH_SUFFIXES = ("/..", "/.")


def _map(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[Obj]:
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


# --- defaults -------------------------------------------------------------------------------------


def network_policy_defaults(obj: Obj) -> None:
    """SetObjectDefaults_NetworkPolicy, in place: ``spec.podSelector`` ``{}`` when unset (the Go
    zero value, always written), ``policyTypes`` ``[Ingress]`` (plus ``Egress`` with egress
    rules) when empty, each rule port's ``protocol`` ``TCP`` when unset."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("podSelector") is None:
        spec["podSelector"] = {}
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
    for key in ("ingress", "egress"):
        for rule in _dicts(spec.get(key)):
            for port in _dicts(rule.get("ports")):
                if port.get("protocol") is None:
                    port["protocol"] = "TCP"


def ingress_class_defaults(obj: Obj) -> None:
    """SetDefaults_IngressClass, in place: ``spec.parameters.scope`` ``Cluster`` when parameters
    are given without a scope."""
    spec = obj.get("spec")
    params = spec.get("parameters") if isinstance(spec, dict) else None
    if isinstance(params, dict) and params.get("scope") is None:
        params["scope"] = "Cluster"


# --- NetworkPolicy --------------------------------------------------------------------------------


def _policy_port(port: Obj, at: str) -> list[FieldCause]:
    """ValidateNetworkPolicyPort: the protocol, then a numeric port's range and endPort, or a named
    port's IANA name (no endPort), or an endPort without a port."""
    out: list[FieldCause] = []
    proto = port.get("protocol")
    if proto is not None and proto not in PROTOCOLS:
        out.append(_not_supported(f"{at}.protocol", proto, PROTOCOLS))
    number, end = port.get("port"), port.get("endPort")
    if number is None:
        if end is not None:
            out.append(_invalid(f"{at}.endPort", end, "may not be specified when `port` is not specified"))
    elif isinstance(number, int):
        out += [_invalid(f"{at}.port", number, e) for e in is_valid_port_num(number)]
        if end is not None:
            if isinstance(end, int) and end < number:
                out.append(_invalid(f"{at}.endPort", number, "must be greater than or equal to `port`"))
            out += [_invalid(f"{at}.endPort", end, e) for e in is_valid_port_num(end)]
    else:
        if end is not None:
            out.append(_invalid(f"{at}.endPort", end, "may not be specified when `port` is non-numeric"))
        out += [_invalid(f"{at}.port", number, e) for e in is_valid_port_name(str(number))]
    return out


def _ip_block(block: Obj, at: str) -> list[FieldCause]:
    """ValidateIPBlock: ``cidr`` required and a CIDR; each ``except`` a CIDR strictly inside it."""
    cidr = str(block.get("cidr") or "")
    if not cidr:
        return [_required(f"{at}.cidr")]
    net = parse_cidr_sloppy(cidr)
    if net is None:
        return [_invalid(f"{at}.cidr", cidr, CIDR_ERR)]
    out: list[FieldCause] = []
    for i, text in enumerate(block.get("except") or []):
        ex = parse_cidr_sloppy(str(text))
        if ex is None:
            out.append(_invalid(f"{at}.except[{i}]", text, CIDR_ERR))
        elif ex.version != net.version or ex.network_address not in net or net.prefixlen >= ex.prefixlen:
            out.append(_invalid(f"{at}.except[{i}]", text, "must be a strict subset of `cidr`"))
    return out


def _policy_peer(peer: Obj, at: str, allow_invalid: bool) -> list[FieldCause]:
    """ValidateNetworkPolicyPeer: each selector given, an ipBlock; at least one peer, and an
    ipBlock alone."""
    out: list[FieldCause] = []
    given = 0
    for key in ("podSelector", "namespaceSelector"):
        if peer.get(key) is not None:
            given += 1
            out += label_selector_causes(peer[key], f"{at}.{key}", allow_invalid_label_value=allow_invalid)
    if isinstance(peer.get("ipBlock"), dict):
        given += 1
        out += _ip_block(peer["ipBlock"], f"{at}.ipBlock")
    if given == 0:
        out.append(_required(at, "must specify a peer"))
    elif given > 1 and isinstance(peer.get("ipBlock"), dict):
        out.append(_forbidden(at, "may not specify both ipBlock and another peer"))
    return out


def network_policy_spec_causes(spec: Obj, *, allow_invalid_label_value: bool = False) -> list[FieldCause]:
    """ValidateNetworkPolicySpec at ``spec``: the pod selector, each ingress rule's ports and
    peers (``from``), each egress rule's ports and peers (``to``), then ``policyTypes`` (at most
    two, each Ingress or Egress)."""
    out = label_selector_causes(spec.get("podSelector"), "spec.podSelector",
                                allow_invalid_label_value=allow_invalid_label_value)
    for key, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(_dicts(spec.get(key))):
            at = f"spec.{key}[{i}]"
            for j, port in enumerate(_dicts(rule.get("ports"))):
                out += _policy_port(port, f"{at}.ports[{j}]")
            for j, peer in enumerate(_dicts(rule.get(peers))):
                out += _policy_peer(peer, f"{at}.{peers}[{j}]", allow_invalid_label_value)
    types = spec.get("policyTypes") or []
    if len(types) > len(POLICY_TYPES):
        out.append(_invalid("spec.policyTypes", types, "may not specify more than two policyTypes"))
        return out
    for i, ptype in enumerate(types):
        if ptype not in POLICY_TYPES:
            out.append(_not_supported(f"spec.policyTypes[{i}]", ptype, POLICY_TYPES))
    return out


class NetworkPolicyStrategy(Strategy):
    """NetworkPolicies: defaults, generation, ValidateNetworkPolicy(Update).

    An update whose stored pod selector is itself invalid may keep invalid label values in its
    selectors (ValidationOptionsForNetworking). Upstream's ValidateUpdate checks the spec twice
    (ValidateNetworkPolicy, then ValidateNetworkPolicyUpdate), so an invalid update lists each
    spec cause twice in the Status causes (its message shows it once); so does pumice's."""

    generation = True

    def __init__(self) -> None:
        super().__init__(defaulter=network_policy_defaults)

    def validate(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
        out = validate_object(rk, obj, old)
        spec = _map(obj.get("spec"))
        allow = False
        if old is not None:
            old_selector = (old.get("spec") or {}).get("podSelector")
            allow = bool(label_selector_causes(old_selector, "spec.podSelector"))
        causes = network_policy_spec_causes(spec, allow_invalid_label_value=allow)
        return out + causes + (causes if old is not None else [])


# --- Ingress --------------------------------------------------------------------------------------


def _typed_reference(ref: Obj, at: str) -> list[FieldCause]:
    """validateIngressTypedLocalObjectReference: apiGroup a DNS subdomain when given; kind and
    name required and path segment names."""
    out: list[FieldCause] = []
    group = ref.get("apiGroup")
    if group is not None:
        out += [_invalid(f"{at}.apiGroup", group, e) for e in is_dns1123_subdomain(str(group))]
    for key in ("kind", "name"):
        value = str(ref.get(key) or "")
        if not value:
            out.append(_required(f"{at}.{key}", f"{key} is required"))
        else:
            out += [_invalid(f"{at}.{key}", value, e) for e in is_path_segment_name(value)]
    return out


def _backend(backend: Obj, at: str) -> list[FieldCause]:
    """validateIngressBackend: exactly one of ``resource`` and ``service``; a service backend's
    name (a DNS-1035 label) and one of port name (an IANA service name) or number (1-65535)."""
    resource, service = backend.get("resource"), backend.get("service")
    if isinstance(resource, dict) and isinstance(service, dict):
        return [_invalid(at, "", "cannot set both resource and service backends")]
    if isinstance(resource, dict):
        return _typed_reference(resource, f"{at}.resource")
    if not isinstance(service, dict):
        return [_invalid(at, "", "resource or service backend is required")]
    out: list[FieldCause] = []
    name = str(service.get("name") or "")
    if not name:
        out.append(_required(f"{at}.service.name"))
    else:
        out += [_invalid(f"{at}.service.name", name, e) for e in is_dns1035_label(name)]
    port = _map(service.get("port"))
    port_name, number = str(port.get("name") or ""), port.get("number") or 0
    if port_name and number:
        out.append(_invalid(at, "", "cannot set both port name & port number"))
    elif port_name:
        out += [_invalid(f"{at}.service.port.name", port_name, e) for e in is_valid_port_name(port_name)]
    elif number:
        out += [_invalid(f"{at}.service.port.number", number, e) for e in is_valid_port_num(number)]
    else:
        out.append(_required(at, "port name or number is required"))
    return out


def _http_path(path: Obj, at: str) -> list[FieldCause]:
    """validateHTTPIngressPath: pathType required and supported; an Exact or Prefix path absolute
    with no ``//``, ``/./``, ``/../``, ``%2f`` and no ``/..`` or ``/.`` ending; an
    ImplementationSpecific path absolute when given; then the backend."""
    ptype = path.get("pathType")
    if ptype is None:
        return [_required(f"{at}.pathType", "pathType must be specified")]
    value = str(path.get("path") or "")
    out: list[FieldCause] = []
    if ptype in ("Exact", "Prefix"):
        if not value.startswith("/"):
            out.append(_invalid(f"{at}.path", value, "must be an absolute path"))
        out += [_invalid(f"{at}.path", value, f"must not contain '{seq}'")
                for seq in _INVALID_PATH_SEQUENCES if seq in value]
        out += [_invalid(f"{at}.path", value, f"cannot end with '{suffix}'")
                for suffix in _INVALID_PATH_SUFFIXES if value.endswith(suffix)]
    elif ptype == "ImplementationSpecific":
        if value and not value.startswith("/"):
            out.append(_invalid(f"{at}.path", value, "must be an absolute path"))
    else:
        out.append(_not_supported(f"{at}.pathType", ptype, PATH_TYPES))
    backend = _map(path.get("backend"))
    return out + _backend(backend, f"{at}.backend")


def _rule_value(rule: Obj, at: str) -> list[FieldCause]:
    """validateIngressRuleValue: an ``http`` rule needs at least one path; each path checked."""
    http = rule.get("http")
    if not isinstance(http, dict):
        return []
    paths = _dicts(http.get("paths"))
    out = [] if paths else [_required(f"{at}.http.paths")]
    for i, path in enumerate(paths):
        out += _http_path(path, f"{at}.http.paths[{i}]")
    return out


def _host_causes(host: str, at: str) -> list[FieldCause]:
    """A rule or TLS host: a wildcard subdomain when it has a ``*``, else a DNS-1123 subdomain."""
    rule = is_wildcard_dns1123_subdomain if "*" in host else is_dns1123_subdomain
    return [_invalid(at, host, e) for e in rule(host)]


def _rules(rules: list[Obj], allow_invalid_wildcard_rule: bool) -> list[FieldCause]:
    """validateIngressRules: each host not an IP address and a (wildcard) subdomain; each rule's
    value (skipped for a wildcard host when the stored Ingress already had such an invalid rule)."""
    out: list[FieldCause] = []
    for i, rule in enumerate(rules):
        at = f"spec.rules[{i}]"
        host = str(rule.get("host") or "")
        if host:
            if parse_ip_sloppy(host) is not None:
                out.append(_invalid(f"{at}.host", host, "must be a DNS name, not an IP address"))
            out += _host_causes(host, f"{at}.host")
        if not ("*" in host and allow_invalid_wildcard_rule):
            out += _rule_value(rule, at)
    return out


def _tls_secret_errors(name: str) -> list[str]:
    return is_dns1123_subdomain(name) if name else []


def _tls(tls: list[Obj], allow_invalid_secret_name: bool) -> list[FieldCause]:
    """validateIngressTLS: hosts as rule hosts; the secret name a DNS subdomain when given (unless
    the stored Ingress already had an invalid one)."""
    out: list[FieldCause] = []
    for i, item in enumerate(tls):
        for j, host in enumerate(item.get("hosts") or []):
            out += _host_causes(str(host), f"spec.tls[{i}].hosts[{j}]")
        if not allow_invalid_secret_name:
            secret = str(item.get("secretName") or "")
            out += [_invalid(f"spec.tls[{i}].secretName", secret, e) for e in _tls_secret_errors(secret)]
    return out


def ingress_spec_causes(spec: Obj, old: Obj | None = None) -> list[FieldCause]:
    """ValidateIngressSpec at ``spec``: rules or a default backend, the default backend, the
    rules, TLS, ``ingressClassName`` a DNS subdomain. ``old``: the stored Ingress on update (its
    invalid secret names and wildcard-host rules may stay)."""
    out: list[FieldCause] = []
    rules = _dicts(spec.get("rules"))
    backend = spec.get("defaultBackend")
    if not rules and not isinstance(backend, dict):
        out.append(_invalid("spec", spec.get("rules"), "either `defaultBackend` or `rules` must be specified"))
    if isinstance(backend, dict):
        out += _backend(backend, "spec.defaultBackend")
    ospec = _map((old or {}).get("spec"))
    if rules:
        allow_wildcard = any("*" in str(r.get("host") or "") and _rule_value(r, "") for r in _dicts(ospec.get("rules")))
        out += _rules(rules, allow_wildcard)
    tls = _dicts(spec.get("tls"))
    if tls:
        allow_secret = any(_tls_secret_errors(str(t.get("secretName") or "")) for t in _dicts(ospec.get("tls")))
        out += _tls(tls, allow_secret)
    cls = spec.get("ingressClassName")
    if cls is not None:
        out += [_invalid("spec.ingressClassName", cls, e) for e in is_dns1123_subdomain(str(cls))]
    return out


def ingress_load_balancer_causes(status: Obj) -> list[FieldCause]:
    """ValidateIngressLoadBalancerStatus at ``status.loadBalancer``: each entry's ip an IP
    address, its hostname a DNS subdomain and not an IP address."""
    lb = _map(status.get("loadBalancer"))
    out: list[FieldCause] = []
    for i, entry in enumerate(_dicts(lb.get("ingress"))):
        at = f"status.loadBalancer.ingress[{i}]"
        ip, hostname = str(entry.get("ip") or ""), str(entry.get("hostname") or "")
        if ip and parse_ip_sloppy(ip) is None:
            out.append(_invalid(f"{at}.ip", ip, IP_ERR))
        if hostname:
            out += [_invalid(f"{at}.hostname", hostname, e) for e in is_dns1123_subdomain(hostname)]
            if parse_ip_sloppy(hostname) is not None:
                out.append(_invalid(f"{at}.hostname", hostname, "must be a DNS name, not an IP address"))
    return out


class IngressStrategy(Strategy):
    """Ingresses: status ``{loadBalancer: {}}`` on create, kept on update; generation;
    ValidateIngressCreate (with the class annotation matching ``ingressClassName``) or
    ValidateIngressUpdate; a status write gets ValidateIngressStatusUpdate; a create with the
    class annotation and no ``ingressClassName`` is warned (WarningsOnCreate)."""

    generation = True

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        super().prepare_create(reg, rk, obj)
        obj["status"] = {"loadBalancer": {}}

    def validate(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
        out = validate_object(rk, obj, old)
        spec = _map(obj.get("spec"))
        out += ingress_spec_causes(spec, old)
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        cls = spec.get("ingressClassName")
        if old is None and ANNOTATION_INGRESS_CLASS in annotations and cls is not None \
                and annotations[ANNOTATION_INGRESS_CLASS] != cls:
            out.append(_invalid(f"annotations.{ANNOTATION_INGRESS_CLASS}", annotations[ANNOTATION_INGRESS_CLASS],
                                "must match `ingressClassName` when both are specified"))
        return out


    def warnings_on_create(self, obj: Obj) -> list[str]:
        """The class annotation without ``spec.ingressClassName``: deprecated."""
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if ANNOTATION_INGRESS_CLASS in annotations and _map(obj.get("spec")).get("ingressClassName") is None:
            return [f'annotation "{ANNOTATION_INGRESS_CLASS}" is deprecated, please use \'spec.ingressClassName\' '
                    "instead"]
        return []

    def validate_status(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj) -> list[FieldCause]:
        return validate_object(rk, obj, old) + ingress_load_balancer_causes(_map(obj.get("status")))


# --- IngressClass ---------------------------------------------------------------------------------


def _parameters(params: Obj) -> list[FieldCause]:
    """validateIngressClassParametersReference at ``spec.parameters``: the typed reference, then
    the scope (Cluster: no namespace; Namespace: a namespace name required)."""
    at = "spec.parameters"
    out = _typed_reference(params, at)
    scope = params.get("scope")
    if scope is None:
        return [*out, _required(f"{at}.scope")]
    if scope not in PARAMETERS_SCOPES:
        return [*out, _not_supported(f"{at}.scope", scope, PARAMETERS_SCOPES)]
    namespace = params.get("namespace")
    if scope == "Namespace":
        if namespace is None:
            out.append(_required(f"{at}.namespace", "`parameters.scope` is set to 'Namespace'"))
        else:
            out += [_invalid(f"{at}.namespace", namespace, e) for e in is_dns1123_label(str(namespace))]
    elif namespace is not None:
        out.append(_forbidden(f"{at}.namespace", "`parameters.scope` is set to 'Cluster'"))
    return out


def ingress_class_spec_causes(spec: Obj) -> list[FieldCause]:
    """validateIngressClassSpec: ``controller`` at most 250 bytes and a domain-prefixed path, then
    the parameters reference."""
    controller = str(spec.get("controller") or "")
    out: list[FieldCause] = []
    if len(controller.encode()) > MAX_CONTROLLER_LENGTH:
        out.append(FieldCause("spec.controller", f"Too long: may not be more than {MAX_CONTROLLER_LENGTH} bytes",
                              "FieldValueTooLong"))
    out += domain_prefixed_path_causes(controller, "spec.controller")
    if isinstance(spec.get("parameters"), dict):
        out += _parameters(spec["parameters"])
    return out


class IngressClassStrategy(Strategy):
    """IngressClasses: defaults, generation; ValidateIngressClass, and on update
    ``spec.controller`` immutable first."""

    generation = True

    def __init__(self) -> None:
        super().__init__(defaulter=ingress_class_defaults)

    def validate(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
        out = validate_object(rk, obj, old)
        spec = _map(obj.get("spec"))
        if old is not None:
            controller = spec.get("controller") or ""
            if controller != ((old.get("spec") or {}).get("controller") or ""):
                out.append(_invalid("spec.controller", controller, "field is immutable"))
        return out + ingress_class_spec_causes(spec)


register("networking.k8s.io", "ingresses", IngressStrategy())
register("networking.k8s.io", "ingressclasses", IngressClassStrategy())
register("networking.k8s.io", "networkpolicies", NetworkPolicyStrategy())
