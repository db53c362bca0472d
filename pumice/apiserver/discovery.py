"""Discovery documents and /version (OpenAPI lives in :mod:`pumice.apiserver.openapi`).

Legacy discovery: ``/api`` (APIVersions), ``/apis`` (APIGroupList), ``/apis/<g>`` (APIGroup),
``/api/v1`` and ``/apis/<g>/<v>`` (APIResourceList, with subresources as ``pods/status``).
Aggregated discovery (``apidiscovery.k8s.io`` APIGroupDiscoveryList) is served only in the version
the client names in ``Accept`` (v2 or v2beta1), as kube-apiserver does.

Mirrors: k8s.io/apiserver pkg/endpoints/discovery (legacy and aggregated).
"""

from __future__ import annotations

import hashlib
import re

from pumice.api import Obj
from pumice.api.scheme import ResourceKind, Scheme

VERSION_INFO: Obj = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.3",
    "gitCommit": "pumice",
    "gitTreeState": "clean",
    "buildDate": "2025-03-11T00:00:00Z",
    "goVersion": "go1.23.6",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_SUB_KIND: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    # subresource -> (group, version, kind or "" for the parent's kind, verbs)
    "status": ("", "", "", ("get", "patch", "update")),
    "scale": ("autoscaling", "v1", "Scale", ("get", "patch", "update")),
    "binding": ("", "v1", "Binding", ("create",)),
    "eviction": ("policy", "v1", "Eviction", ("create",)),
    "log": ("", "", "", ("get",)),
    "finalize": ("", "", "", ("update",)),
    "token": ("authentication.k8s.io", "v1", "TokenRequest", ("create",)),
    "exec": ("", "v1", "PodExecOptions", ("create", "get")),
    "attach": ("", "v1", "PodAttachOptions", ("create", "get")),
    "portforward": ("", "v1", "PodPortForwardOptions", ("create", "get")),
    "ephemeralcontainers": ("", "", "", ("get", "patch", "update")),
    # kind: "<parent kind>ProxyOptions" (PodProxyOptions, ServiceProxyOptions, NodeProxyOptions)
    "proxy": ("", "v1", "ProxyOptions", ("create", "delete", "get", "patch", "update")),
}


def sub_kind(rk: ResourceKind, sub: str) -> tuple[str, str, str, tuple[str, ...]]:
    """``(group, version, kind, verbs)`` of subresource ``sub`` of ``rk`` as discovery lists it
    (group, version and kind empty: the parent's)."""
    g, v, kind, verbs = _SUB_KIND.get(sub, ("", "", "", ("get",)))
    if sub == "proxy":
        kind = rk.kind + kind
    return g, v, kind, verbs

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(v: str) -> tuple[int, int, int, str]:
    """Sort key putting GA before beta before alpha, higher numbers first, others last by name.

    Mirrors: k8s.io/apimachinery pkg/version/helpers.go CompareKubeAwareVersionStrings.
    """
    m = _VERSION_RE.match(v)
    if not m:
        return (3, 0, 0, v)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, v)


def _groups(scheme: Scheme) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for group, version in scheme.group_versions():
        out.setdefault(group, []).append(version)
    for g in out:
        out[g].sort(key=version_priority)
    return out


def api_versions() -> Obj:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]}


def _api_group(name: str, versions: list[str]) -> Obj:
    vs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": vs, "preferredVersion": vs[0]}


def api_group_list(scheme: Scheme) -> Obj:
    groups = _groups(scheme)
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_api_group(g, vs) for g, vs in sorted(groups.items()) if g]}


def api_group(scheme: Scheme, group: str) -> Obj | None:
    vs = _groups(scheme).get(group)
    if not vs:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_api_group(group, vs)}


def _storage_hash(rk: ResourceKind) -> str:
    return hashlib.sha256(f"{rk.group}/{rk.version}/{rk.kind}".encode()).hexdigest()[:11]


def api_resource_list(scheme: Scheme, group: str, version: str) -> Obj | None:
    kinds = scheme.kinds_in(group, version)
    if not kinds:
        return None
    resources: list[Obj] = []
    for rk in kinds:
        r: Obj = {"name": rk.plural, "singularName": rk.singular_name, "namespaced": rk.namespaced,
                  "kind": rk.kind, "verbs": list(rk.verbs)}
        if rk.short_names:
            r["shortNames"] = list(rk.short_names)
        if rk.categories:
            r["categories"] = list(rk.categories)
        r["storageVersionHash"] = _storage_hash(rk)
        resources.append(r)
        for sub in rk.subresources:
            g, v, kind, verbs = sub_kind(rk, sub)
            s: Obj = {"name": f"{rk.plural}/{sub}", "singularName": "", "namespaced": rk.namespaced,
                      "kind": kind or rk.kind, "verbs": list(verbs)}
            if g:
                s["group"] = g
            if v and (g or v != rk.version):
                s["version"] = v
            resources.append(s)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def _aggregated_resource(rk: ResourceKind) -> Obj:
    r: Obj = {
        "resource": rk.plural,
        "responseKind": {"group": rk.group, "version": rk.version, "kind": rk.kind},
        "scope": "Namespaced" if rk.namespaced else "Cluster",
        "singularResource": rk.singular_name,
        "verbs": list(rk.verbs),
    }
    if rk.short_names:
        r["shortNames"] = list(rk.short_names)
    if rk.categories:
        r["categories"] = list(rk.categories)
    subs = []
    for sub in rk.subresources:
        g, v, kind, verbs = sub_kind(rk, sub)
        subs.append({"subresource": sub,
                     "responseKind": {"group": g if kind else rk.group, "version": v or rk.version,
                                      "kind": kind or rk.kind},
                     "verbs": list(verbs)})
    if subs:
        r["subresources"] = subs
    return r


def aggregated(scheme: Scheme, *, legacy: bool, version: str) -> Obj:
    """APIGroupDiscoveryList for ``/api`` (``legacy``) or ``/apis``, in ``version`` (v2 or v2beta1)."""
    groups = _groups(scheme)
    items = []
    for g, vs in sorted(groups.items()):
        if (g == "") != legacy:
            continue
        versions = [{"version": v, "resources": [_aggregated_resource(rk) for rk in scheme.kinds_in(g, v)],
                     "freshness": "Current"} for v in vs]
        items.append({"metadata": {"name": g, "creationTimestamp": None}, "versions": versions})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}",
            "metadata": {}, "items": items}


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"
