"""Authorization: may this user do this? RBAC over the stored Roles and bindings.

:func:`request_attributes` turns a request (method, path, query) into the
:class:`Attributes` kube-apiserver authorizes (verb, API group, resource, subresource, namespace,
name, or a non-resource path). :class:`RBACAuthorizer` decides:

- members of ``system:masters`` are always allowed (kube-apiserver's privileged group);
- otherwise the request is allowed when a ClusterRoleBinding, or a RoleBinding in the request's
  namespace, names the user (User, Group or ServiceAccount subject) and its role has a rule that
  matches: verbs, apiGroups, resources (``*``, ``resource/subresource``, ``*/subresource``),
  resourceNames, or nonResourceURLs (``*`` and trailing-``*`` prefixes).

:func:`bootstrap_policy` gives the ClusterRoles and ClusterRoleBindings kube-apiserver creates at
start (cluster-admin, the aggregated admin/edit/view, system:basic-user, system:discovery,
system:public-info-viewer), the API server creates them when missing.

Mirrors: k8s.io/apiserver pkg/endpoints/request/requestinfo.go (RequestInfoFactory),
kubernetes plugin/pkg/auth/authorizer/rbac (rbac.go, subject_locator.go),
pkg/apis/rbac/v1/evaluation_helpers.go (VerbMatches, ResourceMatches ...),
plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go, and
k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go (the forbidden message).

Deviates: the admin/edit/view rules are a shorter list over the kinds pumice serves, not
upstream's exact lists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pumice.api import Obj
from pumice.api.params import query_bool
from pumice.apiserver.authn import SA_PREFIX, UserInfo

__all__ = [
    "Attributes",
    "RBACAuthorizer",
    "bootstrap_policy",
    "forbidden_message",
    "request_attributes",
    "rule_allows",
]


#: the path segments kube-apiserver treats as API prefixes
API_PREFIXES = ("api", "apis")
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True)
class Attributes:
    """What is authorized: a resource request or a non-resource path.

    Mirrors: k8s.io/apiserver pkg/authorization/authorizer.AttributesRecord.
    """

    user: UserInfo
    verb: str
    resource_request: bool
    path: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def request_attributes(user: UserInfo, method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """The authorization attributes of an HTTP request.

    Verbs: GET on a collection is ``list`` (``watch`` with ``watch=true``), on an object ``get``;
    POST ``create``, PUT ``update``, PATCH ``patch``, DELETE ``delete`` / ``deletecollection``;
    a list or watch with ``fieldSelector=metadata.name=x`` names the object ``x``. Non-API paths
    are non-resource requests with the lower-cased method as verb (``get`` for GET and HEAD).
    """
    verb = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
            "DELETE": "delete"}.get(method.upper(), method.lower())
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] not in API_PREFIXES:
        return Attributes(user, verb, False, path=path)
    if parts[0] == "api":
        rest = parts[1:]
        group = ""
    else:
        if len(parts) < 3:
            return Attributes(user, verb, False, path=path)
        group, rest = parts[1], parts[2:]
    if not rest:
        return Attributes(user, verb, False, path=path)
    version, rest = rest[0], rest[1:]
    if not rest:
        return Attributes(user, verb, False, path=path)
    if rest[0] == "watch":  # the deprecated /watch/ prefix
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        # "/namespaces" alone is the namespaces collection
        namespace = rest[1]
        if len(rest) > 2 and not (len(rest) == 3 and rest[2] in _NAMESPACE_SUBRESOURCES):
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if resource == "namespaces" and name:
        namespace = name
    if not name and method.upper() in ("GET", "HEAD") and verb != "watch":
        verb = "watch" if query_bool(query, "watch") else "list"
    elif not name and method.upper() == "DELETE":
        verb = "deletecollection"
    if verb in ("list", "watch") and not name:
        fs = query.get("fieldSelector") or ""
        for term in fs.split(","):
            k, sep, v = term.partition("=")
            if sep and k.strip() == "metadata.name" and not v.startswith("="):
                name = v.strip()
    return Attributes(user, verb, True, path=path, api_group=group, api_version=version, resource=resource,
                      subresource=sub, namespace=namespace, name=name)


def forbidden_message(a: Attributes, reason: str = "") -> str:
    """kube-apiserver's 403 message for a refused request."""
    if not a.resource_request:
        msg = f'forbidden: User "{a.user.name}" cannot {a.verb} path "{a.path}"'
    else:
        res = a.resource + (f"/{a.subresource}" if a.subresource else "")
        where = f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
        why = f'User "{a.user.name}" cannot {a.verb} resource "{res}" in API group "{a.api_group}" {where}'
        qualified = a.resource + (f".{a.api_group}" if a.api_group else "")
        msg = f'{qualified} "{a.name}" is forbidden: {why}' if a.name else f"{qualified} is forbidden: {why}"
    return f"{msg}: {reason}" if reason else msg


# ------------------------------------------------------------------------------------ rule matching

def _verb_matches(rule: Obj, verb: str) -> bool:
    verbs = rule.get("verbs") or []
    return "*" in verbs or verb in verbs


def _group_matches(rule: Obj, group: str) -> bool:
    groups = rule.get("apiGroups") or []
    return "*" in groups or group in groups


def _resource_matches(rule: Obj, resource: str, sub: str) -> bool:
    combined = f"{resource}/{sub}" if sub else resource
    for r in rule.get("resources") or []:
        if r == "*" or r == combined:
            return True
        if sub and r == f"*/{sub}":
            return True
    return False


def _name_matches(rule: Obj, name: str) -> bool:
    names = rule.get("resourceNames") or []
    return not names or name in names


def _url_matches(rule: Obj, path: str) -> bool:
    for u in rule.get("nonResourceURLs") or []:
        if u == "*" or u == path or (u.endswith("*") and path.startswith(u[:-1])):
            return True
    return False


def rule_allows(a: Attributes, rule: Obj) -> bool:
    """Whether one PolicyRule allows ``a`` (RBAC's RuleAllows)."""
    if not _verb_matches(rule, a.verb):
        return False
    if not a.resource_request:
        return _url_matches(rule, a.path)
    return (_group_matches(rule, a.api_group) and _resource_matches(rule, a.resource, a.subresource)
            and _name_matches(rule, a.name))


def subject_matches(subject: Obj, user: UserInfo, binding_namespace: str) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        return bool(subject.get("name") == user.name)
    if kind == "Group":
        return subject.get("name") in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_namespace
        return user.name == f"{SA_PREFIX}{ns}:{subject.get('name', '')}"
    return False


#: ``list(resource, namespace)`` -> stored objects; ``resource`` is a store resource such as
#: ``rbac.authorization.k8s.io/rolebindings``; namespace None means every namespace
ListFn = Callable[[str, str | None], Iterable[Obj]]
#: ``get(resource, namespace, name)`` -> the stored object or None
GetFn = Callable[[str, str, str], Obj | None]

RBAC = "rbac.authorization.k8s.io"


class RBACAuthorizer:
    """Decides requests from the stored RBAC objects (see the module docstring).

    Args:
        list_fn, get_fn: read the store.
        version: a value that changes whenever a Role, ClusterRole or binding changes; the rules
            that apply to a user in a namespace are cached per version (without it, nothing is
            cached).
    """

    def __init__(self, list_fn: ListFn, get_fn: GetFn, version: Callable[[], object] | None = None) -> None:
        self._list = list_fn
        self._get = get_fn
        self._version = version
        self._cache: dict[tuple[str, tuple[str, ...], str], list[tuple[str, Obj, Obj, Obj, list[Obj], str]]] = {}
        self._cache_version: object = None

    def _role_rules(self, ref: Obj, namespace: str) -> list[Obj]:
        kind, name = ref.get("kind"), str(ref.get("name", ""))
        if kind == "ClusterRole":
            role = self._get(f"{RBAC}/clusterroles", "", name)
        elif kind == "Role":
            role = self._get(f"{RBAC}/roles", namespace, name)
        else:
            role = None
        return list((role or {}).get("rules") or [])

    def _applicable(self, user: UserInfo, namespace: str) -> list[tuple[str, Obj, Obj, Obj, list[Obj], str]]:
        """``(binding kind, binding, roleRef, matching subject, rules, namespace)`` of every binding
        that names ``user``: the ClusterRoleBindings, then the RoleBindings of ``namespace``."""
        key = (user.name, user.groups, namespace)
        if self._version is not None:
            v = self._version()
            if v != self._cache_version:
                self._cache.clear()
                self._cache_version = v
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        out: list[tuple[str, Obj, Obj, Obj, list[Obj], str]] = []
        for crb in self._list(f"{RBAC}/clusterrolebindings", None):
            subject = next((s for s in crb.get("subjects") or [] if subject_matches(s, user, "")), None)
            if subject is not None:
                ref = crb.get("roleRef") or {}
                out.append(("ClusterRoleBinding", crb, ref, subject, self._role_rules(ref, ""), ""))
        if namespace:
            for rb in self._list(f"{RBAC}/rolebindings", namespace):
                subject = next((s for s in rb.get("subjects") or [] if subject_matches(s, user, namespace)), None)
                if subject is not None:
                    ref = rb.get("roleRef") or {}
                    out.append(("RoleBinding", rb, ref, subject, self._role_rules(ref, namespace), namespace))
        if self._version is not None:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key] = out
        return out

    def rules_for(self, user: UserInfo, namespace: str) -> list[Obj]:
        """Every rule that applies to ``user`` in ``namespace`` ("" for cluster-scoped only)."""
        return [r for entry in self._applicable(user, namespace) for r in entry[4]]

    def authorize(self, a: Attributes) -> tuple[bool, str]:
        """``(allowed, reason)``; the reason names the binding and role that allowed it, as RBAC's
        does (``RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to Group "g"``)."""
        if a.user.is_master:
            return True, ""
        ns = a.namespace if a.resource_request else ""
        for kind, binding, ref, subject, rules, bns in self._applicable(a.user, ns):
            if any(rule_allows(a, r) for r in rules):
                return True, _allowed_by(kind, binding, ref, subject, bns)
        return False, ""


def _allowed_by(kind: str, binding: Obj, ref: Obj, subject: Obj, namespace: str) -> str:
    name = (binding.get("metadata") or {}).get("name", "")
    where = f'"{name}/{namespace}"' if namespace else f'"{name}"'
    role = f'"{ref.get("name", "")}/{namespace}"' if namespace and ref.get("kind") == "Role" else f'"{ref.get("name", "")}"'
    who = subject.get("name", "")
    if subject.get("kind") == "ServiceAccount":
        who = f"{subject.get('namespace') or namespace}/{who}"
    return f'RBAC: allowed by {kind} {where} of {ref.get("kind", "")} {role} to {subject.get("kind", "")} "{who}"'


# ------------------------------------------------------------------------------- bootstrap policy

_BOOT_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
_AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
_READ = ["get", "list", "watch"]
_WRITE = ["create", "delete", "deletecollection", "patch", "update"]

#: resources users read in a namespace, by API group (view; edit and admin include it)
_WORKLOADS: dict[str, list[str]] = {
    "": ["pods", "pods/log", "pods/status", "services", "services/status", "endpoints", "configmaps",
         "persistentvolumeclaims", "persistentvolumeclaims/status", "replicationcontrollers",
         "replicationcontrollers/scale", "replicationcontrollers/status", "serviceaccounts", "events",
         "limitranges", "resourcequotas", "resourcequotas/status", "namespaces/status", "bindings"],
    "apps": ["deployments", "deployments/scale", "deployments/status", "replicasets", "replicasets/scale",
             "replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status", "daemonsets",
             "daemonsets/status", "controllerrevisions"],
    "batch": ["jobs", "jobs/status", "cronjobs", "cronjobs/status"],
    "policy": ["poddisruptionbudgets", "poddisruptionbudgets/status"],
    "discovery.k8s.io": ["endpointslices"],
    "networking.k8s.io": ["ingresses", "ingresses/status", "networkpolicies"],
    "autoscaling": ["horizontalpodautoscalers", "horizontalpodautoscalers/status"],
    "events.k8s.io": ["events"],
    "coordination.k8s.io": ["leases"],
    "ray.io": ["rayclusters", "rayclusters/status", "rayjobs", "rayjobs/status", "rayservices",
               "rayservices/status"],
    "batch.volcano.sh": ["jobs", "jobs/status"],
    "scheduling.volcano.sh": ["podgroups", "podgroups/status"],
}
#: what edit may write (read-only subresources stay read-only)
_EDITABLE: dict[str, list[str]] = {
    "": ["pods", "pods/exec", "pods/attach", "pods/portforward", "pods/eviction", "pods/proxy", "services",
         "services/proxy", "endpoints", "configmaps", "secrets", "persistentvolumeclaims", "replicationcontrollers",
         "replicationcontrollers/scale", "serviceaccounts", "serviceaccounts/token", "events"],
    "apps": ["deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale",
             "statefulsets", "statefulsets/scale", "daemonsets"],
    "batch": ["jobs", "cronjobs"],
    "policy": ["poddisruptionbudgets"],
    "discovery.k8s.io": ["endpointslices"],
    "networking.k8s.io": ["ingresses", "networkpolicies"],
    "autoscaling": ["horizontalpodautoscalers"],
    "events.k8s.io": ["events"],
    "coordination.k8s.io": ["leases"],
    "ray.io": ["rayclusters", "rayjobs", "rayservices"],
    "batch.volcano.sh": ["jobs"],
    "scheduling.volcano.sh": ["podgroups"],
}


def _cluster_role(name: str, rules: list[Obj], *, labels: Mapping[str, str] | None = None,
                  aggregate_from: str | None = None) -> Obj:
    role: Obj = {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
                 "metadata": {"name": name, "labels": {**_BOOT_LABELS, **(labels or {})},
                              "annotations": dict(_AUTOUPDATE)},
                 "rules": rules}
    if aggregate_from is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": [
            {"matchLabels": {f"rbac.authorization.k8s.io/aggregate-to-{aggregate_from}": "true"}}]}
    return role


def _cluster_binding(name: str, role: str, groups: list[str]) -> Obj:
    return {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": dict(_BOOT_LABELS), "annotations": dict(_AUTOUPDATE)},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": g} for g in groups]}


def bootstrap_policy() -> tuple[list[Obj], list[Obj]]:
    """``(cluster_roles, cluster_role_bindings)`` kube-apiserver creates at start."""
    view = [{"apiGroups": [g], "resources": list(rs), "verbs": list(_READ)} for g, rs in _WORKLOADS.items()]
    view.append({"apiGroups": [""], "resources": ["namespaces"], "verbs": list(_READ)})
    edit = [{"apiGroups": [g], "resources": list(rs), "verbs": list(_WRITE)} for g, rs in _EDITABLE.items()]
    edit.append({"apiGroups": [""], "resources": ["secrets"], "verbs": list(_READ)})
    edit.append({"apiGroups": [""], "resources": ["pods/exec", "pods/attach", "pods/portforward", "pods/proxy",
                                                  "services/proxy"], "verbs": list(_READ)})
    admin = [
        {"apiGroups": [RBAC], "resources": ["roles", "rolebindings"], "verbs": [*_READ, *_WRITE]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["localsubjectaccessreviews"], "verbs": ["create"]},
    ]
    roles = [
        _cluster_role("cluster-admin", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                                        {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        _cluster_role("admin", [], aggregate_from="admin"),
        _cluster_role("edit", [], aggregate_from="edit",
                      labels={"rbac.authorization.k8s.io/aggregate-to-admin": "true"}),
        _cluster_role("view", [], aggregate_from="view",
                      labels={"rbac.authorization.k8s.io/aggregate-to-edit": "true"}),
        _cluster_role("system:aggregate-to-admin", admin,
                      labels={"rbac.authorization.k8s.io/aggregate-to-admin": "true"}),
        _cluster_role("system:aggregate-to-edit", edit,
                      labels={"rbac.authorization.k8s.io/aggregate-to-edit": "true"}),
        _cluster_role("system:aggregate-to-view", view,
                      labels={"rbac.authorization.k8s.io/aggregate-to-view": "true"}),
        _cluster_role("system:basic-user", [
            {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews",
                                                                  "selfsubjectrulesreviews"], "verbs": ["create"]},
        ]),
        _cluster_role("system:discovery", [{"nonResourceURLs": [
            "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz",
            "/version", "/version/"], "verbs": ["get"]}]),
        _cluster_role("system:public-info-viewer", [{"nonResourceURLs": [
            "/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        _cluster_role("system:monitoring", [{"nonResourceURLs": [
            "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"],
            "verbs": ["get"]}]),
    ]
    bindings = [
        _cluster_binding("cluster-admin", "cluster-admin", ["system:masters"]),
        _cluster_binding("system:basic-user", "system:basic-user", ["system:authenticated"]),
        _cluster_binding("system:discovery", "system:discovery", ["system:authenticated"]),
        _cluster_binding("system:public-info-viewer", "system:public-info-viewer",
                         ["system:authenticated", "system:unauthenticated"]),
        _cluster_binding("system:monitoring", "system:monitoring", ["system:monitoring"]),
    ]
    return roles, bindings
