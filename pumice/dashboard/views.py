"""What the pages show, computed from cached wire objects: pure functions, no I/O.

Column names and rules follow the Headlamp Volcano plugin and the KubeRay dashboard (see
``reference/ui.md``): gang progress is (running + succeeded) / minMember; Queue counts are the
PodGroups of the queue by phase; the Scheduling issues list takes Volcano Jobs in Failed, Aborted,
Terminated or Pending, PodGroups in Pending, Inqueue or Unknown, Queues not Open, and (beyond the
plugin) RayJobs waiting or failed.

Resources are shown in the units kubectl prints: cpu as cores or ``m``, memory as ``Gi``/``Mi``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pumice._util.clock import parse_rfc3339
from pumice.api import Obj
from pumice.api.meta import get_condition
from pumice.api.quantity import (
    BINARY_SI,
    INT64_MAX,
    QuantityError,
    format_bytes,
    format_millis,
    milli_value_int64,
    resource_format,
    value_int64,
)
from pumice.api.volcano import constants as vc
from pumice.controllers.volcano.admission.queues import validate_queue_state
from pumice.controllers.volcano.keys import DEFAULT_MAX_RETRY
from pumice.controllers.volcano.queue import count_podgroups

JOB_SUCCESS = {"Running", "Completing", "Completed"}
JOB_WARNING = {"Pending", "Restarting", "Aborting", "Terminating"}
JOB_ERROR = {"Failed", "Aborted", "Terminated"}
JOB_TERMINAL = {"Completed", "Failed", "Terminated", "Aborted"}
NO_SUSPEND = {"Aborting", "Aborted", "Terminating", "Terminated", "Completing", "Completed", "Failed"}
PG_WAITING = ("Pending", "Inqueue", "Unknown")
RAYJOB_WAITING = {"", "New", "Initializing", "Waiting", "Retrying"}
RAYJOB_ERROR = {"Failed", "ValidationFailed"}


def md(o: Mapping[str, Any]) -> Obj:
    return o.get("metadata") or {}


def spec(o: Mapping[str, Any]) -> Obj:
    return o.get("spec") or {}


def status(o: Mapping[str, Any]) -> Obj:
    return o.get("status") or {}


def ts(value: str | None) -> float | None:
    """Epoch seconds of an RFC 3339 timestamp, None when absent or malformed."""
    if not value:
        return None
    try:
        return parse_rfc3339(value)
    except ValueError:
        return None


def age(created: str | None, now: float) -> str:
    """kubectl's short age: ``45s``, ``12m``, ``3h``, ``2d`` ("-" without a timestamp)."""
    t = ts(created)
    if t is None:
        return "-"
    s = max(0, int(now - t))
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def tone(kind: str, value: str) -> str:
    """Status colour class ``ok``/``warn``/``err``/``""`` (Headlamp's status tables)."""
    if kind == "Job":
        return "ok" if value in JOB_SUCCESS else "err" if value in JOB_ERROR else "warn" if value else ""
    if kind == "Queue":
        return {"Open": "ok", "Closing": "warn", "Closed": "err"}.get(value, "warn")
    if kind == "PodGroup":
        return "ok" if value in ("Running", "Completed") else "warn"
    if kind == "RayJob":
        if value in ("Complete", "Running", "SUCCEEDED", "RUNNING"):
            return "ok"
        return "err" if value in RAYJOB_ERROR or value in ("FAILED", "STOPPED") else "warn"
    if kind in ("RayCluster", "RayService"):
        return "ok" if value in ("ready", "Running") else "warn"
    if kind == "Pod":
        return "ok" if value in ("Running", "Succeeded") else "err" if value == "Failed" else "warn"
    return ""


# --------------------------------------------------------------------------------- resources

def res_value(name: str, q: Any) -> float:
    """A quantity as a number in display units' base: milli-cores for cpu, bytes for memory,
    units otherwise (0 for a malformed quantity). Amounts beyond int64 saturate as
    Quantity.MilliValue()/Value() do (``1e400`` cpu: 9223372036854775807 milli-cores)."""
    try:
        m = milli_value_int64(q)
        if name == "cpu":
            return float(m)
        return m / 1000.0 if abs(m) < INT64_MAX else float(value_int64(q))
    except (QuantityError, ValueError, TypeError):
        return 0.0


def fmt_res(name: str, v: float | None) -> str:
    """A :func:`res_value` amount as Quantity.String() writes it (``"-"`` for None): cpu from
    milli-cores, byte resources from bytes in binary SI, other resources from units rounded to
    the milli-unit (``2``, ``500m``)."""
    if v is None:
        return "-"
    if name == "cpu":
        return format_millis(int(v))
    if resource_format(name) == BINARY_SI:
        return format_bytes(int(v))
    return format_millis(round(v * 1000))


def res_map(m: Mapping[str, Any] | None) -> dict[str, float]:
    return {k: res_value(k, v) for k, v in (m or {}).items()}


def pod_requests(pod: Obj) -> dict[str, float]:
    """Sum of container requests of a Pod (init containers as the max, as the scheduler does)."""
    total: dict[str, float] = {}
    for c in spec(pod).get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = total.get(k, 0.0) + res_value(k, v)
    for c in spec(pod).get("initContainers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = max(total.get(k, 0.0), res_value(k, v))
    total["pods"] = total.get("pods", 0.0) + 1
    return total


def pod_is_terminal(pod: Obj) -> bool:
    return status(pod).get("phase") in ("Succeeded", "Failed")


@dataclass
class Bar:
    """A usage bar in the KueueViz style: ``used`` within ``deserved`` then above it, scaled to
    ``ceiling`` (capability when set, else max(deserved, used)); ``marks`` are (label, value)."""

    resource: str
    used: float
    deserved: float | None
    capability: float | None
    guarantee: float | None

    @property
    def ceiling(self) -> float:
        if self.capability:
            return max(self.capability, self.used)
        return max(self.deserved or 0.0, self.used, self.guarantee or 0.0) or 1.0

    def pct(self, v: float | None) -> float:
        return 0.0 if not v else min(100.0, 100.0 * v / self.ceiling)

    @property
    def within(self) -> float:
        return self.pct(min(self.used, self.deserved) if self.deserved else self.used)

    @property
    def above(self) -> float:
        return self.pct(self.used - self.deserved) if self.deserved and self.used > self.deserved else 0.0

    def text(self) -> str:
        parts = [f"{fmt_res(self.resource, self.used)} allocated"]
        if self.deserved is not None:
            parts.append(f"deserved {fmt_res(self.resource, self.deserved)}")
        if self.guarantee is not None:
            parts.append(f"guarantee {fmt_res(self.resource, self.guarantee)}")
        parts.append(f"capability {fmt_res(self.resource, self.capability)}" if self.capability is not None
                     else "no capability")
        return ", ".join(parts)


def queue_bars(queue: Obj, deserved_override: Mapping[str, float] | None = None) -> list[Bar]:
    """One bar per resource named in capability, deserved, guarantee or allocated (cpu and
    memory first). ``deserved_override``: the scheduler's computed deserved (from its
    ``volcano_queue_deserved_*`` metrics) when spec.deserved is not set."""
    cap = res_map(spec(queue).get("capability"))
    des = res_map(spec(queue).get("deserved")) or dict(deserved_override or {})
    gua = res_map((spec(queue).get("guarantee") or {}).get("resource"))
    alloc = res_map(status(queue).get("allocated"))
    names = sorted(set(cap) | set(des) | set(gua) | set(alloc), key=lambda n: (n not in ("cpu", "memory"), n))
    if not names:
        names = ["cpu", "memory"]
    return [Bar(n, alloc.get(n, 0.0), des.get(n), cap.get(n), gua.get(n)) for n in names if n != "pods"]


# --------------------------------------------------------------------------------- Volcano

def gang(pg: Obj | None) -> tuple[int, int, int, str]:
    """Gang progress of a PodGroup: (ready, minMember, percent, label) with ready = running +
    succeeded; the label is "Gang requirement met" or "Gang incomplete (r/m ready)"."""
    if pg is None:
        return 0, 0, 0, "-"
    st = status(pg)
    ready = int(st.get("running") or 0) + int(st.get("succeeded") or 0)
    mm = int(spec(pg).get("minMember") or 0)
    if mm <= 0:
        return ready, mm, 0, "-"
    pct = min(100, (100 * ready) // mm)
    label = "Gang requirement met" if ready >= mm else f"Gang incomplete ({ready}/{mm} ready)"
    return ready, mm, pct, label


def job_phase(job: Obj) -> str:
    return str((status(job).get("state") or {}).get("phase") or "Pending")


def job_replicas(job: Obj) -> int:
    return sum(int(t.get("replicas") or 0) for t in spec(job).get("tasks") or [])


def job_podgroup(job: Obj, podgroups: Iterable[Obj]) -> Obj | None:
    """The PodGroup a Volcano Job owns (controller ownerReference to the job's uid)."""
    uid = md(job).get("uid")
    for pg in podgroups:
        for ref in md(pg).get("ownerReferences") or []:
            if ref.get("uid") == uid:
                return pg
    return None


def can_suspend(phase: str) -> bool:
    return phase not in NO_SUSPEND


def can_resume(phase: str) -> bool:
    return phase == "Aborted"


#: RayJob jobDeploymentStatus values in which the page offers Suspend (the job has not ended)
RAYJOB_SUSPENDABLE = ("New", "Initializing", "Waiting", "Running", "Retrying")


def rayjob_action_refusal(rj: Obj, action: str) -> str | None:
    """Why the RayJob page does not offer ``action`` (``suspend`` or ``resume``) for ``rj``, or None
    when it does: the POST handler refuses what the page would not send (trial 11 F-4: a suspend
    posted for a Complete RayJob turned it ValidationFailed for good)."""
    suspended = bool(spec(rj).get("suspend"))
    if action == "resume":
        return None if suspended else "it is not suspended"
    ds = status(rj).get("jobDeploymentStatus") or "New"
    if suspended:
        return "it is suspended already"
    if ds not in RAYJOB_SUSPENDABLE:
        return f"its jobDeploymentStatus is {ds}"
    if not spec(rj).get("shutdownAfterJobFinishes"):
        return "a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended"
    return None


def vcjob_action_refusal(phase: str, action: str) -> str | None:
    """Why the Volcano Job page does not offer ``action`` in ``phase``, or None when it does."""
    if action == "suspend" and not can_suspend(phase):
        return f"the job is {phase}"
    if action == "resume" and not can_resume(phase):
        return f"the job is {phase or 'Pending'}, not Aborted"
    return None


def queue_updates_refused(q: Obj) -> bool:
    """True when Volcano's queue webhook refuses every update of Queue ``q`` (its page then
    disables the weight form and says why): a ``status.state`` that is set and neither Open nor
    Closed (Closing, Unknown). A queue with no state yet (not synced) takes updates.

    Mirrors: volcano pkg/webhooks/admission/queues/validate validateStateOfQueue, through
    :func:`pumice.controllers.volcano.admission.queues.validate_queue_state`."""
    return bool(validate_queue_state(str(status(q).get("state") or "")))


def priority_of(obj: Obj, priority_classes: Mapping[str, int]) -> int:
    sp = spec(obj)
    if sp.get("priority") is not None:
        return int(sp["priority"])
    return int(priority_classes.get(str(sp.get("priorityClassName") or ""), 0))


def queue_order(podgroups: Iterable[Obj], priority_classes: Mapping[str, int]) -> list[Obj]:
    """A queue's waiting PodGroups (Pending, Inqueue) in the order the scheduler takes them:
    higher priority first, then older, then name (the priority plugin's job order with the
    session's creation-time/UID tie-break).

    Deviates: plugins that reorder jobs by share (drf's job order) are not applied here."""
    waiting = [pg for pg in podgroups if (status(pg).get("phase") or "Pending") in ("Pending", "Inqueue")]
    return sorted(waiting, key=lambda pg: (-priority_of(pg, priority_classes),
                                           md(pg).get("creationTimestamp") or "", md(pg).get("uid") or "",
                                           md(pg).get("name") or ""))


def queue_counts(podgroups: list[Obj]) -> dict[str, int]:
    """PodGroup counts by phase: inqueue, pending, running, unknown, completed."""
    return count_podgroups(podgroups)


def last_condition(obj: Obj) -> Obj | None:
    conds = list(status(obj).get("conditions") or [])
    if not conds:
        return None
    return max(conds, key=lambda c: c.get("lastTransitionTime") or "")


@dataclass
class Issue:
    """One row of the Scheduling issues list."""

    type: str
    name: str
    namespace: str
    queue: str
    status: str
    details: str
    href: str
    tone: str = "warn"


def _retries_used_up(job: Obj) -> str:
    """``retryCount 2 reached maxRetry 2`` for a Failed vcjob that restarted until its retries ran
    out (``maxRetry`` defaults as the job webhook does), else "". Its state reason is then the last
    RestartJob's (``ExecuteAction``), which reads as if it were still restarting; upstream
    records nothing better (volcano pkg/controllers/job/state/restarting.go)."""
    retries = int(status(job).get("retryCount") or 0)
    max_retry = spec(job).get("maxRetry")
    max_retry = DEFAULT_MAX_RETRY if max_retry is None else int(max_retry)
    return f"retryCount {retries} reached maxRetry {max_retry}" if retries and retries >= max_retry else ""


def scheduling_issues(jobs: Iterable[Obj], podgroups: Iterable[Obj], queues: Iterable[Obj],
                      rayjobs: Iterable[Obj] = ()) -> list[Issue]:
    """What is pending or broken and why (Headlamp's Scheduling Issues rows, plus RayJobs)."""
    out: list[Issue] = []
    for j in jobs:
        ph = job_phase(j)
        if ph in ("Failed", "Aborted", "Terminated", "Pending"):
            state = status(j).get("state") or {}
            det = _retries_used_up(j) if ph == "Failed" else ""
            det = det or ": ".join(x for x in (state.get("reason"), state.get("message")) if x)
            out.append(Issue("Job", md(j).get("name", ""), md(j).get("namespace", ""),
                             spec(j).get("queue") or vc.DEFAULT_QUEUE, ph, det,
                             f"/vcjobs/{md(j).get('namespace')}/{md(j).get('name')}", tone("Job", ph)))
    for pg in podgroups:
        ph = status(pg).get("phase") or "Pending"
        if ph in PG_WAITING:
            c = last_condition(pg)
            det = ": ".join(x for x in ((c or {}).get("reason"), (c or {}).get("message")) if x)
            out.append(Issue("PodGroup", md(pg).get("name", ""), md(pg).get("namespace", ""),
                             spec(pg).get("queue") or vc.DEFAULT_QUEUE, ph, det,
                             f"/podgroups/{md(pg).get('namespace')}/{md(pg).get('name')}", "warn"))
    for q in queues:
        st = status(q).get("state") or "Unknown"
        if st != "Open":
            out.append(Issue("Queue", md(q).get("name", ""), "", md(q).get("name", ""), st,
                             "Queue is closed" if st == "Closed" else f"Queue is {st}",
                             f"/queues/{md(q).get('name')}", tone("Queue", st)))
    for rj in rayjobs:
        ds = status(rj).get("jobDeploymentStatus") or "New"
        if ds in RAYJOB_WAITING or ds in RAYJOB_ERROR:
            labels = md(rj).get("labels") or {}
            out.append(Issue("RayJob", md(rj).get("name", ""), md(rj).get("namespace", ""),
                             labels.get(vc.QUEUE_NAME_KEY, "-"), ds, str(status(rj).get("message") or ""),
                             f"/rayjobs/{md(rj).get('namespace')}/{md(rj).get('name')}",
                             "err" if ds in RAYJOB_ERROR else "warn"))
    return out


# --------------------------------------------------------------------------------- nodes, pods

@dataclass
class NodeRow:
    name: str
    ready: str
    pods: int
    resources: list[tuple[str, float, float]] = field(default_factory=list)
    """(resource, allocated, allocatable)"""


def node_rows(nodes: Iterable[Obj], pods_by_node: Mapping[str, list[Obj]]) -> list[NodeRow]:
    """Allocatable vs allocated (requests of the non-terminal Pods bound there) per Node."""
    rows = []
    for n in sorted(nodes, key=lambda n: md(n).get("name", "")):
        name = md(n).get("name", "")
        pods = [p for p in pods_by_node.get(name, []) if not pod_is_terminal(p)]
        used: dict[str, float] = {}
        for p in pods:
            for r, q in pod_requests(p).items():
                used[r] = used.get(r, 0.0) + q
        alloc = res_map(status(n).get("allocatable"))
        ready = (get_condition(n, "Ready") or {"status": "Unknown"}).get("status", "")
        names = sorted(alloc, key=lambda r: (r not in ("cpu", "memory", "pods"), r))
        rows.append(NodeRow(name, "Ready" if ready == "True" else "NotReady", len(pods),
                            [(r, used.get(r, 0.0), alloc[r]) for r in names]))
    return rows


def pod_status(pod: Obj) -> str:
    """kubectl's STATUS column: a waiting/terminated container reason, else the phase."""
    if md(pod).get("deletionTimestamp"):
        return "Terminating"
    for cs in status(pod).get("containerStatuses") or []:
        state = cs.get("state") or {}
        for key in ("waiting", "terminated"):
            reason = (state.get(key) or {}).get("reason")
            if reason and reason not in ("Completed",):
                return str(reason)
    return str(status(pod).get("phase") or "Pending")


def pending_reason(pod: Obj) -> str:
    """The message of the Pod's PodScheduled=False condition (KueueViz's "Pending Reason")."""
    c = get_condition(pod, "PodScheduled")
    if c is not None and c.get("status") == "False":
        return str(c.get("message") or c.get("reason") or "")
    return ""


def utilisation(nodes: Iterable[Obj], pods: Iterable[Obj], resource: str = "cpu") -> tuple[float, float]:
    """(allocated, allocatable) of ``resource`` over all Nodes (bound non-terminal Pods)."""
    allocatable = sum(res_map(status(n).get("allocatable")).get(resource, 0.0) for n in nodes)
    used = sum(pod_requests(p).get(resource, 0.0) for p in pods
               if spec(p).get("nodeName") and not pod_is_terminal(p))
    return used, allocatable


def queueing_delay(pg: Obj) -> float | None:
    """Seconds from a PodGroup's creation to its ``Scheduled`` condition (None while waiting)."""
    created = ts(md(pg).get("creationTimestamp"))
    c = get_condition(pg, "Scheduled")
    if c is not None and c.get("status") == "True":
        t = ts(c.get("lastTransitionTime"))
        if created is not None and t is not None:
            return max(0.0, t - created)
    return None


# --------------------------------------------------------------------------------- Ray

def ray_worker_groups(rc: Obj) -> list[dict[str, Any]]:
    """Worker groups of a RayCluster: name, replicas (desired), min, max, ready (from
    ``status.readyWorkerReplicas`` split per group by the Pods' ``ray.io/group`` label)."""
    out = []
    for g in spec(rc).get("workerGroupSpecs") or []:
        out.append({"name": g.get("groupName", ""), "replicas": int(g.get("replicas") or 0),
                    "min": int(g.get("minReplicas") or 0), "max": int(g.get("maxReplicas") or 0),
                    "suspend": bool(g.get("suspend"))})
    return out


def ray_dashboard_url(rc: Obj) -> str | None:
    """``http://<head Pod IP>:<dashboard port>`` of a RayCluster once its head has an IP."""
    head = status(rc).get("head") or {}
    ip = head.get("podIP") or head.get("serviceIP")
    if not ip:
        return None
    port = 8265
    for c in ((spec(rc).get("headGroupSpec") or {}).get("template") or {}).get("spec", {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == "dashboard" and p.get("containerPort"):
                port = int(p["containerPort"])
    return f"http://{ip}:{port}"


def serve_applications(rs: Obj) -> list[dict[str, Any]]:
    """Serve applications of a RayService's active (and pending) cluster with their status and
    deployments: [{cluster, name, status, message, deployments: [(name, status, message)]}]."""
    out = []
    for which in ("activeServiceStatus", "pendingServiceStatus"):
        s = status(rs).get(which) or {}
        for app, a in sorted((s.get("applicationStatuses") or {}).items()):
            deps = [(d, (v or {}).get("status", ""), (v or {}).get("message", ""))
                    for d, v in sorted((a.get("serveDeploymentStatuses") or {}).items())]
            out.append({"cluster": s.get("rayClusterName", which), "which": which, "name": app,
                        "status": a.get("status", ""), "message": a.get("message", ""), "deployments": deps})
    return out


# --------------------------------------------------------------------------------- list rows
# Lists render up to thousands of rows: each row is computed here once, as plain attributes, so the
# template does no lookups or macro calls per cell.

@dataclass(slots=True)
class JobRow:
    name: str
    namespace: str
    phase: str
    tone: str
    ready: int
    min_member: int
    gang_pct: int
    gang_label: str
    queue: str
    running: int
    min_available: str
    pending: int
    succeeded: int
    failed: int
    retries: int
    replicas: int
    tasks: int
    age: str


def job_rows(jobs: Iterable[Obj], podgroups: Iterable[Obj], now: float) -> list[JobRow]:
    """Rows of the Volcano Jobs list (Headlamp's columns plus the gang progress of its PodGroup)."""
    pg_by_owner: dict[str, Obj] = {}
    for pg in podgroups:
        for ref in md(pg).get("ownerReferences") or []:
            pg_by_owner[str(ref.get("uid"))] = pg
    out = []
    for j in jobs:
        m, sp, st = md(j), spec(j), status(j)
        ph = job_phase(j)
        ready, mm, pct, label = gang(pg_by_owner.get(str(m.get("uid"))))
        out.append(JobRow(m.get("name", ""), m.get("namespace", ""), ph, tone("Job", ph), ready, mm, pct, label,
                          str(sp.get("queue") or vc.DEFAULT_QUEUE), int(st.get("running") or 0),
                          str(sp.get("minAvailable") or "-"), int(st.get("pending") or 0),
                          int(st.get("succeeded") or 0), int(st.get("failed") or 0), int(st.get("retryCount") or 0),
                          job_replicas(j), len(sp.get("tasks") or []), age(m.get("creationTimestamp"), now)))
    return out


@dataclass(slots=True)
class PodGroupRow:
    name: str
    namespace: str
    phase: str
    tone: str
    ready: int
    min_member: int
    gang_pct: int
    gang_label: str
    running: int
    queue: str
    age: str


def podgroup_rows(podgroups: Iterable[Obj], now: float) -> list[PodGroupRow]:
    out = []
    for pg in podgroups:
        m = md(pg)
        ph = str(status(pg).get("phase") or "Pending")
        ready, mm, pct, label = gang(pg)
        out.append(PodGroupRow(m.get("name", ""), m.get("namespace", ""), ph, tone("PodGroup", ph), ready, mm, pct,
                               label, int(status(pg).get("running") or 0),
                               str(spec(pg).get("queue") or vc.DEFAULT_QUEUE), age(m.get("creationTimestamp"), now)))
    return out


@dataclass(slots=True)
class PodRow:
    name: str
    namespace: str
    status: str
    tone: str
    restarts: int
    node: str
    pending_reason: str
    age: str


def pod_rows(pods: Iterable[Obj], now: float) -> list[PodRow]:
    out = []
    for p in pods:
        m = md(p)
        s = pod_status(p)
        restarts = sum(int(cs.get("restartCount") or 0) for cs in status(p).get("containerStatuses") or [])
        out.append(PodRow(m.get("name", ""), m.get("namespace", ""), s, tone("Pod", s), restarts,
                          str(spec(p).get("nodeName") or "-"), pending_reason(p), age(m.get("creationTimestamp"), now)))
    return out
