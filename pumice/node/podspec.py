"""Pure helpers over a Pod spec: resources, ``$(VAR)`` expansion, environment, ports.

Shapes: ``pod`` is a v1 Pod in wire form (a dict), ``container`` one entry of
``spec.containers`` / ``spec.initContainers``. CPU is in millicores, memory in bytes.

Mirrors: kubernetes pkg/kubelet/kubelet_pods.go (makeEnvironmentVariables,
podFieldSelectorRuntimeValue), third_party/forked/golang/expansion/expand.go (``$(VAR)`` syntax),
pkg/api/v1/resource/helpers.go (PodRequests: max(init) vs sum(containers) plus overhead).
"""

from __future__ import annotations

import base64
import functools
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from pumice.api import Obj, quantity


@functools.lru_cache(maxsize=4096)
def _units(name: str, q: str | int | float) -> int:
    """A resource quantity in canonical units: millicores for ``cpu``, units (bytes) otherwise."""
    return quantity.milli_value(q) if name == "cpu" else quantity.value(q)


_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.\-]*)\)")


def expand(value: str, env: Mapping[str, str]) -> str:
    """Expand ``$(NAME)`` from ``env``; ``$$`` is a literal ``$``; unknown names stay as written.

    Mirrors: kubernetes third_party/forked/golang/expansion/expand.go Expand.
    """

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)

    return _VAR.sub(sub, value)


def all_containers(pod: Obj) -> list[Obj]:
    spec = pod.get("spec") or {}
    return list(spec.get("initContainers") or []) + list(spec.get("containers") or [])


def container_requests(container: Obj) -> dict[str, int]:
    """Requests of one container in canonical units: ``cpu`` millicores, everything else in units
    (bytes for memory); a missing request defaults to the limit, as the API server's defaulting does."""
    res = container.get("resources") or {}
    limits = res.get("limits") or {}
    requests = {**limits, **(res.get("requests") or {})}
    out: dict[str, int] = {}
    for name, q in requests.items():
        out[name] = _units(name, q)
    return out


def pod_requests(pod: Obj) -> dict[str, int]:
    """Effective requests of a Pod: per resource, max(largest init container, sum of containers)
    plus ``spec.overhead``. Units as :func:`container_requests`. Sidecar init containers
    (restartPolicy Always) count towards the sum.

    Mirrors: kubernetes pkg/api/v1/resource/helpers.go PodRequests.
    """
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for c in spec.get("containers") or []:
        for k, v in container_requests(c).items():
            total[k] = total.get(k, 0) + v
    sidecars: dict[str, int] = {}
    for c in spec.get("initContainers") or []:
        req = container_requests(c)
        if c.get("restartPolicy") == "Always":
            for k, v in req.items():
                sidecars[k] = sidecars.get(k, 0) + v
                total[k] = total.get(k, 0) + v
            continue
        for k, v in req.items():
            total[k] = max(total.get(k, 0), v + sidecars.get(k, 0))
    for k, q in (spec.get("overhead") or {}).items():
        total[k] = total.get(k, 0) + _units(k, q)
    return total


def memory_limit(pod: Obj) -> int | None:
    """Sum of the containers' memory limits in bytes, or None when any container has none
    (then the Pod is not limited, as the kubelet's pod-level cgroup)."""
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        lim = ((c.get("resources") or {}).get("limits") or {}).get("memory")
        if lim is None:
            return None
        total += _units("memory", lim)
    return total


def _resource_field(pod: Obj, container: Obj | None, ref: Obj, node_allocatable: Mapping[str, str]) -> str:
    """resourceFieldRef value: ``limits.cpu`` etc. divided by ``divisor``, rounded up.
    A missing limit falls back to the node's allocatable, as the kubelet does."""
    resource = ref.get("resource", "")
    cname = ref.get("containerName")
    if cname:
        container = next((c for c in all_containers(pod) if c.get("name") == cname), None)
    if container is None:
        raise ValueError(f"resourceFieldRef {resource!r}: container not found")
    kind, _, rname = resource.partition(".")
    if kind not in ("limits", "requests") or not rname:
        raise ValueError(f"unsupported resourceFieldRef resource {resource!r}")
    res = container.get("resources") or {}
    q = (res.get(kind) or {}).get(rname)
    if q is None and kind == "requests":
        q = (res.get("limits") or {}).get(rname)
    if q is None:
        q = node_allocatable.get(rname, "0") if kind == "limits" else "0"
    divisor = quantity.parse_quantity(ref.get("divisor") or "1")
    if divisor <= 0:
        raise ValueError(f"resourceFieldRef {resource!r}: divisor must be positive")
    return str(math.ceil(quantity.parse_quantity(q) / divisor))


def _field(pod: Obj, path: str) -> str:
    """fieldRef value for the paths the kubelet supports."""
    md = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if m:
        return str((md.get(m.group(1)) or {}).get(m.group(2), ""))
    simple: dict[str, Callable[[], Any]] = {
        "metadata.name": lambda: md.get("name", ""),
        "metadata.namespace": lambda: md.get("namespace", ""),
        "metadata.uid": lambda: md.get("uid", ""),
        "metadata.labels": lambda: format_map(md.get("labels") or {}),
        "metadata.annotations": lambda: format_map(md.get("annotations") or {}),
        "spec.nodeName": lambda: spec.get("nodeName", ""),
        "spec.serviceAccountName": lambda: spec.get("serviceAccountName", ""),
        "status.hostIP": lambda: status.get("hostIP", ""),
        "status.hostIPs": lambda: ",".join(a["ip"] for a in status.get("hostIPs") or []),
        "status.podIP": lambda: status.get("podIP", ""),
        "status.podIPs": lambda: ",".join(a["ip"] for a in status.get("podIPs") or []),
    }
    if path not in simple:
        raise ValueError(f"unsupported fieldRef fieldPath {path!r}")
    return str(simple[path]())


def format_map(m: Mapping[str, str]) -> str:
    """Labels/annotations as the downward API file format: ``key="value"`` lines, sorted."""
    return "\n".join(f'{k}="{_escape(v)}"' for k, v in sorted(m.items()))


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class EnvError(Exception):
    """A referenced ConfigMap/Secret/key is missing (the container waits with
    CreateContainerConfigError) or a reference is unsupported."""


def downward_value(pod: Obj, container: Obj | None, source: Obj, node_allocatable: Mapping[str, str]) -> str:
    """Value of a ``fieldRef`` or ``resourceFieldRef`` source (env or downwardAPI volume item).

    Raises:
        EnvError: unsupported path or resource.
    """
    try:
        if "fieldRef" in source:
            return _field(pod, source["fieldRef"].get("fieldPath", ""))
        if "resourceFieldRef" in source:
            return _resource_field(pod, container, source["resourceFieldRef"], node_allocatable)
    except ValueError as e:
        raise EnvError(str(e)) from e
    raise EnvError(f"unsupported downward API source {sorted(source)}")


Lookup = Callable[[str, str], Obj | None]
"""``lookup(kind, name)`` -> a ConfigMap or Secret of the Pod's namespace (``kind`` is
``"configmaps"`` or ``"secrets"``), or None when missing."""


def object_data(kind: str, obj: Obj) -> dict[str, str]:
    if kind == "secrets":
        out = {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in (obj.get("data") or {}).items()}
        out.update(obj.get("stringData") or {})
        return out
    out = dict(obj.get("data") or {})
    for k, v in (obj.get("binaryData") or {}).items():
        out[k] = base64.b64decode(v).decode("utf-8", "replace")
    return out


def container_env(
    pod: Obj,
    container: Obj,
    lookup: Lookup,
    *,
    base: Mapping[str, str],
    node_allocatable: Mapping[str, str],
) -> dict[str, str]:
    """The environment of one container: ``base`` (kubelet-provided variables such as
    KUBERNETES_SERVICE_HOST), then ``envFrom`` sources in order, then ``env`` entries, each
    value ``$(VAR)``-expanded against what is defined so far.

    Raises:
        EnvError: a non-optional ConfigMap/Secret or key is missing, or a source is unsupported.
    """
    env: dict[str, str] = dict(base)
    for src in container.get("envFrom") or []:
        prefix = src.get("prefix", "")
        for kind, field in (("configmaps", "configMapRef"), ("secrets", "secretRef")):
            ref = src.get(field)
            if ref is None:
                continue
            obj = lookup(kind, ref.get("name", ""))
            if obj is None:
                if ref.get("optional"):
                    continue
                raise EnvError(f'{kind[:-1]} "{ref.get("name", "")}" not found')
            for k, v in object_data(kind, obj).items():
                env[prefix + k] = v
    for entry in container.get("env") or []:
        name = entry.get("name", "")
        if "value" in entry or "valueFrom" not in entry:
            env[name] = expand(str(entry.get("value", "")), env)
            continue
        vf = entry["valueFrom"]
        for kind, field in (("configmaps", "configMapKeyRef"), ("secrets", "secretKeyRef")):
            ref = vf.get(field)
            if ref is None:
                continue
            obj = lookup(kind, ref.get("name", ""))
            data = object_data(kind, obj) if obj is not None else None
            if data is None or ref.get("key") not in data:
                if ref.get("optional"):
                    break
                what = "not found" if data is None else f'has no key "{ref.get("key")}"'
                raise EnvError(f'{kind[:-1]} "{ref.get("name", "")}" {what}')
            env[name] = data[ref["key"]]
            break
        else:
            env[name] = downward_value(pod, container, vf, node_allocatable)
    return env


def command_line(container: Obj, env: Mapping[str, str]) -> list[str]:
    """``command + args`` with ``$(VAR)`` expanded; empty when neither is given (the image's
    entrypoint, which the process runtime cannot know)."""
    return [expand(str(a), env) for a in (container.get("command") or []) + (container.get("args") or [])]


def resolve_port(container: Obj, port: int | str) -> int:
    """A probe or hook port: a number, or the name of one of the container's ports.

    Raises:
        ValueError: unknown port name.
    """
    if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
        return int(port)
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return int(p["containerPort"])
    raise ValueError(f"port {port!r} not found in container {container.get('name')!r}")
