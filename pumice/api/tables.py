"""``meta.k8s.io/v1`` Tables for ``kubectl get``: kubectl's usual columns for built-in kinds and
the ``additionalPrinterColumns`` of custom resources.

Mirrors: kubernetes pkg/printers/internalversion/printers.go (column sets, printPod status,
printNode status, printService ports, printJob completions) and apimachinery
pkg/util/duration HumanDuration (ages); apiextensions-apiserver pkg/registry/customresource/
tableconvertor (printer columns).

Deviates: JSONPath support covers simple paths (``.status.head.podIP``, ``.spec.items[0].x``,
escaped dots ``.metadata.labels.app\\.kubernetes\\.io/name``), not filters or ranges.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from pumice.api import Obj
from pumice.api.meta import find_condition
from pumice.api.scheme import ResourceKind
from pumice.api.selectors import format_label_selector

Cell = Any
NONE = "<none>"

NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources "
    "may allow a client to request the generation of an appropriate name automatically. Name is primarily "
    "intended for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
AGE_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. "
    "It is represented in RFC3339 form and is in UTC."
)


# --- time -----------------------------------------------------------------------------------------


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp (``2024-01-02T03:04:05Z``), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """kubectl's age form: ``5s``, ``3m2s``, ``15m``, ``4h10m``, ``10h``, ``5d2h``, ``30d``, ``2y3d``.

    Mirrors: apimachinery pkg/util/duration/duration.go HumanDuration.
    """
    secs = int(seconds)
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    minutes = secs // 60
    if minutes < 10:
        s = secs % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = secs // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def age(timestamp: Any, now: float) -> str:
    """Age of an RFC 3339 timestamp at ``now`` (epoch seconds); ``<unknown>`` when unset."""
    t = parse_time(timestamp)
    if t is None:
        return "<unknown>"
    return human_duration(now - t)


# --- columns --------------------------------------------------------------------------------------


def column(name: str, type_: str = "string", *, priority: int = 0, format_: str = "",
           description: str = "") -> Obj:
    return {"name": name, "type": type_, "format": format_, "description": description or name,
            "priority": priority}


NAME_COLUMN = column("Name", format_="name", description=NAME_DESCRIPTION)
AGE_COLUMN = column("Age", description=AGE_DESCRIPTION)


def _meta(o: Obj) -> Obj:
    md = o.get("metadata")
    return md if isinstance(md, dict) else {}


def _name(o: Obj) -> str:
    return str(_meta(o).get("name", ""))


def _age(o: Obj, now: float) -> str:
    return age(_meta(o).get("creationTimestamp"), now)


def _spec(o: Obj) -> Obj:
    s = o.get("spec")
    return s if isinstance(s, dict) else {}


def _status(o: Obj) -> Obj:
    s = o.get("status")
    return s if isinstance(s, dict) else {}


def _conditions(o: Obj) -> list[Obj]:
    return [c for c in _status(o).get("conditions") or [] if isinstance(c, dict)]


def _has_condition(o: Obj, ctype: str) -> bool:
    c = find_condition(_conditions(o), ctype)
    return c is not None and c.get("status") == "True"


def _join_or_none(values: list[str]) -> str:
    return ",".join(values) if values else NONE


def _containers_images(template_spec: Obj) -> tuple[str, str]:
    ctrs = [c for c in template_spec.get("containers") or [] if isinstance(c, dict)]
    return (_join_or_none([str(c.get("name", "")) for c in ctrs]),
            _join_or_none([str(c.get("image", "")) for c in ctrs]))


# --- Pod ------------------------------------------------------------------------------------------

POD_COLUMNS = [
    NAME_COLUMN,
    column("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
    column("Status", description="The aggregate status of the containers in this pod."),
    column("Restarts", description="The number of times the containers in this pod have been restarted and "
                                   "when the last container in this pod has restarted."),
    AGE_COLUMN,
    column("IP", priority=1, description="IP address allocated to the pod. Routable at least within the cluster."),
    column("Node", priority=1, description="NodeName is a request to schedule this pod onto a specific node."),
    column("Nominated Node", priority=1, description="nominatedNodeName is set only when this pod preempts "
                                                     "other pods on the node."),
    column("Readiness Gates", priority=1, description="If specified, all readiness gates will be evaluated for "
                                                      "pod readiness."),
]


def pod_status_reason(pod: Obj) -> str:
    """The STATUS kubectl shows for a Pod: phase or status.reason, ``Init:x/y``, ``Init:<reason>``,
    a waiting/terminated container reason (``ContainerCreating``, ``CrashLoopBackOff``,
    ``Completed``, ``Error``), ``ExitCode:n``, ``SchedulingGated``, ``Terminating``, ``Unknown``."""
    return _pod_row_parts(pod, 0.0)[1]


def _pod_row_parts(pod: Obj, now: float) -> tuple[str, str, Cell]:
    """kubectl's READY, STATUS and RESTARTS cells of a Pod (RESTARTS with "(5m ago)" when a
    container restarted). Mirrors: kubectl pkg/printers/internalversion printPod."""
    spec, status = _spec(pod), _status(pod)
    reason = str(status.get("phase") or "")
    if status.get("reason"):
        reason = str(status["reason"])
    for cond in _conditions(pod):
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    init_specs = [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
    restartable = {c.get("name") for c in init_specs if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or []) + len(restartable)
    init_statuses = [c for c in status.get("initContainerStatuses") or [] if isinstance(c, dict)]
    restarts, sidecar_restarts, ready, init_reason, scanned = _init_containers_state(
        init_statuses, restartable, len(init_specs))
    counted = init_statuses[:scanned]
    if init_reason is not None:
        reason = init_reason
    if init_reason is None or _has_condition(pod, "Initialized"):
        statuses = [c for c in status.get("containerStatuses") or [] if isinstance(c, dict)]
        container_restarts, container_ready, reason = _containers_state(pod, statuses, reason)
        restarts = sidecar_restarts + container_restarts
        ready += container_ready
        counted += statuses
    md = _meta(pod)
    if md.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif md.get("deletionTimestamp") and status.get("phase") not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_cell: Cell = str(restarts)  # printPod's restartsStr: a string cell even without a last restart
    last_restart = _last_restart(counted)
    if last_restart is not None:
        restarts_cell = f"{restarts} ({human_duration(now - last_restart)} ago)"
    return f"{ready}/{total}", reason, restarts_cell


def _init_containers_state(
    init_statuses: list[Obj], restartable: set[Any], init_count: int
) -> tuple[int, int, int, str | None, int]:
    """Walk the init containers until the first one still initializing.

    Returns:
        ``(restarts, restartable_restarts, ready, reason, scanned)``: restarts of the init
        containers walked, those of the restartable (sidecar) ones, the ready sidecars, the
        ``Init:...`` reason when the Pod is still initializing (else None), and how many
        statuses were walked.
    """
    restarts = restartable_restarts = ready = 0
    for i, cs in enumerate(init_statuses):
        restarts += int(cs.get("restartCount") or 0)
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        is_restartable = cs.get("name") in restartable
        if is_restartable:
            restartable_restarts += int(cs.get("restartCount") or 0)
            if cs.get("started") and cs.get("ready"):
                ready += 1
        if term is not None and int(term.get("exitCode") or 0) == 0:
            continue
        if is_restartable and cs.get("started"):
            continue
        if term is not None:
            if not term.get("reason"):
                if term.get("signal"):
                    reason = f"Init:Signal:{term['signal']}"
                else:
                    reason = f"Init:ExitCode:{term.get('exitCode', 0)}"
            else:
                reason = f"Init:{term['reason']}"
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{init_count}"
        return restarts, restartable_restarts, ready, reason, i + 1
    return restarts, restartable_restarts, ready, None, len(init_statuses)


def _containers_state(pod: Obj, statuses: list[Obj], reason: str) -> tuple[int, int, str]:
    """The containers' restarts, ready count and the STATUS they give (last container first, as
    kubectl walks them); ``reason`` is the Pod's so far."""
    restarts = ready = 0
    has_running = False
    for cs in reversed(statuses):
        restarts += int(cs.get("restartCount") or 0)
        state = cs.get("state") or {}
        waiting, term = state.get("waiting"), state.get("terminated")
        if waiting is not None and waiting.get("reason"):
            reason = str(waiting["reason"])
        elif term is not None and term.get("reason"):
            reason = str(term["reason"])
        elif term is not None:
            if term.get("signal"):
                reason = f"Signal:{term['signal']}"
            else:
                reason = f"ExitCode:{term.get('exitCode', 0)}"
        elif cs.get("ready") and state.get("running") is not None:
            has_running = True
            ready += 1
    if reason == "Completed" and has_running:
        reason = "Running" if _has_condition(pod, "Ready") else "NotReady"
    return restarts, ready, reason


def _last_restart(statuses: list[Obj]) -> float | None:
    """The latest ``lastState.terminated.finishedAt`` of ``statuses`` (epoch seconds), or None."""
    last: float | None = None
    for cs in statuses:
        term = ((cs.get("lastState") or {}).get("terminated") or {})
        t = parse_time(term.get("finishedAt"))
        if t is not None and (last is None or t > last):
            last = t
    return last


def _pod_cells(pod: Obj, now: float) -> list[Cell]:
    ready, reason, restarts = _pod_row_parts(pod, now)
    spec, status = _spec(pod), _status(pod)
    gates = [g for g in spec.get("readinessGates") or [] if isinstance(g, dict)]
    gates_cell = NONE
    if gates:
        true_types = {c.get("type") for c in _conditions(pod) if c.get("status") == "True"}
        gates_cell = f"{sum(1 for g in gates if g.get('conditionType') in true_types)}/{len(gates)}"
    return [_name(pod), ready, reason, restarts, _age(pod, now), status.get("podIP") or NONE,
            spec.get("nodeName") or NONE, status.get("nominatedNodeName") or NONE, gates_cell]


# --- Node -----------------------------------------------------------------------------------------

NODE_COLUMNS = [
    NAME_COLUMN,
    column("Status", description="The status of the node"),
    column("Roles", description="The roles of the node"),
    AGE_COLUMN,
    column("Version", description="Kubelet Version reported by the node."),
    column("Internal-IP", priority=1, description="List of addresses reachable to the node."),
    column("External-IP", priority=1, description="List of addresses reachable to the node."),
    column("OS-Image", priority=1, description="OS Image reported by the node from /etc/os-release."),
    column("Kernel-Version", priority=1, description="Kernel Version reported by the node."),
    column("Container-Runtime", priority=1, description="Container Runtime Version reported by the node."),
]


def node_status(node: Obj) -> str:
    """``Ready``, ``NotReady`` or ``Unknown``, with ``,SchedulingDisabled`` when cordoned."""
    conds = {c.get("type"): c.get("status") for c in _conditions(node)}
    parts = []
    if "Ready" in conds:
        parts.append("Ready" if conds["Ready"] == "True" else "NotReady")
    if not parts:
        parts.append("Unknown")
    if _spec(node).get("unschedulable"):
        parts.append("SchedulingDisabled")
    return ",".join(parts)


def _node_cells(node: Obj, now: float) -> list[Cell]:
    labels = _meta(node).get("labels") or {}
    roles = sorted({k[len("node-role.kubernetes.io/"):] for k in labels
                    if k.startswith("node-role.kubernetes.io/") and k != "node-role.kubernetes.io/"}
                   | ({labels["kubernetes.io/role"]} if labels.get("kubernetes.io/role") else set()))
    status = _status(node)
    info = status.get("nodeInfo") or {}
    addrs = [a for a in status.get("addresses") or [] if isinstance(a, dict)]

    def addr(kind: str) -> str:
        return next((str(a.get("address")) for a in addrs if a.get("type") == kind), NONE)

    return [_name(node), node_status(node), ",".join(roles) if roles else NONE, _age(node, now),
            info.get("kubeletVersion", ""), addr("InternalIP"), addr("ExternalIP"),
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


# --- Service --------------------------------------------------------------------------------------

SERVICE_COLUMNS = [
    NAME_COLUMN,
    column("Type", description="type determines how the Service is exposed."),
    column("Cluster-IP", description="clusterIP is the IP address of the service."),
    column("External-IP", description="externalIPs is a list of IP addresses for which nodes in the cluster "
                                      "will also accept traffic for this service."),
    column("Port(s)", description="The list of ports that are exposed by this service."),
    AGE_COLUMN,
    column("Selector", priority=1, description="Route service traffic to pods with label keys and values "
                                               "matching this selector."),
]


def _service_cells(svc: Obj, now: float) -> list[Cell]:
    spec = _spec(svc)
    stype = spec.get("type") or "ClusterIP"
    external_ips = list(spec.get("externalIPs") or [])
    if stype == "ExternalName":
        external = spec.get("externalName") or NONE
    elif stype == "LoadBalancer":
        ingress = [i.get("ip") or i.get("hostname") for i in
                   ((_status(svc).get("loadBalancer") or {}).get("ingress") or []) if isinstance(i, dict)]
        ips = [str(x) for x in ingress if x] + external_ips
        external = ",".join(ips) if ips else "<pending>"
    else:
        external = ",".join(external_ips) if external_ips else NONE
    ports = []
    for p in spec.get("ports") or []:
        if not isinstance(p, dict):
            continue
        proto = p.get("protocol") or "TCP"
        if p.get("nodePort"):
            ports.append(f"{p.get('port')}:{p['nodePort']}/{proto}")
        else:
            ports.append(f"{p.get('port')}/{proto}")
    return [_name(svc), stype, spec.get("clusterIP") or NONE, external, ",".join(ports) if ports else NONE,
            _age(svc, now), format_label_selector(spec.get("selector"))]


# --- workloads ------------------------------------------------------------------------------------

_CONTAINERS = column("Containers", priority=1, description="Names of each container in the template.")
_IMAGES = column("Images", priority=1, description="Images referenced by each container in the template.")
_SELECTOR = column("Selector", priority=1, description="Label selector for pods.")

DEPLOYMENT_COLUMNS = [
    NAME_COLUMN,
    column("Ready", description="Number of the pod with ready state"),
    # string columns holding integer cells, as printers.go declares them
    column("Up-to-date", description="Total number of non-terminated pods targeted by this "
                                      "deployment that have the desired template spec."),
    column("Available", description="Total number of available pods (ready for at least "
                                     "minReadySeconds) targeted by this deployment."),
    AGE_COLUMN, _CONTAINERS, _IMAGES, _SELECTOR,
]


def _deployment_cells(d: Obj, now: float) -> list[Cell]:
    spec, status = _spec(d), _status(d)
    desired = spec.get("replicas", 1)
    ctrs, images = _containers_images((spec.get("template") or {}).get("spec") or {})
    return [_name(d), f"{int(status.get('readyReplicas') or 0)}/{int(desired or 0)}",
            int(status.get("updatedReplicas") or 0), int(status.get("availableReplicas") or 0), _age(d, now),
            ctrs, images, format_label_selector(spec.get("selector"))]


REPLICASET_COLUMNS = [
    NAME_COLUMN,
    column("Desired", "integer", description="Number of desired pods."),
    column("Current", "integer", description="Number of actual pods."),
    column("Ready", "integer", description="The number of ready pods."),
    AGE_COLUMN, _CONTAINERS, _IMAGES, _SELECTOR,
]


def _replicaset_cells(rs: Obj, now: float) -> list[Cell]:
    spec, status = _spec(rs), _status(rs)
    ctrs, images = _containers_images((spec.get("template") or {}).get("spec") or {})
    return [_name(rs), int(spec.get("replicas", 1) or 0), int(status.get("replicas") or 0),
            int(status.get("readyReplicas") or 0), _age(rs, now), ctrs, images, format_label_selector(spec.get("selector"))]


JOB_COLUMNS = [
    NAME_COLUMN,
    column("Status", description="Status of the job."),
    column("Completions", description="The completion status of the job."),
    column("Duration", description="Time required to complete the job."),
    AGE_COLUMN, _CONTAINERS, _IMAGES, _SELECTOR,
]


def job_status(job: Obj) -> str:
    """``Complete``, ``Failed``, ``Terminating``, ``Suspended``, ``FailureTarget``,
    ``SuccessCriteriaMet`` or ``Running``, in kubectl's precedence."""
    if _has_condition(job, "Complete"):
        return "Complete"
    if _has_condition(job, "Failed"):
        return "Failed"
    if _meta(job).get("deletionTimestamp"):
        return "Terminating"
    if _has_condition(job, "Suspended"):
        return "Suspended"
    if _has_condition(job, "FailureTarget"):
        return "FailureTarget"
    if _has_condition(job, "SuccessCriteriaMet"):
        return "SuccessCriteriaMet"
    return "Running"


def _job_cells(job: Obj, now: float) -> list[Cell]:
    spec, status = _spec(job), _status(job)
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    else:
        parallelism = int(spec.get("parallelism") or 0)
        completions = f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"
    start, end = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    duration = ""
    if start is not None:
        duration = human_duration((end if end is not None else now) - start)
    ctrs, images = _containers_images((spec.get("template") or {}).get("spec") or {})
    return [_name(job), job_status(job), completions, duration, _age(job, now), ctrs, images,
            format_label_selector(spec.get("selector"))]


# --- small kinds ----------------------------------------------------------------------------------

NAMESPACE_COLUMNS = [NAME_COLUMN, column("Status", description="The status of the namespace"), AGE_COLUMN]
# Data and Secrets are string columns holding integer cells, as printers.go declares them
CONFIGMAP_COLUMNS = [NAME_COLUMN, column("Data", description="Number of data in configmap"), AGE_COLUMN]
SECRET_COLUMNS = [NAME_COLUMN, column("Type", description="The type of the secret"),
                  column("Data", description="The number of data in secret"), AGE_COLUMN]
SERVICEACCOUNT_COLUMNS = [NAME_COLUMN, column("Secrets", description="The number of secrets"), AGE_COLUMN]
ENDPOINTS_COLUMNS = [NAME_COLUMN, column("Endpoints", description="Endpoints of the service"), AGE_COLUMN]
ENDPOINTSLICE_COLUMNS = [
    NAME_COLUMN,
    column("AddressType", description="addressType specifies the type of address carried by this EndpointSlice. "
           "All addresses in this slice must be the same type. This field is immutable after creation."),
    column("Ports", description="ports specifies the list of network ports exposed by each endpoint in this slice."),
    column("Endpoints", description="endpoints is a list of unique endpoints in this slice. Each slice may include "
           "a maximum of 1000 endpoints."),
    AGE_COLUMN,
]
LEASE_COLUMNS = [NAME_COLUMN, column("Holder", description="The holder of the lease"), AGE_COLUMN]
PRIORITYCLASS_COLUMNS = [
    NAME_COLUMN,
    column("Value", "integer", description="The value of this priority class."),
    column("Global-Default", "boolean", description="globalDefault specifies whether this PriorityClass "
                                                    "should be considered as the default priority."),
    AGE_COLUMN,
    column("PreemptionPolicy", description="preemptionPolicy is the Policy for preempting pods with lower "
                                           "priority."),
]
CRD_COLUMNS = [NAME_COLUMN, column("Created At", "date", description=AGE_DESCRIPTION)]
EVENT_COLUMNS = [
    column("Last Seen", description="Time when last event from this object was observed."),
    column("Type", description="Type of this event (Normal, Warning), new types could be added in the future."),
    column("Reason", description="Reason of this event."),
    column("Object", description="The object this Event is about."),
    column("Subobject", priority=1, description="The subobject of the object this event is about."),
    column("Source", priority=1, description="The component reporting this event."),
    column("Message", description="A human-readable description of the status of this operation."),
    column("First Seen", priority=1, description="The time at which the event was first recorded."),
    column("Count", priority=1, description="The number of times this event has occurred."),
    column("Name", priority=1, format_="name", description=NAME_DESCRIPTION),
]
ROLEBINDING_COLUMNS = [
    NAME_COLUMN, column("Role", description="Role"), AGE_COLUMN,
    column("Users", priority=1, description="Users in the roleBinding"),
    column("Groups", priority=1, description="Groups in the roleBinding"),
    column("ServiceAccounts", priority=1, description="ServiceAccounts in the roleBinding"),
]
ROLE_COLUMNS = [NAME_COLUMN, column("Created At", description=AGE_DESCRIPTION)]
DEFAULT_COLUMNS = [NAME_COLUMN, AGE_COLUMN]


def _endpoints_string(ep: Obj) -> str:
    items = []
    for subset in ep.get("subsets") or []:
        ports = [p.get("port") for p in subset.get("ports") or [] if isinstance(p, dict)] or [None]
        for a in subset.get("addresses") or []:
            for port in ports:
                items.append(f"{a.get('ip')}:{port}" if port is not None else str(a.get("ip")))
    if not items:
        return NONE
    if len(items) > 3:
        return ",".join(items[:3]) + f" + {len(items) - 3} more..."
    return ",".join(items)


def _list_with_more(items: list[str], count: int) -> str:
    """Up to 3 items joined by commas, ``+ N more...`` past them, ``<unset>`` for none
    (kubectl's listWithMoreString)."""
    if count > 3:
        return ",".join(items[:3]) + f" + {count - 3} more..."
    return ",".join(items) or "<unset>"


def _endpointslice_cells(es: Obj, now: float) -> list[Cell]:
    """Mirrors: kubernetes pkg/printers/internalversion/printers.go printEndpointSlice
    (formatDiscoveryPorts: a port's number, else its name, else ``*``; formatDiscoveryEndpoints)."""
    ports = [p for p in es.get("ports") or [] if isinstance(p, dict)]
    port_items = [str(p["port"]) if p.get("port") is not None else str(p["name"]) if p.get("name") is not None
                  else "*" for p in ports]
    addrs = [str(a) for e in es.get("endpoints") or [] if isinstance(e, dict) for a in e.get("addresses") or []]
    return [_name(es), str(es.get("addressType", "")), _list_with_more(port_items, len(port_items)),
            _list_with_more(addrs, len(addrs)), _age(es, now)]


def _event_cells(ev: Obj, now: float) -> list[Cell]:
    involved = ev.get("involvedObject") or ev.get("regarding") or {}
    last = ev.get("lastTimestamp") or (ev.get("series") or {}).get("lastObservedTime") or ev.get("eventTime")
    first = ev.get("firstTimestamp") or ev.get("eventTime")
    source = ev.get("source") or {}
    src = source.get("component") or ev.get("reportingComponent") or ev.get("reportingController") or ""
    if source.get("host"):
        src = f"{src}, {source['host']}"
    count = int(ev.get("count") or (ev.get("series") or {}).get("count") or 1)
    return [age(last, now) if last else "<unknown>", ev.get("type", ""), ev.get("reason", ""),
            f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
            involved.get("fieldPath", ""), src, str(ev.get("message") or ev.get("note") or "").strip(),
            age(first, now) if first else "<unknown>", count, _name(ev)]


def _rolebinding_cells(rb: Obj, now: float) -> list[Cell]:
    ref = rb.get("roleRef") or {}
    subjects = [s for s in rb.get("subjects") or [] if isinstance(s, dict)]

    def names(kind: str) -> str:
        return ", ".join(s.get("name", "") if kind != "ServiceAccount" else f"{s.get('namespace', '')}/{s.get('name', '')}"
                         for s in subjects if s.get("kind") == kind)

    return [_name(rb), f"{ref.get('kind', '')}/{ref.get('name', '')}", _age(rb, now),
            names("User"), names("Group"), names("ServiceAccount")]


Printer = tuple[list[Obj], Callable[[Obj, float], list[Cell]]]

_PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "Pod"): (POD_COLUMNS, _pod_cells),
    ("", "Node"): (NODE_COLUMNS, _node_cells),
    ("", "Service"): (SERVICE_COLUMNS, _service_cells),
    ("", "Namespace"): (NAMESPACE_COLUMNS,
                        lambda o, now: [_name(o), _status(o).get("phase", ""), _age(o, now)]),
    ("", "ConfigMap"): (CONFIGMAP_COLUMNS,
                        lambda o, now: [_name(o), len(o.get("data") or {}) + len(o.get("binaryData") or {}),
                                        _age(o, now)]),
    ("", "Secret"): (SECRET_COLUMNS,
                     lambda o, now: [_name(o), o.get("type", ""), len(o.get("data") or {}), _age(o, now)]),
    ("", "ServiceAccount"): (SERVICEACCOUNT_COLUMNS,
                             lambda o, now: [_name(o), len(o.get("secrets") or []), _age(o, now)]),
    ("", "Endpoints"): (ENDPOINTS_COLUMNS, lambda o, now: [_name(o), _endpoints_string(o), _age(o, now)]),
    ("", "Event"): (EVENT_COLUMNS, _event_cells),
    ("discovery.k8s.io", "EndpointSlice"): (ENDPOINTSLICE_COLUMNS, _endpointslice_cells),
    ("events.k8s.io", "Event"): (EVENT_COLUMNS, _event_cells),
    ("apps", "Deployment"): (DEPLOYMENT_COLUMNS, _deployment_cells),
    ("apps", "ReplicaSet"): (REPLICASET_COLUMNS, _replicaset_cells),
    ("batch", "Job"): (JOB_COLUMNS, _job_cells),
    ("coordination.k8s.io", "Lease"): (LEASE_COLUMNS,
                                       lambda o, now: [_name(o), _spec(o).get("holderIdentity") or "",
                                                       _age(o, now)]),
    ("scheduling.k8s.io", "PriorityClass"): (
        PRIORITYCLASS_COLUMNS,
        lambda o, now: [_name(o), int(o.get("value") or 0), bool(o.get("globalDefault")), _age(o, now),
                        o.get("preemptionPolicy") or "PreemptLowerPriority"]),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (
        CRD_COLUMNS, lambda o, now: [_name(o), _meta(o).get("creationTimestamp", "")]),
    ("rbac.authorization.k8s.io", "Role"): (
        ROLE_COLUMNS, lambda o, now: [_name(o), _meta(o).get("creationTimestamp", "")]),
    ("rbac.authorization.k8s.io", "ClusterRole"): (
        ROLE_COLUMNS, lambda o, now: [_name(o), _meta(o).get("creationTimestamp", "")]),
    ("rbac.authorization.k8s.io", "RoleBinding"): (ROLEBINDING_COLUMNS, _rolebinding_cells),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): (ROLEBINDING_COLUMNS, _rolebinding_cells),
}



# --- the kinds served since issue 12: kubectl's columns (pkg/printers/internalversion/printers.go) ---

_ACCESS = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}


def _modes(modes: Any) -> str:
    return ",".join(_ACCESS.get(m, m) for m in modes or [])


def _storage_phase(o: Obj) -> str:
    """A claim's or volume's STATUS cell: ``Terminating`` once it is being deleted (held by its
    protection finalizer), else its phase. Mirrors: printers.go printPersistentVolume(Claim)."""
    return "Terminating" if _meta(o).get("deletionTimestamp") else str(_status(o).get("phase", ""))


def _pvc_cells(o: Obj, now: float) -> list[Cell]:
    spec, status = _spec(o), _status(o)
    named = bool(spec.get("volumeName"))  # capacity and modes of a claim naming its volume
    return [_name(o), _storage_phase(o), spec.get("volumeName", "") or "",
            (status.get("capacity") or {}).get("storage", "") if named else "",
            _modes(status.get("accessModes")) if named else "", spec.get("storageClassName") or "",
            "<unset>", _age(o, now), spec.get("volumeMode", "")]


def _pv_cells(o: Obj, now: float) -> list[Cell]:
    spec, status = _spec(o), _status(o)
    ref = spec.get("claimRef") or {}
    claim = f"{ref.get('namespace')}/{ref.get('name')}" if ref.get("name") else ""
    return [_name(o), (spec.get("capacity") or {}).get("storage", ""), _modes(spec.get("accessModes")),
            spec.get("persistentVolumeReclaimPolicy", ""), _storage_phase(o), claim,
            spec.get("storageClassName") or "", "<unset>", status.get("reason", ""), _age(o, now),
            spec.get("volumeMode", "")]


def _sts_cells(o: Obj, now: float) -> list[Cell]:
    spec, status = _spec(o), _status(o)
    ctrs, images = _containers_images((spec.get("template") or {}).get("spec") or {})
    return [_name(o), f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas', 1) or 0)}", _age(o, now),
            ctrs, images]


def _ds_cells(o: Obj, now: float) -> list[Cell]:
    spec, st = _spec(o), _status(o)
    tspec = (spec.get("template") or {}).get("spec") or {}
    ctrs, images = _containers_images(tspec)
    sel = ",".join(f"{k}={v}" for k, v in sorted((tspec.get("nodeSelector") or {}).items())) or "<none>"
    return [_name(o), int(st.get("desiredNumberScheduled") or 0), int(st.get("currentNumberScheduled") or 0),
            int(st.get("numberReady") or 0), int(st.get("updatedNumberScheduled") or 0),
            int(st.get("numberAvailable") or 0), sel, _age(o, now), ctrs, images,
            format_label_selector(spec.get("selector"))]


def _bool_ptr(value: Any) -> str:
    """printers.go printBoolPtr: ``True``/``False``, ``<unset>`` for a missing field."""
    return "<unset>" if value is None else str(bool(value))


def _cj_cells(o: Obj, now: float) -> list[Cell]:
    spec, st = _spec(o), _status(o)
    last = st.get("lastScheduleTime")
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    ctrs, images = _containers_images((job_spec.get("template") or {}).get("spec") or {})
    return [_name(o), spec.get("schedule", ""), spec.get("timeZone") or "<none>", _bool_ptr(spec.get("suspend")),
            len(st.get("active") or []), age(last, now) if last else "<none>", _age(o, now), ctrs, images,
            format_label_selector(job_spec.get("selector"))]


def _pdb_cells(o: Obj, now: float) -> list[Cell]:
    spec, st = _spec(o), _status(o)
    return [_name(o), str(spec["minAvailable"]) if "minAvailable" in spec else "N/A",
            str(spec["maxUnavailable"]) if "maxUnavailable" in spec else "N/A",
            int(st.get("disruptionsAllowed") or 0), _age(o, now)]


def _ingress_hosts(rules: list[Any]) -> str:
    """formatHosts: the first three hosts the rules give (``*`` when none); a rule after the third
    host adds `` + <rules - 3> more...``."""
    hosts: list[str] = []
    more = False
    for r in rules:
        if len(hosts) == 3:
            more = True
            break
        if isinstance(r, dict) and r.get("host"):
            hosts.append(str(r["host"]))
    if not hosts:
        return "*"
    return ",".join(hosts) + (f" + {len(rules) - 3} more..." if more else "")


def _ingress_address(status: Obj) -> str:
    """ingressLoadBalancerStatusStringer: the sorted distinct IPs (else hostnames) of the load
    balancer's entries; never clipped, as the server prints its Tables wide (printers/storage)."""
    entries = ((status.get("loadBalancer") or {}).get("ingress") or []) if isinstance(status, dict) else []
    return ",".join(sorted({str(e.get("ip") or e.get("hostname")) for e in entries
                            if isinstance(e, dict) and (e.get("ip") or e.get("hostname"))}))


def _ingress_cells(o: Obj, now: float) -> list[Cell]:
    spec = _spec(o)
    rules = spec.get("rules")
    return [_name(o), spec.get("ingressClassName") or NONE, _ingress_hosts(rules if isinstance(rules, list) else []), _ingress_address(_status(o)),
            "80, 443" if spec.get("tls") else "80", _age(o, now)]


def _ingress_class_cells(o: Obj, now: float) -> list[Cell]:
    spec = _spec(o)
    params = spec.get("parameters")
    shown = NONE
    if isinstance(params, dict):
        group = params.get("apiGroup")
        shown = f"{params.get('kind') or ''}{'.' + str(group) if group is not None else ''}/{params.get('name') or ''}"
    return [_name(o), spec.get("controller") or "", shown, _age(o, now)]


def _network_policy_cells(o: Obj, now: float) -> list[Cell]:
    return [_name(o), format_label_selector(_spec(o).get("podSelector")), _age(o, now)]


_PRINTERS.update({
    ("networking.k8s.io", "Ingress"): (
        [NAME_COLUMN,
         column("Class", description="The name of the IngressClass resource that should be used for additional "
                                     "configuration"),
         column("Hosts", description="Hosts that incoming requests are matched against before the ingress rule"),
         column("Address", description="Address is a list containing ingress points for the load-balancer"),
         column("Ports", description="Ports of TLS configurations that open"), AGE_COLUMN], _ingress_cells),
    ("networking.k8s.io", "IngressClass"): (
        [NAME_COLUMN, column("Controller", description="Controller that is responsible for handling this class"),
         column("Parameters", description="A reference to a resource with additional parameters"), AGE_COLUMN],
        _ingress_class_cells),
    ("networking.k8s.io", "NetworkPolicy"): (
        [NAME_COLUMN,
         column("Pod-Selector", description="Selects the pods to which this NetworkPolicy object applies.  The array "
                "of ingress rules is applied to any pods selected by this field. Multiple network policies can select "
                "the same set of pods.  In this case, the ingress rules for each are combined additively. This field "
                "is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods "
                "in this namespace."), AGE_COLUMN], _network_policy_cells),
})

_PRINTERS.update({
    ("", "PersistentVolumeClaim"): ([NAME_COLUMN, column("Status"), column("Volume"), column("Capacity"),
                                     column("Access Modes"), column("StorageClass"),
                                     column("VolumeAttributesClass"), AGE_COLUMN,
                                     column("VolumeMode", priority=1)], _pvc_cells),
    ("", "PersistentVolume"): ([NAME_COLUMN, column("Capacity"), column("Access Modes"), column("Reclaim Policy"),
                                column("Status"), column("Claim"), column("StorageClass"),
                                column("VolumeAttributesClass"), column("Reason"), AGE_COLUMN,
                                column("VolumeMode", priority=1)], _pv_cells),
    ("storage.k8s.io", "StorageClass"): (
        [NAME_COLUMN, column("Provisioner"), column("ReclaimPolicy"), column("VolumeBindingMode"),
         column("AllowVolumeExpansion"), AGE_COLUMN],
        lambda o, now: [_name(o) + (" (default)" if (_meta(o).get("annotations") or {}).get(
            "storageclass.kubernetes.io/is-default-class") == "true" else ""), o.get("provisioner", ""),
            o.get("reclaimPolicy") or "Delete", o.get("volumeBindingMode") or "Immediate",
            bool(o.get("allowVolumeExpansion")), _age(o, now)]),
    ("apps", "StatefulSet"): ([NAME_COLUMN, column("Ready"), AGE_COLUMN, _CONTAINERS, _IMAGES], _sts_cells),
    ("apps", "DaemonSet"): ([NAME_COLUMN, column("Desired", "integer"), column("Current", "integer"),
                             column("Ready", "integer"), column("Up-to-date", "integer"),
                             column("Available", "integer"), column("Node Selector"), AGE_COLUMN, _CONTAINERS,
                             _IMAGES, _SELECTOR], _ds_cells),
    ("batch", "CronJob"): ([NAME_COLUMN, column("Schedule"), column("Timezone"), column("Suspend", "boolean"),
                            column("Active", "integer"), column("Last Schedule"), AGE_COLUMN, _CONTAINERS, _IMAGES,
                            _SELECTOR], _cj_cells),
    ("policy", "PodDisruptionBudget"): ([NAME_COLUMN, column("Min Available"), column("Max Unavailable"),
                                         column("Allowed Disruptions", "integer"), AGE_COLUMN], _pdb_cells),
    ("", "ReplicationController"): (
        REPLICASET_COLUMNS,
        lambda o, now: _replicaset_cells({**o, "spec": {**_spec(o), "selector": {"matchLabels": _spec(o).get("selector")
                                                                                 or {}}}}, now)),
})

def _format_labels(labels: Any) -> str:
    """labels.FormatLabels: ``k=v`` pairs sorted by key, comma-joined; ``<none>`` when empty."""
    if not isinstance(labels, dict) or not labels:
        return NONE
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def _pod_template_cells(o: Obj, now: float) -> list[Cell]:
    """printPodTemplate: the template's containers and images (layoutContainerCells: empty, not
    ``<none>``, when there are none) and its labels."""
    tpl: Obj = o["template"] if isinstance(o.get("template"), dict) else {}
    spec: Obj = tpl["spec"] if isinstance(tpl.get("spec"), dict) else {}
    ctrs = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    return [_name(o), ",".join(str(c.get("name", "")) for c in ctrs), ",".join(str(c.get("image", "")) for c in ctrs),
            _format_labels((tpl.get("metadata") or {}).get("labels"))]


def _component_status_cells(o: Obj, now: float) -> list[Cell]:
    """printComponentStatus: the Healthy condition as Healthy/Unhealthy (Unknown without one),
    its message and error."""
    for c in o.get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "Healthy":
            return [_name(o), "Healthy" if c.get("status") == "True" else "Unhealthy", c.get("message") or "",
                    c.get("error") or ""]
    return [_name(o), "Unknown", "", ""]


_PRINTERS.update({
    ("", "PodTemplate"): (
        [NAME_COLUMN, column("Containers", description="Names of each container in the template."),
         column("Images", description="Images referenced by each container in the template."),
         column("Pod Labels", description="The labels for the pod template.")], _pod_template_cells),
    ("", "ComponentStatus"): (
        [NAME_COLUMN, column("Status", description="Status of the component conditions"),
         column("Message", description="Message of the component conditions"),
         column("Error", description="Error of the component conditions")], _component_status_cells),
})

# storage.k8s.io/v1 CSI kinds. Where upstream describes a column by the field's API doc, pumice's
# description is a short one of its own (kubectl shows none of them).


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _bool_or(value: Any, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def _csi_driver_cells(o: Obj, now: float) -> list[Cell]:
    """printCSIDriver: attachRequired (true when unset), podInfoOnMount, storageCapacity,
    the token audiences (``<unset>`` without tokenRequests), requiresRepublish, the modes."""
    spec = _spec(o)
    tokens = spec.get("tokenRequests")
    audiences = ",".join(str(t.get("audience") or "") for t in tokens if isinstance(t, dict)) \
        if isinstance(tokens, list) else "<unset>"
    modes = ",".join(str(m) for m in spec.get("volumeLifecycleModes") or []) or NONE
    return [_name(o), _bool_or(spec.get("attachRequired"), True), _bool_or(spec.get("podInfoOnMount"), False),
            _bool_or(spec.get("storageCapacity"), False), audiences, _bool_or(spec.get("requiresRepublish"), False),
            modes, _age(o, now)]


def _volume_attachment_cells(o: Obj, now: float) -> list[Cell]:
    spec = _spec(o)
    source = _dict(spec.get("source"))
    return [_name(o), spec.get("attacher") or "", source.get("persistentVolumeName") or "", spec.get("nodeName") or "",
            bool(_status(o).get("attached")), _age(o, now)]


_PRINTERS.update({
    ("storage.k8s.io", "CSIDriver"): (
        [NAME_COLUMN, column("AttachRequired", "boolean", description="The driver needs an attach operation"),
         column("PodInfoOnMount", "boolean", description="The driver gets pod information on mount"),
         column("StorageCapacity", "boolean", description="The driver publishes CSIStorageCapacity objects"),
         column("TokenRequests", description="Audiences of the service account tokens the driver gets"),
         column("RequiresRepublish", "boolean", description="NodePublishVolume is called periodically"),
         column("Modes", description="The volume lifecycle modes the driver supports"), AGE_COLUMN],
        _csi_driver_cells),
    ("storage.k8s.io", "CSINode"): (
        [NAME_COLUMN, column("Drivers", "integer",
                             description="Drivers indicates the number of CSI drivers registered on the node"),
         AGE_COLUMN],
        lambda o, now: [_name(o), len([d for d in _spec(o).get("drivers") or [] if isinstance(d, dict)]), _age(o, now)]),
    ("storage.k8s.io", "VolumeAttachment"): (
        [NAME_COLUMN, column("Attacher", format_="name", description="The volume driver that handles the request"),
         column("PV", description="The persistent volume to attach"),
         column("Node", description="The node the volume is attached to"),
         column("Attached", "boolean", description="The volume is attached"), AGE_COLUMN],
        _volume_attachment_cells),
    # kube-apiserver gives CSIStorageCapacity the default table (its storage has no printer)
    ("storage.k8s.io", "CSIStorageCapacity"): (
        [NAME_COLUMN, column("Created At", "date", description=AGE_DESCRIPTION)],
        lambda o, now: [_name(o), _meta(o).get("creationTimestamp", "")]),
})

def _hpa_metrics(specs: list[Obj], statuses: list[Obj]) -> str:
    """formatHPAMetrics: each metric as ``current/target`` (``<unknown>`` without a status; a
    resource utilization ``cpu: 50%/80%``, its target ``<auto>`` when unset), two at most then
    `` + N more...``; ``<none>`` without metrics. Quantities are shown as given."""
    if not specs:
        return NONE
    shown: list[str] = []
    for i, spec in enumerate(specs):
        st = statuses[i] if i < len(statuses) else {}
        mtype = spec.get("type")
        key = {"External": "external", "Pods": "pods", "Object": "object", "Resource": "resource",
               "ContainerResource": "containerResource"}.get(str(mtype))
        if key is None:
            continue
        src = _dict(spec.get(key))
        target = _dict(src.get("target"))
        cur = _dict(_dict(st.get(key)).get("current")) or None
        prefix = f"{src.get('name', '')}: " if key in ("resource", "containerResource") else ""
        if key == "pods":
            shown.append(f"{cur.get('averageValue') if cur else '<unknown>'}/{target.get('averageValue')}")
        elif key in ("external", "object"):
            field = "averageValue" if target.get("averageValue") is not None else "value"
            value = cur.get(field) if cur and cur.get(field) is not None else "<unknown>"
            shown.append(f"{value}/{target.get(field)}" + (" (avg)" if field == "averageValue" else ""))
        elif target.get("averageValue") is not None:
            value = cur.get("averageValue") if cur else "<unknown>"
            shown.append(f"{prefix}{value}/{target['averageValue']}")
        else:
            util = cur.get("averageUtilization") if cur else None
            goal = target.get("averageUtilization")
            shown.append(f"{prefix}{'<unknown>' if util is None else f'{util}%'}/{'<auto>' if goal is None else f'{goal}%'}")
    if len(shown) > 2:
        return ", ".join(shown[:2]) + f" + {len(shown) - 2} more..."
    return ", ".join(shown)


def _hpa_cells(o: Obj, now: float) -> list[Cell]:
    """printHorizontalPodAutoscaler (autoscaling/v2 objects; a v1 one shows its cpu target)."""
    spec, st = _spec(o), _status(o)
    ref = _dict(spec.get("scaleTargetRef"))
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    current = [m for m in st.get("currentMetrics") or [] if isinstance(m, dict)]
    if "targetCPUUtilizationPercentage" in spec or (not metrics and str(o.get("apiVersion")) == "autoscaling/v1"):
        util = st.get("currentCPUUtilizationPercentage")
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "averageUtilization": spec.get("targetCPUUtilizationPercentage")}}}]
        current = [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": util}}}] \
            if util is not None else []
    lo = spec.get("minReplicas")
    return [_name(o), f"{ref.get('kind', '')}/{ref.get('name', '')}", _hpa_metrics(metrics, current),
            "<unset>" if lo is None else str(lo), int(spec.get("maxReplicas") or 0), int(st.get("currentReplicas") or 0),
            _age(o, now)]


_PRINTERS.update({
    ("autoscaling", "HorizontalPodAutoscaler"): (
        [NAME_COLUMN, column("Reference", description="The target resource to scale"),
         column("Targets", description="The metrics and their targets (current/target)"),
         column("MinPods", description="The lower limit for the number of replicas"),
         column("MaxPods", description="The upper limit for the number of replicas"),
         column("Replicas", description="The current number of replicas"), AGE_COLUMN], _hpa_cells),
})

# --- JSONPath (printer columns) -------------------------------------------------------------------

_FILTER = re.compile(r"^\s*@((?:\.(?:\\.|[^.\s=!<>])+)*)\s*(?:(==|!=|<=|>=|<|>)\s*(.+?))?\s*$")
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b,
}


def _closing(p: str, i: int) -> int:
    """Index of the ``]`` that closes the bracket opened at ``p[i]`` (quotes and parentheses skipped)."""
    quote, depth = "", 0
    for j in range(i + 1, len(p)):
        ch = p[j]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "]" and depth == 0:
            return j
    raise ValueError(f"unclosed [ in {p!r}")


def _literal(text: str) -> Any:
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    if t in ("true", "false"):
        return t == "true"
    try:
        return float(t)
    except ValueError:
        raise ValueError(f"unrecognized filter value {t!r}") from None


def _same_kind(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return True
    return type(a) is type(b)


def _children(node: Any) -> list[Any]:
    """A list's elements or a map's values (``[]`` for a scalar)."""
    return list(node) if isinstance(node, list) else list(node.values()) if isinstance(node, dict) else []


def _descendants(node: Any) -> list[Any]:
    """``node`` and every value under it, depth first (maps in key order, as client-go sorts them)."""
    out = [node]
    if isinstance(node, dict):
        for k in sorted(node):
            out += _descendants(node[k])
    elif isinstance(node, list):
        for v in node:
            out += _descendants(v)
    return out


def _step(nodes: list[Any], p: str, i: int) -> tuple[list[Any], int]:
    """Apply the path segment at ``p[i]`` to every node; the results and the next index."""
    if p.startswith("..", i):
        nodes = [d for n in nodes for d in _descendants(n)]
        i += 1  # the second '.' starts a field segment, or a bracket follows
        if i + 1 < len(p) and p[i + 1] == "[":
            i += 1
    if p[i] == ".":
        j = i + 1
        while j < len(p) and p[j] not in ".[":
            j += 2 if p[j] == "\\" else 1
        key = p[i + 1:j].replace("\\.", ".")
        if key == "*":
            return [v for n in nodes for v in _children(n)], j
        if not key:
            return nodes, j
        return [n[key] for n in nodes if isinstance(n, dict) and key in n], j
    if p[i] != "[":
        raise ValueError(f"unexpected {p[i]!r} at {i} in {p!r}")
    j = _closing(p, i)
    inner = p[i + 1:j].strip()
    out: list[Any] = []
    if inner.startswith("?(") and inner.endswith(")"):
        m = _FILTER.match(inner[2:-1])
        if m is None:
            raise ValueError(f"unrecognized filter {inner!r}")
        sub, op, lit = m.group(1), m.group(2), m.group(3)
        want = _literal(lit) if op else None
        for n in nodes:
            for el in _children(n):
                found = jsonpath_find(el, sub) if sub else [el]
                if op is None:
                    keep = bool(found)
                else:
                    keep = any(_same_kind(v, want) and _OPS[op](v, want) for v in found)
                if keep:
                    out.append(el)
        return out, j + 1
    for n in nodes:
        if inner == "*":
            out += _children(n)
        elif inner[:1] in "'\"":
            out += [n[k] for k in (x.strip()[1:-1] for x in inner.split(",")) if isinstance(n, dict) and k in n]
        elif isinstance(n, list):
            if ":" in inner:
                parts = [int(x) if x.strip() else None for x in inner.split(":")]
                out += n[slice(*parts)]
            else:
                for x in inner.split(","):
                    k = int(x)
                    if -len(n) <= k < len(n):
                        out.append(n[k])
    return out, j + 1


def jsonpath_find(obj: Any, path: str) -> list[Any]:
    """Every value a Kubernetes JSONPath selects in ``obj``, in order; missing keys select nothing.

    Supports what CRD printer columns use: fields (``.a.b``, ``\\.`` escapes a dot), ``{...}``
    and ``$``, indices (negative too), slices ``[a:b]``, ``[*]`` and ``.*``, unions ``[0,1]`` and
    ``['a','b']``, recursive descent ``..name``, and filters ``[?(@.type=="Ready")]`` (``==``,
    ``!=``, ``<``, ``>``, ``<=``, ``>=`` against a string, number or boolean; ``[?(@.x)]`` for
    presence).

    Raises:
        ValueError: the path does not parse.

    Mirrors: client-go util/jsonpath (the evaluation apiextensions-apiserver's table convertor runs
    with missing keys allowed).
    """
    p = path.strip()
    if p.startswith("{") and p.endswith("}"):
        p = p[1:-1].strip()
    p = p[1:] if p.startswith("$") else p
    nodes, i = [obj], 0
    while i < len(p):
        nodes, i = _step(nodes, p, i)
    return nodes


def jsonpath_get(obj: Any, path: str) -> tuple[bool, Any]:
    """The first value :func:`jsonpath_find` selects, as a printer column cell takes it;
    ``(found, value)``, ``(False, None)`` when nothing is selected or the path does not parse.

    Mirrors: apiextensions-apiserver pkg/registry/customresource/tableconvertor (results[0][0]).
    """
    try:
        found = jsonpath_find(obj, path)
    except (ValueError, TypeError):
        return False, None
    return (True, found[0]) if found else (False, None)


def _printer_cell(col: Obj, obj: Obj, now: float) -> Cell:
    found, value = jsonpath_get(obj, str(col.get("jsonPath", "")))
    if not found or value is None:
        return None
    ctype = col.get("type", "string")
    # typed columns as apiextensions' cellForJSONValue: a value of another JSON type is no cell
    # (kubectl prints <none>); an integer column truncates a number, a number column widens an integer
    if ctype == "date":
        if not isinstance(value, str):
            return None
        return age(value, now) if parse_time(value) is not None else "<invalid>"
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if ctype == "integer":
        return int(value) if number else None
    if ctype == "number":
        return float(value) if number else None
    if ctype == "boolean":
        return value if isinstance(value, bool) else None
    if ctype != "string":
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value).lower() if isinstance(value, bool) else str(value)


def _printer_columns(printer_columns: list[Obj]) -> list[Obj]:
    cols = [NAME_COLUMN]
    for col in printer_columns:
        ctype = col.get("type", "string")
        cols.append({
            "name": col.get("name", ""),
            # dates are rendered as ages, so the column type becomes string, as upstream
            "type": "string" if ctype == "date" else ctype,
            "format": col.get("format", ""),
            "description": col.get("description") or
            f"Custom resource definition column (in JSONPath format): {col.get('jsonPath', '')}",
            "priority": int(col.get("priority", 0) or 0),
        })
    return cols


# --- entry point ----------------------------------------------------------------------------------


def _default_cells(o: Obj, now: float) -> list[Cell]:
    return [_name(o), _age(o, now)]


def partial_object_metadata(obj: Obj) -> Obj:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": _meta(obj)}


def to_table(rk: ResourceKind, objs: list[Obj], now: float, printer_columns: list[Obj] | None = None) -> Obj:
    """Render objects as a ``meta.k8s.io/v1`` Table.

    Args:
        rk: the kind listed.
        objs: wire-form objects of that kind, in the order to show.
        now: current time, epoch seconds (ages are computed against it; pass the Clock's time).
        printer_columns: a CRD version's ``additionalPrinterColumns`` (custom kinds); when given
            they win over built-in columns; custom kinds without them get Name and Age.

    Returns:
        ``{"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {}, "columnDefinitions":
        [...], "rows": [{"cells": [...], "object": PartialObjectMetadata}]}``; the caller sets
        ``metadata.resourceVersion`` / ``continue``.
    """
    cells: Callable[[Obj, float], list[Cell]]
    if printer_columns:
        cols = _printer_columns(printer_columns)
        specs = list(printer_columns)

        def printer_cells(o: Obj, t: float) -> list[Cell]:
            return [_name(o), *(_printer_cell(c, o, t) for c in specs)]

        cells = printer_cells
    else:
        cols, cells = _PRINTERS.get((rk.group, rk.kind), (DEFAULT_COLUMNS, _default_cells))

    rows = [{"cells": cells(o, now), "object": partial_object_metadata(o)} for o in objs]
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
            "columnDefinitions": [dict(c) for c in cols], "rows": rows}
