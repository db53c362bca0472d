"""``pumice explain`` analysis: which gate holds a PodGroup, and what would let it run.

It runs the scheduler's own session on a snapshot of the current objects (the scheduler's
:func:`build_snapshot`, ``open_session`` and configured actions, then ``close``) and reads the
verdict from what that session did and recorded: the PodGroup phase it computed, the binds it
committed, the enqueue refusals its plugins recorded (proportion/capacity "queue resource quota
insufficient", overcommit "resource in cluster is overused"), the gang condition message and the
per-Pod fit errors. The numbers in the explanation (queue capability, allocated, inqueue,
cluster idle) are read from the session's plugins, never recomputed here.

Entry point: :func:`explain` (pure: wire objects in, :class:`Explanation` out).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pumice.api import Obj, scheme
from pumice.api.meta import find_condition, get_condition
from pumice.api.quantity import BINARY_SI, DECIMAL_SI, canonical_string, format_millis
from pumice.api.volcano.constants import DEFAULT_SCHEDULER_NAME, QUEUE_NAME_ANNOTATION_KEY
from pumice.scheduler.volcano import build_snapshot
from pumice.scheduler.volcano.api.resource import EPHEMERAL_STORAGE, Resource
from pumice.scheduler.volcano.api.types import StatusCode, TaskStatus
from pumice.scheduler.volcano.conf import SchedulerConfiguration
from pumice.scheduler.volcano.framework.interface import RecordingCache
from pumice.scheduler.volcano.framework.session import open_session, run_actions
from pumice.scheduler.volcano.plugins.queue_position import queue_positions

GROUP_KEY = "scheduling.k8s.io/group-name"
KIND_ALIASES = {
    "podgroup": "PodGroup", "podgroups": "PodGroup", "pg": "PodGroup",
    "podgroups.scheduling.volcano.sh": "PodGroup",
    "vcjob": "VCJob", "vcjobs": "VCJob", "vj": "VCJob", "jobs.batch.volcano.sh": "VCJob",
    "job.batch.volcano.sh": "VCJob",
    "rayjob": "RayJob", "rayjobs": "RayJob", "rayjobs.ray.io": "RayJob",
    "raycluster": "RayCluster", "rayclusters": "RayCluster", "rayclusters.ray.io": "RayCluster",
    "pod": "Pod", "pods": "Pod", "po": "Pod",
}

SESSION_KINDS: tuple[scheme.ResourceKind, ...] = (
    scheme.NAMESPACE, scheme.NODE, scheme.HYPER_NODE, scheme.PRIORITY_CLASS, scheme.QUEUE, scheme.POD_GROUP, scheme.POD)
"""The kinds :func:`explain` builds its session from, listed in full by every caller (``pumice
explain`` lists them from the API, the web UI reads them from its watch cache), so both replay the
same snapshot: HyperNodes included, or a job held by its ``networkTopology`` reads as a gang or
predicates failure."""

_TARGET_KINDS = {"VCJob": scheme.VCJOB, "RayJob": scheme.RAY_JOB, "RayCluster": scheme.RAY_CLUSTER}


def target_resource(kind: str) -> scheme.ResourceKind | None:
    """The object :func:`explain` needs besides :data:`SESSION_KINDS` for a target of ``kind``
    (any spelling of :data:`KIND_ALIASES`): the Volcano Job, RayJob or RayCluster itself; None for
    a PodGroup or Pod (already among the session's kinds) or an unknown kind."""
    return _TARGET_KINDS.get(KIND_ALIASES.get(kind.lower(), ""))


class ExplainError(ValueError):
    """Bad target or missing object; the message says which."""


@dataclass
class Explanation:
    """The verdict.

    Attributes:
        target: what was asked about, e.g. ``vcjob default/j2``.
        podgroup: ``<ns>/<name>`` of its PodGroup (None when it has none yet).
        queue: its queue.
        phase: the PodGroup phase the session computed.
        gate: a short id: ``finished``, ``running``, ``binding``, ``node-start``, ``no-podgroup``,
            ``queue-missing``,
            ``queue-closed``, ``enqueue-quota``, ``enqueue-overcommit``, ``enqueue-refused``,
            ``no-pods``, ``queue-overused``, ``queue-allocatable``, ``cohort``, ``user-limits``,
            ``usage-budget`` (a peers' plugin whose AllocatableFn refuses the gang),
            ``wait-for-pods-ready`` (deactivated, or in its requeue backoff), ``topology``,
            ``gang``, ``predicates``.
        reason: one sentence with the numbers.
        remedy: what would let it run ("" when nothing holds it).
        details: supporting lines (fit errors, events).
    """

    target: str
    podgroup: str | None = None
    queue: str | None = None
    phase: str = ""
    gate: str = ""
    reason: str = ""
    remedy: str = ""
    details: list[str] = field(default_factory=list)

    def render(self) -> str:
        lines = [f"{self.target}"]
        if self.podgroup:
            lines.append(f"  PodGroup: {self.podgroup} (queue {self.queue}, phase after a scheduling session: "
                         f"{self.phase or 'none'})")
        lines.append(f"  held by: {self.gate}" if self.gate not in ("finished", "running", "binding", "node-start")
                     else f"  state: {self.gate}")
        lines.append(f"  why: {self.reason}")
        if self.remedy:
            lines.append(f"  would run if: {self.remedy}")
        for d in self.details:
            lines.append(f"    {d}")
        return "\n".join(lines)

    def to_json(self) -> Obj:
        return {"target": self.target, "podGroup": self.podgroup, "queue": self.queue, "phase": self.phase,
                "gate": self.gate, "reason": self.reason, "remedy": self.remedy, "details": self.details}


# ---------------------------------------------------------------------------------------------
# helpers


def _md(o: Obj) -> Obj:
    return o.get("metadata") or {}


def _find(objects: list[Obj], kind: str, name: str, namespace: str | None, api_prefix: str = "") -> Obj | None:
    for o in objects:
        if o.get("kind") != kind or not str(o.get("apiVersion", "")).startswith(api_prefix):
            continue
        md = _md(o)
        if md.get("name") == name and (namespace is None or (md.get("namespace") or "default") == namespace):
            return o
    return None


def _fmt_dim(name: str, v: float) -> str:
    """A Resource dimension as a Kubernetes quantity (what a spec takes): cpu and other scalars
    from milli-units (``2400m``, ``2``), memory (bytes) and the byte
    scalars (``ephemeral-storage``, ``hugepages-*``, milli-units) in the shorter of the binary and
    decimal forms (``96Gi``, ``40G``, ``1810324548``), pods as a count. Rounded to the unit (a
    ratio of floats leaves a sub-unit remainder)."""
    if name == "pods":
        return str(round(v))
    if name == "memory" or name == EPHEMERAL_STORAGE or name.startswith("hugepages-"):
        n = round(v) if name == "memory" else round(v / 1000)
        binary, decimal = canonical_string(Fraction(n), BINARY_SI), canonical_string(Fraction(n), DECIMAL_SI)
        return binary if len(binary) <= len(decimal) else decimal
    return format_millis(round(v))


def _fmt_res(r: Resource | None, names: list[str] | None = None) -> str:
    if r is None:
        return "unlimited"
    dims = names if names is not None else [n for n in r.resource_names() if n != "pods"]
    parts = []
    for n in dims:
        v = r.get(n)
        parts.append(f"{n} {'unlimited' if v == float('inf') else _fmt_dim(n, v)}")
    return ", ".join(parts) if parts else "nothing"


def _members(n: int) -> str:
    return f"{n} member" if n == 1 else f"{n} members"


def _dims_in(message: str) -> list[str]:
    return re.findall(r"(?:insufficient|overused) ([\w./-]+)", message)


# ---------------------------------------------------------------------------------------------
# target resolution


def resolve_target(objects: list[Obj], kind: str, name: str, namespace: str) -> tuple[str, str | None, str, Obj | None]:
    """``(description, podgroup name or None, note, pod)`` for a target.

    Raises:
        ExplainError: unknown kind or missing object.
    """
    k = KIND_ALIASES.get(kind.lower())
    if k is None:
        raise ExplainError(f"cannot explain kind {kind!r}; use one of podgroup, vcjob, rayjob, raycluster, pod")
    if k == "PodGroup":
        if _find(objects, "PodGroup", name, namespace) is None:
            raise ExplainError(f'podgroups.scheduling.volcano.sh "{name}" not found in namespace {namespace}')
        return f"PodGroup {namespace}/{name}", name, "", None
    if k == "VCJob":
        job = _find(objects, "Job", name, namespace, "batch.volcano.sh/")
        if job is None:
            raise ExplainError(f'jobs.batch.volcano.sh "{name}" not found in namespace {namespace}')
        phase = ((job.get("status") or {}).get("state") or {}).get("phase") or "(none yet)"
        return f"vcjob {namespace}/{name} (phase {phase})", f"{name}-{_md(job).get('uid', '')}", "", None
    if k == "RayJob":
        rj = _find(objects, "RayJob", name, namespace, "ray.io/")
        if rj is None:
            raise ExplainError(f'rayjobs.ray.io "{name}" not found in namespace {namespace}')
        st = rj.get("status") or {}
        cluster = st.get("rayClusterName") or ""
        desc = f"RayJob {namespace}/{name} (jobDeploymentStatus {st.get('jobDeploymentStatus') or '(none yet)'})"
        # KubeRay's Volcano adapter names the group after the RayJob (ray-<rayjob>-pg); a RayCluster
        # created on its own has ray-<cluster>-pg
        for cand in (f"ray-{name}-pg", f"ray-{cluster}-pg" if cluster else ""):
            if cand and _find(objects, "PodGroup", cand, namespace) is not None:
                return desc, cand, f"RayCluster {cluster}" if cluster else "", None
        if not cluster:
            return desc, None, "the RayJob has no RayCluster yet", None
        return desc, f"ray-{name}-pg", f"RayCluster {cluster}", None
    if k == "RayCluster":
        rc = _find(objects, "RayCluster", name, namespace, "ray.io/")
        if rc is None:
            raise ExplainError(f'rayclusters.ray.io "{name}" not found in namespace {namespace}')
        state = (rc.get("status") or {}).get("state") or "(none yet)"
        desc = f"RayCluster {namespace}/{name} (state {state})"
        # KubeRay's Volcano adapter: ray-<cluster>-pg, or ray-<rayjob>-pg for a RayJob's cluster
        owner = next((r.get("name") for r in _md(rc).get("ownerReferences") or [] if r.get("kind") == "RayJob"), None)
        for cand in (f"ray-{name}-pg", f"ray-{owner}-pg" if owner else ""):
            if cand and _find(objects, "PodGroup", cand, namespace) is not None:
                return desc, cand, "", None
        return desc, f"ray-{owner or name}-pg", "", None
    pod = _find(objects, "Pod", name, namespace)
    if pod is None:
        raise ExplainError(f'pods "{name}" not found in namespace {namespace}')
    pg = (_md(pod).get("annotations") or {}).get(GROUP_KEY)
    return f"Pod {namespace}/{name}", pg or None, "" if pg else "the Pod has no PodGroup (annotation " \
        f"{GROUP_KEY} is not set; it is not scheduled by Volcano or the podgroup controller has not " \
        "reached it)", pod


# ---------------------------------------------------------------------------------------------
# the analysis


def _gate_before_session(ex: Explanation, objects: list[Obj], kind: str, name: str, namespace: str,
                         pod: Obj | None, pg_name: str | None, note: str) -> Obj | None:
    """The gates that need no session: a bound or foreign-scheduler Pod, a finished target, a
    missing PodGroup, a missing or closed queue. Fills ``ex`` and returns None when one holds;
    else returns the PodGroup (``ex.podgroup`` and ``ex.queue`` set) for the session to judge."""
    if pod is not None:
        node = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if node:
            ex.gate = "running" if phase == "Running" else "node-start"
            ex.reason = (f"the Pod is bound to Node {node} and {phase}" if phase != "Pending"
                         else f"the Pod is bound to Node {node}; waiting for the node agent to start it")
            return None
        scheduler = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
        if scheduler != DEFAULT_SCHEDULER_NAME and phase == "Pending":
            _other_scheduler(ex, pod, scheduler)
            return None
    invalid = _validation_failed(objects, kind, name, namespace)
    if invalid:
        ex.gate, ex.reason = "validation", invalid
        ex.remedy = ("fix the spec as the message says, then delete and re-create the RayJob "
                     "(ValidationFailed is terminal: the operator does not start it even once the spec is valid)")
        return None
    done = _finished(objects, kind, name, namespace)
    if done:
        ex.gate, ex.reason = "finished", done
        return None
    if pg_name is None:
        ex.gate, ex.reason = "no-podgroup", note or "no PodGroup"
        ex.remedy = "the controller creates the PodGroup; check that it runs"
        qname = ((_md(pod).get("annotations") or {}).get(QUEUE_NAME_ANNOTATION_KEY) or "default") if pod else ""
        if pod is not None and _find(objects, "Queue", qname, None) is None:
            ex.queue = qname
            ex.reason = (f"queue {qname} does not exist (annotation {QUEUE_NAME_ANNOTATION_KEY}), so the API "
                         f"refuses the Pod's PodGroup (validatepodgroup.volcano.sh: unable to find queue) and "
                         f"the controller retries")
            ex.remedy = f"create queue {qname}, or delete the Pod and create it with an existing queue"
        return None
    pg = _find(objects, "PodGroup", pg_name, namespace)
    key = f"{namespace}/{pg_name}"
    ex.podgroup = key
    if pg is None:
        ex.gate = "no-podgroup"
        ex.reason = f"PodGroup {key} does not exist yet" + (f" ({note})" if note else "")
        ex.remedy = "the controller creates it; if it stays missing, check the controller's events"
        return None
    qname = (pg.get("spec") or {}).get("queue") or "default"
    ex.queue = qname
    queue = _find(objects, "Queue", qname, None)
    if queue is None:
        ex.gate = "queue-missing"
        ex.reason = f"queue {qname} does not exist, so the scheduler ignores the PodGroup"
        ex.remedy = f"create queue {qname}"
        return None
    state = (queue.get("status") or {}).get("state") or "Open"
    if state != "Open":
        ex.gate = "queue-closed"
        ex.reason = f"queue {qname} is {state}: it takes no new work (enqueue and allocate refuse it)"
        ex.remedy = f"open queue {qname} (a bus.volcano.sh Command with action OpenQueue)"
        ex.phase = (pg.get("status") or {}).get("phase") or "Pending"
        return None
    return pg


def _controller_of(pg: Obj) -> Obj | None:
    """The PodGroup's ownerReference with ``controller: true`` (None for one made by hand)."""
    return next((r for r in _md(pg).get("ownerReferences") or [] if r.get("controller")), None)


def _hand_made_without_pods(ex: Explanation, ssn: Any, job: Any, pg: Obj) -> None:
    """Add to an enqueue refusal (filled in by :func:`_enqueue_gate`) what a PodGroup made by hand
    without Pods means (asked for as ``podgroup/NAME``, no controller owns it): no gang view of
    Pods that do not exist and that nothing will create, and a minResources no enqueue can ever
    admit."""
    ex.reason += ("; the PodGroup has no Pods, and no controller owns it (no ownerReference with controller: "
                  "true): nothing creates Pods for it")
    pods = f"its Pods are created (annotation {GROUP_KEY}: {_md(pg).get('name', '')})"
    beyond = _min_resources_beyond_cluster(ssn, job)
    if beyond:
        ex.reason += f"; it can never be enqueued as the cluster is: minResources {beyond}"
        ex.remedy = "a smaller minResources (the cluster cannot hold it: freeing room does not help)"
    ex.remedy = f"{ex.remedy}; and {pods}" if ex.remedy else pods


def _no_pods(ex: Explanation, pg: Obj, asked_for_podgroup: bool) -> None:
    """An admitted PodGroup without Pods: its controller makes them, unless it has none (a
    PodGroup made by hand, asked for as ``podgroup/NAME``: its bare Pods, once deleted or evicted,
    come back from nothing)."""
    ex.gate = "no-pods"
    owner = _controller_of(pg)
    if asked_for_podgroup and owner is None:
        ex.reason = (f"the PodGroup is {ex.phase} but has no Pods, and no controller owns it (no ownerReference "
                     "with controller: true): nothing creates Pods for it; bare Pods that were deleted or "
                     "evicted are not recreated")
        ex.remedy = (f"create its Pods again (annotation {GROUP_KEY}: {_md(pg).get('name', '')}), or delete the "
                     "PodGroup")
        return
    by = f"its controller ({owner.get('kind')} {owner.get('name')})" if owner is not None else "the job's controller"
    ex.reason = (f"the PodGroup is {ex.phase} (admitted to the queue) but has no Pods yet; {by} creates them once "
                 "the PodGroup leaves Pending")
    ex.remedy = "nothing: the controller creates the Pods on its next pass"


def explain(objects: list[Obj], kind: str, name: str, namespace: str, conf: SchedulerConfiguration,
            *, now: float = 0.0) -> Explanation:
    """Explain why ``kind/name`` in ``namespace`` is (not) running, from ``objects`` (Nodes, Pods,
    PodGroups, Queues, PriorityClasses, Namespaces, and the target itself) under ``conf``.
    ``now`` (epoch seconds) is the session's time (the sla plugin's waiting times use it).

    Raises:
        ExplainError: unknown kind or missing target.
    """
    objects = [copy.deepcopy(o) for o in objects]
    desc, pg_name, note, pod = resolve_target(objects, kind, name, namespace)
    ex = Explanation(target=desc)
    pg = _gate_before_session(ex, objects, kind, name, namespace, pod, pg_name, note)
    if pg is None:
        return ex
    key, qname = ex.podgroup or "", ex.queue or ""

    snapshot = _snapshot_without_bad_objects(objects, ex, pg)
    snapshot.now = now
    rec = RecordingCache()
    ssn = open_session(snapshot, conf, rec, uid="pumice-explain")
    job = ssn.jobs.get(key)
    if job is None:
        ex.gate = "queue-missing"
        ex.reason = f"the scheduler's snapshot has no job for {key}"
        return ex
    phase_before = job.phase or "Pending"
    invalid = ssn.job_valid(job)
    run_actions(ssn, conf.actions)
    q = ssn.queues.get(qname)
    pending = [t for t in job.tasks.values() if t.status is TaskStatus.Pending]
    gang_req = _gang_request(job, pending, job.min_available)
    peer_refusal = _peer_allocatable_refusal(ssn, q, qname, pending, gang_req) if q is not None and pending else None
    allocatable_ok = all(fn(q, t) for name, fn in _allocatable_fns(ssn) if name in _QUEUE_PLUGINS
                         for t in pending[:1]) if q is not None and pending else True
    overused = ssn.overused(q) if q is not None else False
    plugin_numbers = _plugin_numbers(ssn, qname)
    node_reasons = _unplaced_reasons(ssn, job, pending)
    blocked = _unresolvable_remedy(ssn, pending)
    job_binds = {k: v for k, v in rec.binds.items() if k in {t.key for t in job.tasks.values()}}
    closed = ssn.close()
    status = closed.pod_groups.get(key, {})
    ex.phase = status.get("phase", "")
    events = [m for (uid, _t, _r, m) in closed.events if uid == key]
    ex.details.extend(f"event: {m}" for m in events)
    min_member = job.min_available
    scheduled = job.scheduled_task_num()

    if scheduled >= min_member and not job_binds and not pending:
        _placed(ex, job, scheduled, min_member)
        return ex
    _queue_position(ex, ssn, job, qname)
    if job_binds:
        ex.gate = "binding"
        ex.reason = (f"the scheduler binds {len(job_binds)} Pod(s) in this session ("
                     + ", ".join(f"{k} -> {v}" for k, v in sorted(job_binds.items())) + "); waiting for binding")
        return ex
    if invalid is not None and _pods_ready_gate(ex, ssn, pg, invalid):
        return ex
    if ex.phase == "Pending" and phase_before in ("", "Pending"):
        _enqueue_gate(ex, events, job, plugin_numbers, conf)
        owner = _controller_of(pg)
        if job.tasks:
            _gang_room(ex, ssn, job)
        elif owner is None and KIND_ALIASES[kind.lower()] == "PodGroup":
            _hand_made_without_pods(ex, ssn, job, pg)
        else:
            by = f"its controller ({owner.get('kind')} {owner.get('name')})" if owner else "the job's controller"
            ex.reason += (f"; the PodGroup has no Pods yet: {by} creates them once the PodGroup is enqueued "
                          "(their sizes below: minResources / minMember each)")
            _gang_room(ex, ssn, job)
        return ex
    if not job.tasks:
        _no_pods(ex, pg, KIND_ALIASES[kind.lower()] == "PodGroup")
        return ex
    if overused and pending:
        pn = plugin_numbers.get("queue")
        ex.gate = "queue-overused"
        ex.reason = (f"queue {qname} uses its deserved share: allocated "
                     f"{_fmt_res(pn['allocated']) if pn else '?'} >= deserved {_fmt_res(pn['deserved']) if pn else '?'}")
        ex.remedy = (f"other queues free resources, or give queue {qname} a larger weight/deserved share "
                     "(reclaim takes back resources other queues borrowed)")
        return ex
    if peer_refusal is not None:
        ex.gate, ex.reason, ex.remedy = peer_refusal
        _never_fits(ex, ssn, job)
        return ex
    if _queue_allocatable_gate(ex, ssn, job, qname, pending, gang_req, plugin_numbers, allocatable_ok):
        return ex
    if _topology_gate(ex, ssn, job, pg, gang_req):
        return ex
    _gang_gate(ex, job, status, closed.pod_conditions, ssn, node_reasons, blocked)
    return ex


def _placed(ex: Explanation, job: Any, scheduled: int, min_member: int) -> None:
    """The gang is placed: running, or bound and waiting for the node agent."""
    bound_not_running = [t for t in job.tasks.values() if t.status is TaskStatus.Bound]
    if bound_not_running:
        ex.gate = "node-start"
        ex.reason = f"{len(bound_not_running)} Pod(s) are bound and wait for their node agent to start them"
    else:
        ex.gate = "running"
        ex.reason = f"the gang is placed: {scheduled} of minMember {min_member} Pods are scheduled"


def _queue_position(ex: Explanation, ssn: Any, job: Any, qname: str) -> None:
    """Add the job's place among the queue's waiting jobs, in the session's job order."""
    pos = queue_positions(ssn, [j for j in ssn.jobs.values() if j.queue == qname]).get(job.uid)
    if pos is None:
        return
    ex.details.append(f"queue position: {pos[0]} of {pos[1]} waiting jobs in queue {qname} (the session's job order)")


def _gang_request(job: Any, pending: list[Any], min_member: int) -> Resource:
    """What the gang still asks for: the requests of the first ``minMember - ready`` pending
    tasks (at least one), by name."""
    gang_req = Resource()
    for t in sorted(pending, key=lambda t: t.name)[:max(min_member - job.ready_task_num(), 1)]:
        gang_req = gang_req + t.resreq
    return gang_req


_QUEUE_PLUGINS = ("capacity", "proportion")
"""The queue plugins whose AllocatableFn :func:`_queue_allocatable_gate` explains with their numbers."""


def _allocatable_fns(ssn: Any) -> list[tuple[str, Any]]:
    """The session's AllocatableFns as (plugin name, fn), in tier order."""
    return [pair for tier in ssn.callbacks.allocatable.tiered() for pair in tier]


def _peer_allocatable_refusal(ssn: Any, q: Any, qname: str, pending: list[Any],
                              gang_req: Resource) -> tuple[str, str, str] | None:
    """(gate, reason, remedy) when a plugin other than capacity/proportion (cohort, user-limits,
    usage-budget) refuses the gang at allocate: its AllocatableFn says no to the first pending
    task, or to the gang's whole request at once (allocate asks task by task and discards a gang
    it cannot complete, so after the session the first task alone may pass). Must run before the
    session closes (the plugins drop their state then)."""
    probe = min(pending, key=lambda t: t.name).clone()
    probe.resreq = gang_req
    first = min(pending, key=lambda t: t.name)
    for name, fn in _allocatable_fns(ssn):
        if name in _QUEUE_PLUGINS:
            continue
        if fn(q, first) and fn(q, probe):
            continue
        if name == "cohort":
            return _cohort_refusal(ssn, qname, gang_req)
        dims = [d for d in gang_req.resource_names() if d != "pods"]
        return (name, f"{name} refuses to allocate the gang's request {_fmt_res(gang_req, dims)} in queue {qname}",
                f"see the {name} plugin's limits for queue {qname} (its Events on the PodGroup say which)")
    return None


def _cohort_refusal(ssn: Any, qname: str, req: Resource) -> tuple[str, str, str]:
    from pumice.scheduler.volcano.plugins.cohort import cap_of

    plugin = ssn.plugins.get("cohort")
    m = plugin.members.get(qname) if plugin is not None else None
    if m is None:
        return "cohort", f"the cohort plugin refuses queue {qname} (its annotations do not parse; see its Events)", \
            f"fix queue {qname}'s cohort annotations"
    members = plugin.cohort_members(m.cohort)
    cap = cap_of(m, members, reserved=False)
    over = [d for d in m.names if req.get(d) > 0 and m.used.get(d) + req.get(d) > cap.get(d) + 1e-9]
    dims = over or [d for d in m.names if req.get(d) > 0]
    lent = {p.queue: _above_nominal(p) for p in members if p.queue != qname}
    borrowers = ", ".join(f"{qn} {_fmt_res(r, dims)}" for qn, r in sorted(lent.items())
                          if any(r.get(d) > 0 for d in dims)) or "none"
    reason = (f"cohort {m.cohort} quota: queue {qname} uses {_fmt_res(m.used, dims)}, and the gang's request "
              f"{_fmt_res(req, dims)} would take it past the {_fmt_res(cap, dims)} it may use now (nominal "
              f"{_fmt_res(m.nominal, dims)}; used above their nominal quota by the other members: {borrowers})")
    remedy = (f"the other members of cohort {m.cohort} give back what they use above their nominal quota "
              f"(queue {qname} with scheduling.pumice.io/reclaim-within-cohort Any or LowerPriority takes it back"
              f"{'' if m.reclaim == 'Never' else ', as it does now, if reclaim is among the actions'}), or queue "
              f"{qname}'s spec.deserved is raised")
    return "cohort", reason, remedy


def _above_nominal(m: Any) -> Resource:
    """What cohort member ``m`` uses above its nominal quota (0 where it does not)."""
    from pumice.scheduler.volcano.api.resource import exceeded_part

    return exceeded_part(m.used, m.nominal)


def _queue_allocatable_gate(ex: Explanation, ssn: Any, job: Any, qname: str, pending: list[Any],
                            gang_req: Resource, plugin_numbers: dict[str, Any], allocatable_ok: bool) -> bool:
    """The queue's capability (capacity) or deserved share (proportion) holds the gang, or (when
    the queue's own capability takes it) an ancestor's capability under hierarchical capacity:
    fill ``ex`` with the numbers and the limit to raise, and return True."""
    pn0 = plugin_numbers.get("queue")
    if pn0 and pending:
        lim0 = pn0["real_capability"] if plugin_numbers.get("plugin") == "capacity" else pn0["deserved"]
        fits, names = (pn0["allocated"] + gang_req).less_equal_in_request_dims(lim0, gang_req)
        # a limit that is the whole cluster is the Nodes' gate, not the queue's (no limit can be
        # raised past the cluster; proportion caps deserved there), whatever the session said
        queue_bound = any(lim0.get(d) < ssn.total_resource.get(d) - 0.1 for d in names)
        if not fits:
            allocatable_ok = not queue_bound
        elif (refusal := _ancestor_refusal(ssn, qname, gang_req, plugin_numbers)) is not None:
            ex.gate = "queue-allocatable"
            ex.reason, ex.remedy = refusal
            _never_fits(ex, ssn, job)
            return True
    if not allocatable_ok:
        pn = plugin_numbers.get("queue")
        req = gang_req if pending else Resource()
        dims = [n for n in req.resource_names() if n != "pods"]
        if pn:
            limit_name = "capability" if plugin_numbers.get("plugin") == "capacity" else "deserved"
            limit = pn["real_capability"] if limit_name == "capability" else pn["deserved"]
            need = pn["allocated"] + req
            over = [d for d in dims if need.get(d) > limit.get(d) + 1e-9]
            dims = over or dims
            what = "deserved share (proportion's, from the queues' weights)" if limit_name == "deserved" else limit_name
            ex.reason = (f"queue {qname} is at its {what}: allocated {_fmt_res(pn['allocated'], dims)} + "
                         f"the gang's request {_fmt_res(req, dims)} "
                         f"{'>' if over else 'reaches'} {limit_name} {_fmt_res(limit, dims)}")
            ex.remedy = ", ".join(f"raise queue {qname} {limit_name}.{d} to {_fmt_dim(d, need.get(d))}"
                                  for d in dims if need.get(d) > limit.get(d)) or f"free room in queue {qname}"
        else:
            ex.reason = f"queue {qname} refuses the allocation"
        ex.gate = "queue-allocatable"
        if pending:
            _never_fits(ex, ssn, job)
        return True
    return False


def _topology_gate(ex: Explanation, ssn: Any, job: Any, pg: Obj, gang_req: Resource) -> bool:
    """A hard ``networkTopology`` job that no HyperNode within its tier can hold: name the tier it
    waits for and the lowest tier where one could hold the gang; when some HyperNode there could
    hold it once free, the roomiest one now, else (no HyperNode there can, even empty, its Pods
    fitted Node by Node) the largest and how many of the gang's Pods it holds."""
    nt = (pg.get("spec") or {}).get("networkTopology") or {}
    hard, limit = job.is_hard_topology_mode()
    if str(nt.get("mode") or "hard") != "hard" or not hard:
        return False
    hns = ssn.hypernodes
    within = [h for h in hns.real if h.tier <= limit]
    if not within:
        return False

    def idle(h: Any) -> Resource:
        total = Resource()
        for n in h.nodes:
            if n in ssn.nodes:
                total = total + ssn.nodes[n].future_idle()
        return total

    dims = [d for d in gang_req.resource_names() if d != "pods"]
    tier_label = f"tier {limit}" + (f" ({nt['highestTierName']})" if nt.get("highestTierName") else "")
    members = _member_requests(job, all_members=True)[:max(job.min_available, 1)]

    def holds_when_empty(h: Any) -> int:
        return _fit_count(ssn, members, empty=True, nodes=h.nodes)

    # a HyperNode can take the gang only Pod by Pod on its Nodes: its summed free room says little
    wider = sorted({h.tier for h in hns.real if h.tier > limit and holds_when_empty(h) >= len(members)})
    ex.gate = "topology"
    if members and all(holds_when_empty(h) < len(members) for h in within):
        largest = max(sorted(within, key=lambda h: (h.tier, h.name)), key=holds_when_empty)
        ex.reason = (f"networkTopology is hard with highestTierAllowed {limit}: the gang ({_sizes(members)}) must fit in "
                     f"one HyperNode of {tier_label} or lower, and none can ever hold it: the largest, {largest.name} "
                     f"(tier {largest.tier}), holds {holds_when_empty(largest)} of them even when empty")
        ex.remedy = (f"highestTierAllowed is raised to {wider[0]}" if wider else
                     f"a HyperNode of tier {limit} or lower whose Nodes hold the gang's Pods, smaller requests, or a "
                     "smaller minMember")
    else:
        roomiest = max(within, key=lambda h: idle(h).get(dims[0]) if dims else 0.0)
        ex.reason = (f"networkTopology is hard with highestTierAllowed {limit}: the gang ({_fmt_res(gang_req, dims)}) "
                     f"must fit in one HyperNode of {tier_label} or lower, and none has room; the roomiest is "
                     f"{roomiest.name} (tier {roomiest.tier}, {_fmt_res(idle(roomiest), dims)} free)")
        ex.remedy = f"one HyperNode of tier {limit} or lower has {_fmt_res(gang_req, dims)} free"
        if wider:
            ex.remedy += f", or highestTierAllowed is raised to {wider[0]}"
    ex.details.append(f"waiting for tier {job.waiting_tier or limit}: HyperNodes of tier <= {limit}: "
                      + ", ".join(f"{h.name} {_fmt_res(idle(h), dims)}" for h in within))
    return True


def _unplaced_reasons(ssn: Any, job: Any, pending: list[Any]) -> dict[str, str]:
    """For each Pending task the session left unplaced: why no Node takes it, with the gang's own
    tentative placements of this session (Allocated/Pipelined, then discarded) still counted."""
    held: dict[str, Resource] = {}
    unplaced = []
    for t in pending:
        ctx = t.last_transaction or t.transaction_context()
        if ctx.status in (TaskStatus.Allocated, TaskStatus.Pipelined) and ctx.node_name:
            held[ctx.node_name] = held.get(ctx.node_name, Resource()) + t.resreq
        elif ctx.status is TaskStatus.Pending:
            unplaced.append(t)
    return {t.key: _node_reasons(ssn, t, held) for t in unplaced}


def _node_reasons(ssn: Any, task: Any, held: dict[str, Resource]) -> str:
    """Why ``task`` fits no Node, from the session's own checks (the allocate resource fit against
    future idle, then the registered predicate functions), in kube-scheduler's summary form."""
    counts: dict[str, int] = {}
    for n in ssn.nodes.values():
        idle = n.future_idle() - held.get(n.name, Resource())
        short = [d for d in task.init_resreq.resource_names() if task.init_resreq.get(d) > idle.get(d) + 0.1]
        reasons = [f"Insufficient {d}" for d in short]
        if not reasons:
            fe = ssn.predicate_for_allocate(task, n)
            reasons = list(fe.reasons()) if fe is not None else []
        for r in reasons:
            counts[r] = counts.get(r, 0) + 1
    if not counts:
        return ""
    body = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    return f"0/{len(ssn.nodes)} nodes are unavailable: {body}."


def _member_requests(job: Any, *, all_members: bool = False) -> list[Resource]:
    """The requests of the gang's members still to place (``all_members``: every member that is
    not finished, placed or not), largest first; a PodGroup whose controller has not created its
    Pods yet counts minMember members of minResources / minMember each (a hand-made one without
    Pods never gets here: see :func:`_hand_made_without_pods`)."""
    done = (TaskStatus.Succeeded, TaskStatus.Failed)
    tasks = [t for t in job.tasks.values()
             if t.status not in done and (all_members or t.status is TaskStatus.Pending)]
    if tasks:
        return sorted((t.resreq for t in tasks), key=_size_key, reverse=True)
    if job.min_resources is not None and job.min_available > 0:
        return [job.min_resources.multi(1.0 / job.min_available)] * job.min_available
    return []


def _size_key(r: Resource) -> tuple[float, ...]:
    return tuple(r.get(d) for d in sorted(n for n in r.resource_names() if n != "pods"))


def _dims(reqs: list[Resource]) -> list[str]:
    return sorted({n for r in reqs for n in r.resource_names() if n != "pods" and r.get(n) > 0})


def _sizes(reqs: list[Resource]) -> str:
    """``2 Pods of cpu 2, memory 4Gi and 1 Pod of cpu 1, memory 1Gi`` (distinct sizes, largest first)."""
    dims = _dims(reqs)
    counts: dict[str, int] = {}
    for r in reqs:
        text = _fmt_res(r, [d for d in dims if r.get(d) > 0])  # what this size requests
        counts[text] = counts.get(text, 0) + 1
    return " and ".join(f"{n} Pod{'s' if n != 1 else ''} of {text}" for text, n in counts.items())


def _fit_count(ssn: Any, reqs: list[Resource], *, empty: bool = False, nodes: Any = None) -> int:
    """How many of ``reqs`` (largest first) the session's Nodes (or only those named in
    ``nodes``) hold now (future idle), or with ``empty``, with nothing running (allocatable):
    first fit, Nodes in name order."""
    names = sorted(ssn.nodes) if nodes is None else sorted(n for n in set(nodes) if n in ssn.nodes)
    free = {name: (ssn.nodes[name].allocatable if empty else ssn.nodes[name].future_idle()) for name in names}
    placed = 0
    for r in reqs:
        dims = [d for d in r.resource_names() if r.get(d) > 0]
        for name, f in free.items():
            if all(f.get(d) + 1e-6 >= r.get(d) for d in dims):
                free[name] = f - r
                placed += 1
                break
    return placed


def _never_fits(ex: Explanation, ssn: Any, job: Any) -> bool:
    """When even empty Nodes cannot hold the gang, say so and return True: waiting for running
    Pods, freeing room or a larger queue share cannot help then, so that advice is replaced."""
    members = _member_requests(job, all_members=True)
    if not members:
        return False
    live = sum(1 for t in job.tasks.values() if t.status not in (TaskStatus.Succeeded, TaskStatus.Failed))
    beyond = _min_resources_beyond_cluster(ssn, job)
    if job.tasks and live < job.min_available:
        # room cannot help a group that has too few Pods: it needs Pods (or a smaller minMember)
        ex.reason += (f"; it can never run as it is: the PodGroup has {live} Pod{'s' if live != 1 else ''} "
                      f"but minMember {job.min_available}")
        ex.remedy = f"{job.min_available - live} more Pods in the group (or a smaller minMember)"
        if beyond:
            ex.reason += f", and minResources {beyond}"
            ex.remedy += ", and a minResources the cluster can hold"
        return True
    total = _fit_count(ssn, members[:max(job.min_available, 1)], empty=True)
    if total >= job.min_available:
        return False
    if _larger_than_every_node(ex, ssn, members):
        return True
    ex.reason += (f"; it can never fit as the cluster is: the {len(ssn.nodes)} Nodes hold {total} of the gang's "
                  f"Pods ({_sizes(members)}) even when empty, minMember is {job.min_available}")
    ex.remedy = (f"Nodes with room for {job.min_available - total} more such Pods, smaller requests, "
                 f"or a smaller minMember")
    return True


def _larger_than_every_node(ex: Explanation, ssn: Any, members: list[Resource]) -> bool:
    """When some of ``members`` fit on no Node even when empty, name them and the largest
    allocatable of each dimension they exceed (the scheduler's ``Insufficient <resource>`` on every
    Node), and return True. No smaller minMember or other members' room can place such a Pod,
    so only a larger Node or a smaller request is offered."""
    alloc = [n.allocatable for n in ssn.nodes.values()]
    big = [r for r in members
           if not any(all(a.get(d) + 1e-6 >= r.get(d) for d in r.resource_names() if r.get(d) > 0) for a in alloc)]
    if not big:
        return False
    largest = {d: max((a.get(d) for a in alloc), default=0.0) for d in _dims(big)}
    over = [d for d in largest if any(r.get(d) > largest[d] + 1e-6 for r in big)]
    that = "that Pod" if len(big) == 1 else "those Pods"
    ex.reason += (f"; it can never fit as the cluster is: {_sizes(big)} requests more than any of the "
                  f"{len(ssn.nodes)} Nodes can hold")
    if over:
        most = [f"{d} {_fmt_dim(d, largest[d])}" for d in over if largest[d] > 0]
        none = [d for d in over if largest[d] <= 0]
        ex.reason += (f" (Insufficient {', '.join(over)}: "
                      + "; ".join(([f"the largest allocatable is {', '.join(most)}"] if most else [])
                                  + ([f"no Node has {', '.join(none)}"] if none else [])) + ")")
        need = ", ".join(f"{d} {_fmt_dim(d, max(r.get(d) for r in big))}" for d in over)
        ex.remedy = f"a Node with allocatable {need} or more, or a smaller request of {that}"
    else:  # each dimension fits some Node, but no Node has them all at once
        ex.reason += " (no Node has all of it allocatable at once)"
        ex.remedy = f"a Node that can hold {that}, or a smaller request of {that}"
    return True


def _min_resources_beyond_cluster(ssn: Any, job: Any) -> str:
    """``cpu 100 > cluster cpu 24 x 1.2``: the dimensions of the job's minResources above the
    cluster's allocatable times the overcommit factor (1 without the overcommit plugin), which
    no enqueue can ever admit; "" when it fits."""
    if job.min_resources is None:
        return ""
    factor = float(getattr(ssn.plugins.get("overcommit"), "factor", 1.0))
    total = ssn.total_resource
    dims = [d for d in job.min_resources.resource_names()
            if d != "pods" and job.min_resources.get(d) > total.get(d) * factor + 1e-6]
    if not dims:
        return ""
    return (f"{_fmt_res(job.min_resources, dims)} > cluster {_fmt_res(total, dims)}"
            + (f" x {factor:g}" if factor != 1.0 else ""))


def _lift(task: Any, plugin: str, reason: str) -> str:
    """What would lift one UnschedulableAndUnresolvable predicate verdict on ``task``, by the
    plugin that gave it (kube-scheduler's plugin names: NodeAffinity, TaintToleration, ...)."""
    spec = task.pod.get("spec") or {}
    if plugin == "NodeAffinity":
        sel = spec.get("nodeSelector") or {}
        labelled = ("a Node labelled " + ", ".join(f"{k}={v}" for k, v in sorted(sel.items()))) if sel else ""
        req = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution")
        if sel and req:
            return f"{labelled} that also matches the Pod's required node affinity, or change the nodeSelector/affinity"
        if sel:
            return f"{labelled}, or change the nodeSelector"
        return "a Node that matches the Pod's required node affinity, or change the affinity"
    if plugin == "TaintToleration":
        return f"a toleration on the Pod for the taint, or a Node without it ({reason})"
    if plugin == "NodeUnschedulable":
        return "a schedulable Node (kubectl uncordon)"
    return f"a Node that passes {plugin or 'the predicate'} ({reason}), or change the Pod"


def _unresolvable_remedy(ssn: Any, pending: list[Any]) -> str:
    """When a Pending task fails a predicate that freeing resources cannot lift
    (UnschedulableAndUnresolvable: node affinity/selector, taints, cordoned Nodes) on every Node,
    what would lift it (``a Node labelled gpu=a100, or change the nodeSelector``); "" when every
    Pending task passes those predicates on some Node. Run before the session closes."""
    if not ssn.nodes:
        return ""
    for t in sorted(pending, key=lambda t: t.name):
        lifts: dict[str, None] = {}
        for n in sorted(ssn.nodes.values(), key=lambda n: n.name):
            fe = ssn.predicate_for_allocate(t, n)
            if fe is None or not fe.unresolvable():
                break
            for st in fe.statuses:
                if st.code is StatusCode.UnschedulableAndUnresolvable:
                    lifts[_lift(t, st.plugin, st.reason)] = None
        else:
            return "; or ".join(lifts)
    return ""


def _gang_room(ex: Explanation, ssn: Any, job: Any) -> None:
    """Add the gang view to an enqueue refusal: how many members the Nodes could take now."""
    pending = _member_requests(job)
    if not pending:
        return
    ready = job.ready_task_num()
    room = _fit_count(ssn, pending)
    short = job.min_available - ready - room
    if short > 0:
        ex.reason += (f"; gang short by {_members(short)}: minMember {job.min_available}, {_sizes(pending)} to place, "
                      f"the Nodes have room for {room} of them now")
        more = f"room for {short} more of them on the Nodes (e.g. when running Pods finish)"
        ex.remedy = f"{ex.remedy}; and {more}" if ex.remedy else more
    _never_fits(ex, ssn, job)


def _other_scheduler(ex: Explanation, pod: Obj, scheduler: str) -> None:
    """A Pod for another scheduler (kube-scheduler's ``default-scheduler``): its PodScheduled
    condition is that scheduler's verdict (kube-scheduler writes ``0/N nodes are available: ...``)."""
    ex.gate = "other-scheduler"
    cond = get_condition(pod, "PodScheduled")
    if cond is not None and cond.get("status") == "False":
        ex.reason = (f"scheduler {scheduler} has not placed it: {cond.get('reason') or 'Unschedulable'}: "
                     f"{cond.get('message') or '(no message)'}")
        ex.remedy = "what the scheduler's message asks for (a Node that fits, or a smaller request)"
    else:
        ex.reason = f"waiting for scheduler {scheduler} to place it (it has written no verdict yet)"
        ex.remedy = f"scheduler {scheduler} running; `pumice up` runs default-scheduler and volcano"


def _snapshot_without_bad_objects(objects: list[Obj], ex: Explanation, target_pg: Obj) -> Any:
    """The session's snapshot of ``objects``; an object the scheduler cannot read (a bad quantity
    or field) is left out with a detail line, unless it is the target's own PodGroup, so one bad
    object does not stop the explanation of every other.

    Raises:
        SnapshotError: the target's PodGroup itself is unreadable (the message names the field).
    """
    from pumice.scheduler.volcano.cache.snapshot import SnapshotError

    left_out: list[Obj] = []
    while True:
        try:
            return build_snapshot(o for o in objects if not any(o is b for b in left_out))
        except SnapshotError as e:
            if e.obj is None or e.obj is target_pg or any(e.obj is b for b in left_out):
                raise
            left_out.append(e.obj)
            ex.details.append(f"left out (the scheduler cannot read it either): {e}")


def _validation_failed(objects: list[Obj], kind: str, name: str, namespace: str) -> str:
    """The operator's message when the target is a RayJob in ``ValidationFailed`` (KubeRay writes
    it with reason ``ValidationFailed`` and never leaves it), else ""."""
    if KIND_ALIASES.get(kind.lower()) != "RayJob":
        return ""
    st = (_find(objects, "RayJob", name, namespace, "ray.io/") or {}).get("status") or {}
    if st.get("jobDeploymentStatus") != "ValidationFailed":
        return ""
    return f"the RayJob is ValidationFailed: {st.get('message') or '(no message)'}"


def _finished(objects: list[Obj], kind: str, name: str, namespace: str) -> str:
    """A sentence when the target is done (nothing holds it), else ""."""
    k = KIND_ALIASES.get(kind.lower())
    if k == "VCJob":
        job = _find(objects, "Job", name, namespace, "batch.volcano.sh/")
        phase = (((job or {}).get("status") or {}).get("state") or {}).get("phase")
        if phase in ("Completed", "Failed", "Terminated", "Aborted"):
            return f"the job is {phase}; it no longer asks for resources"
    if k == "RayJob":
        rj = _find(objects, "RayJob", name, namespace, "ray.io/")
        st = (rj or {}).get("status") or {}
        if st.get("jobDeploymentStatus") in ("Complete", "Failed"):
            return f"the RayJob is {st['jobDeploymentStatus']} (job status {st.get('jobStatus') or '?'})"
    if k == "Pod":
        pod = _find(objects, "Pod", name, namespace)
        phase = ((pod or {}).get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return f"the Pod has {phase}"
    return ""


def _plugin_numbers(ssn: Any, qname: str) -> dict[str, Any]:
    """Numbers the session's queue and overcommit plugins hold right now (read, not recomputed)."""
    out: dict[str, Any] = {}
    for pname in ("capacity", "proportion"):
        plugin = ssn.plugins.get(pname)
        attrs = None
        if plugin is not None:
            attrs = getattr(plugin, "queue_opts", None) or getattr(plugin, "attrs", None)
        attr = attrs.get(qname) if isinstance(attrs, dict) else None
        if attr is not None:
            out["plugin"] = pname
            out["queue"] = {
                "allocated": getattr(attr, "allocated", Resource()),
                "inqueue": getattr(attr, "inqueue", Resource()),
                "elastic": getattr(attr, "elastic", Resource()),
                "deserved": getattr(attr, "deserved", Resource()),
                "real_capability": getattr(attr, "real_capability", Resource()),
                "capability": getattr(attr, "capability", None),
            }
            if pname == "capacity" and getattr(plugin, "hierarchy", False):
                out["ancestors"] = _ancestor_numbers(plugin, qname)
            break
    oc = ssn.plugins.get("overcommit")
    if oc is not None:
        out["overcommit"] = {"idle": getattr(oc, "idle", Resource()), "inqueue": getattr(oc, "inqueue", Resource()),
                             "factor": getattr(oc, "factor", 1.2), "total": ssn.total_resource}
    return out


def _ancestor_numbers(plugin: Any, qname: str) -> list[dict[str, Any]]:
    """capacity's numbers for the ancestors of ``qname`` (hierarchical mode), the parent first:
    name, allocated, realCapability, and what each child queue holds (allocated)."""
    attrs = plugin.attrs
    out = []
    for qid in reversed(plugin.path(qname)[:-1]):
        a = attrs[qid]
        out.append({"name": a.name, "allocated": a.allocated, "real_capability": a.real_capability,
                    "children": {attrs[c].name: attrs[c].allocated for c in sorted(a.children) if c in attrs}})
    return out


def _ancestor_refusal(ssn: Any, qname: str, gang_req: Resource, numbers: dict[str, Any]) -> tuple[str, str] | None:
    """(why, remedy) when an ancestor's realCapability cannot take the gang on top of what it
    holds (hierarchical capacity checks every queue up the chain, the nearest first), else None.
    A limit as large as the cluster is the Nodes' gate, not a queue's."""
    for depth, anc in enumerate(numbers.get("ancestors") or (), start=1):
        limit = anc["real_capability"]
        need = anc["allocated"] + gang_req
        fits, over = need.less_equal_in_request_dims(limit, gang_req)
        over = [d for d in over if d != "pods" and limit.get(d) < ssn.total_resource.get(d) - 0.1]
        if fits or not over:
            continue
        name = anc["name"]
        rel = "parent" if depth == 1 else "ancestor"
        why = (f"queue {name} ({rel} of {qname}) is at its capability: allocated {_fmt_res(anc['allocated'], over)} + "
               f"the gang's request {_fmt_res(gang_req, over)} > capability {_fmt_res(limit, over)}")
        holders = [f"{child} holds {_fmt_res(held, over)}" for child, held in anc["children"].items()
                   if any(held.get(d) > 0 for d in over)]
        remedy = ", ".join(f"raise queue {name} capability.{d} to {_fmt_dim(d, need.get(d))}" for d in over)
        remedy += f", or free room in queue {name}" + (f" ({'; '.join(holders)})" if holders else "")
        return why, remedy
    return None


def _enqueue_gate(ex: Explanation, events: list[str], job: Any, numbers: dict[str, Any],
                  conf: SchedulerConfiguration) -> None:
    min_req = job.min_resources or Resource()
    quota = next((m for m in events if m.startswith("queue resource quota insufficient")), None)
    over = next((m for m in events if m.startswith("resource in cluster is overused")), None)
    qname = ex.queue
    if quota is not None and numbers.get("queue"):
        pn = numbers["queue"]
        dims = _dims_in(quota) or [n for n in min_req.resource_names() if n != "pods"]
        total = min_req + pn["allocated"] + pn["inqueue"] - pn["elastic"]
        cap = pn["real_capability"]
        ex.gate = "enqueue-quota"
        ex.reason = (f"enqueue refused by {numbers.get('plugin')}: queue {qname} minResources "
                     f"{_fmt_res(min_req, dims)} + allocated {_fmt_res(pn['allocated'], dims)} + inqueue "
                     f"{_fmt_res(pn['inqueue'], dims)} - elastic {_fmt_res(pn['elastic'], dims)} = "
                     f"{_fmt_res(total, dims)} > capability {_fmt_res(cap, dims)}")
        if pn.get("capability") is not None:
            ex.remedy = ", ".join(f"raise queue {qname} capability.{d} to {_fmt_dim(d, total.get(d))}" for d in dims)
        else:
            ex.remedy = ", ".join(f"{_fmt_dim(d, total.get(d) - cap.get(d))} more {d} in the cluster" for d in dims) + \
                f" (queue {qname} has no capability; its limit is the cluster)"
        return
    if over is not None and numbers.get("overcommit"):
        oc = numbers["overcommit"]
        dims = _dims_in(over) or [n for n in min_req.resource_names() if n != "pods"]
        need = oc["inqueue"] + min_req
        ex.gate = "enqueue-overcommit"
        ex.reason = (f"enqueue refused by overcommit: inqueue {_fmt_res(oc['inqueue'], dims)} + minResources "
                     f"{_fmt_res(min_req, dims)} = {_fmt_res(need, dims)} > idle {_fmt_res(oc['idle'], dims)} "
                     f"(cluster {_fmt_res(oc['total'], dims)} x {oc['factor']:g} - used)")
        ex.remedy = ", ".join(f"frees {_fmt_dim(d, need.get(d) - oc['idle'].get(d))} {d} in the cluster"
                              for d in dims if need.get(d) > oc["idle"].get(d)) or "room in the cluster"
        return
    if "enqueue" not in conf.actions:
        ex.gate = "gang"
        ex.reason = "not ready and not placed in this session"
        return
    ex.gate = "enqueue-refused"
    refusal = next((m for m in events if "tasks in gang" not in m), None)
    ex.reason = "enqueue refused" + (f": {refusal}" if refusal else
                                     " (a plugin voted against it; no plugin left a message)")
    apps = _USER_APPS_RE.match(refusal or "")
    if apps is not None:
        user, limit, q = apps.group("user"), apps.group("max"), apps.group("queue")
        ex.remedy = (f"one of user {user}'s admitted jobs in queue {q} finishes or is deleted (or the user-limits "
                     f"maxApplications for {user} in queue {q} is raised above {limit})")
    else:
        ex.remedy = "see the refusal above"


#: user-limits' enqueue refusal (see plugins/user_limits.py).
_USER_APPS_RE = re.compile(r"^user (?P<user>\S+) has (?P<n>\d+) of at most (?P<max>\d+) applications in queue "
                           r"(?P<queue>\S+)$")


def _pods_ready_gate(ex: Explanation, ssn: Any, pg: Obj, invalid: Any) -> bool:
    """Fill ``ex`` when wait-for-pods-ready holds the job (``invalid``, the session's JobValid
    verdict): deactivated after its requeuing limit, or waiting out its requeue backoff. False
    when another plugin's verdict holds it."""
    from pumice.scheduler.volcano.plugins import wait_for_pods_ready as wfpr

    ann = _md(pg).get("annotations") or {}
    raw = str(ann.get(wfpr.REQUEUE_COUNT_ANNOTATION) or "0")
    count = int(raw) if raw.isdigit() else 0
    plugin = ssn.plugins.get(wfpr.PLUGIN_NAME)
    args = getattr(plugin, "args", None)
    md = _md(pg)
    ns, name = md.get("namespace"), md.get("name")
    if invalid.reason == wfpr.DEACTIVATED_REQUEUING_LIMIT:
        limits = (f"PodsReady timeout {args.timeout:g} s, waitForPodsReady.backoffLimitCount "
                  f"{args.backoff_limit_count}") if args is not None else "PodsReady timeout"
        ex.gate = wfpr.PLUGIN_NAME
        ex.reason = (f"deactivated after {count} requeue{'' if count == 1 else 's'} ({limits}): its Pods were not "
                     f"all Ready in time once more than the requeuing limit allows; the scheduler leaves it alone "
                     f"while PodGroup {ns}/{name} has the annotation {wfpr.DEACTIVATED_ANNOTATION}")
        ex.remedy = (f"remove the annotation {wfpr.DEACTIVATED_ANNOTATION} from PodGroup {ns}/{name} (kubectl "
                     f"annotate podgroup -n {ns} {name} {wfpr.DEACTIVATED_ANNOTATION}-) to reactivate it")
        ex.details.append(f"the requeue count ({wfpr.REQUEUE_COUNT_ANNOTATION}) is kept on reactivation: the next "
                          "timeout deactivates it again; remove that annotation too to start over")
        return True
    if invalid.reason == wfpr.PODS_READY_TIMEOUT:
        until = ann.get(wfpr.REQUEUE_AT_ANNOTATION) or "?"
        ex.gate = wfpr.PLUGIN_NAME
        ex.reason = (f"requeued after {count} PodsReady timeout{'' if count == 1 else 's'} (its Pods were not all "
                     f"Ready in time); backoff until {until}")
        ex.remedy = f"nothing: it is enqueued again when the backoff ends ({until})"
        return True
    return False


_GANG_RE = re.compile(r"^(\d+)/(\d+) tasks in gang unschedulable")


def _gang_gate(ex: Explanation, job: Any, status: Obj, pod_conditions: dict[str, tuple[str, str, str]],
               ssn: Any, node_reasons: dict[str, str], blocked: str = "") -> None:
    min_member = job.min_available
    ready = job.ready_task_num()
    pending = sorted((t for t in job.tasks.values() if t.status is TaskStatus.Pending), key=lambda t: t.name)
    cond = find_condition(status.get("conditions"), "Unschedulable")
    if cond is not None and cond.get("status") != "True":
        cond = None
    short = None
    if cond is not None:
        m = _GANG_RE.match(str(cond.get("message", "")))
        if m:
            short = int(m.group(1))
    placeable = sum(1 for t in pending if (pod_conditions.get(t.key) or ("", "", ""))[0] == "Schedulable")
    if short is None:
        short = max(min_member - ready - placeable, 0)
    fit_msgs: dict[str, int] = {}
    for t in pending:
        reason, msg, _ = pod_conditions.get(t.key) or ("", "", "")
        if reason == "Unschedulable":
            if "nodes are unavailable" not in msg:  # not a per-Node summary: use the session's checks
                msg = node_reasons.get(t.key) or msg
            if msg:
                fit_msgs[msg] = fit_msgs.get(msg, 0) + 1
    n_nodes = len(ssn.nodes)
    if len(job.tasks) < min_member:
        ex.gate = "gang"
        ex.reason = (f"gang short by {_members(min_member - len(job.tasks))}: the PodGroup has {len(job.tasks)} "
                     f"Pods but minMember {min_member}")
        ex.remedy = f"{min_member - len(job.tasks)} more Pods in the group (or a smaller minMember)"
        return
    if ready >= min_member:
        # the gang is met (trial 14 F-2): what waits are the Pods beyond minMember, each on its own
        ex.gate = "predicates"
        short = max(len(pending) - placeable, 1)
        ex.reason = (f"gang met: {ready} placed of minMember {min_member}; {short} more Pod{'s' if short != 1 else ''} "
                     f"fit on none of the {n_nodes} Nodes")
    else:
        ex.gate = "gang" if short > 0 and placeable > 0 else "predicates"
        if short <= 0:
            short = max(min_member - ready, 1)
        ex.reason = (f"gang short by {_members(short)}: {ready} placed and {placeable} placeable of minMember "
                     f"{min_member}; the rest fit on none of the {n_nodes} Nodes")
    for msg, n in sorted(fit_msgs.items()):
        ex.details.append(f"{n} Pod(s): {msg}")
    if pending and blocked:
        ex.gate = "predicates"
        ex.reason += "; freeing resources cannot help: a predicate fails on every Node"
        ex.remedy = blocked
        return
    if pending:
        req = min((t.resreq for t in pending), key=_size_key)  # the smallest member still to place
        # the Pod count is named only when it is what is short (the Nodes' allocatable pods)
        dims = [n for n in req.resource_names() if n != "pods" or _shortfall(ssn, req, n) > 0]
        per = ", ".join(f"{_fmt_dim(d, _shortfall(ssn, req, d))} {d}" for d in dims
                        if _shortfall(ssn, req, d) > 0) or _fmt_res(req, dims)
        ex.remedy = (f"frees {per} on any Node, for each of {short} more Pod{'s' if short != 1 else ''} "
                     f"(to place: {_sizes(sorted((t.resreq for t in pending), key=_size_key, reverse=True))})")
        _never_fits(ex, ssn, job)


def _shortfall(ssn: Any, req: Resource, dim: str) -> float:
    """The least extra ``dim`` a Node needs so that one more ``req`` fits there once the Pods that
    fit it now are placed (leftover of the session's future idle after whole Pods)."""
    dims = [d for d in req.resource_names() if d != "pods" and req.get(d) > 0]
    best = float("inf")
    for n in ssn.nodes.values():
        idle = n.future_idle()
        # a Node's pod count bounds how many fit only where it has one (allocatable pods)
        bounds = [*dims, "pods"] if req.get("pods") > 0 and n.allocatable.get("pods") > 0 else dims
        k = int(min(idle.get(d) // req.get(d) for d in bounds)) if bounds else 0
        left = idle.get(dim) - k * req.get(dim)
        best = min(best, max(req.get(dim) - left, 0.0))
    return 0.0 if best == float("inf") else best
