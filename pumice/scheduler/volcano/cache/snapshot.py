"""Snapshots from wire objects, and one dry-run session over them.

Mirrors: volcano pkg/scheduler/cache/cache.go Snapshot (Ready nodes, all queues, jobs whose
queue exists, job priority from the PriorityClass) and event_handlers.go (pod -> task -> job).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pumice._util.clock import Clock, parse_rfc3339
from pumice.api import Obj
from pumice.api.volcano.constants import JOB_ALLOCATED_HYPERNODE_ANNOTATION, POD_PREEMPTABLE
from pumice.scheduler.default.volumebinding import VOLUME_KINDS, StaticListers
from pumice.scheduler.volcano.api.hyper_node_info import build_hypernodes
from pumice.scheduler.volcano.api.job_info import JobInfo, NetworkTopology
from pumice.scheduler.volcano.api.node_info import NodeInfo, node_is_ready
from pumice.scheduler.volcano.api.queue_info import ClusterInfo, QueueInfo
from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import COMPLETED_STATUSES, TaskStatus
from pumice.scheduler.volcano.conf import SchedulerConfiguration
from pumice.scheduler.volcano.framework.interface import RecordingCache, SessionCache
from pumice.scheduler.volcano.framework.session import CloseResult, open_session, run_actions


class SnapshotError(ValueError):
    """A wire object that cannot be turned into scheduler state; names object and field.

    ``obj`` is the offending wire object when known (``pumice explain`` leaves it out and goes on).
    """

    def __init__(self, message: str, obj: Obj | None = None) -> None:
        super().__init__(message)
        self.obj = obj


def _creation(obj: Obj, default: float) -> float:
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    if isinstance(ts, str) and ts:
        return parse_rfc3339(ts)
    return default


def _ident(obj: Obj) -> str:
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    return f"{obj.get('kind', '?')} {ns + '/' if ns else ''}{md.get('name', '?')}"


def job_from_pod_group(pg: Obj, creation: float, priority_classes: dict[str, int], default_priority: int) -> JobInfo:
    md = pg.get("metadata") or {}
    spec = pg.get("spec") or {}
    ns = md.get("namespace") or "default"
    try:
        mr = Resource.from_list(spec["minResources"]) if spec.get("minResources") is not None else None
    except ValueError as e:
        raise SnapshotError(f"{_ident(pg)}: spec.minResources: {e}", pg) from e
    try:
        min_member = int(spec.get("minMember") or 0)
        tmin = {str(k): int(v) for k, v in (spec.get("minTaskMember") or {}).items()}
    except (TypeError, ValueError) as e:
        raise SnapshotError(f"{_ident(pg)}: spec.minMember/minTaskMember: {e}", pg) from e
    pcn = spec.get("priorityClassName") or ""
    prio = priority_classes.get(pcn, default_priority) if pcn else default_priority
    ann = md.get("annotations") or {}
    # the wire object itself, not a copy: a session and the live cache only read a job's
    # PodGroup (a phase change makes a new dict, JobInfo.set_phase; conditions are kept on the
    # session), and the informer replaces an object that changes, never edits it
    if "status" not in pg:
        pg = {**pg, "status": {}}
    return JobInfo(
        uid=f"{ns}/{md.get('name')}",
        name=md.get("name", ""),
        namespace=ns,
        queue=spec.get("queue") or "default",
        priority=prio,
        min_available=min_member,
        task_min_available=tmin,
        min_resources=mr,
        creation=creation,
        pod_group=pg,
        preemptable=str(ann.get(POD_PREEMPTABLE, "false")).lower() == "true",
        annotations=dict(ann),
        network_topology=NetworkTopology.from_spec(spec.get("networkTopology")),
        allocated_hypernode=str(ann.get(JOB_ALLOCATED_HYPERNODE_ANNOTATION) or ""),
    )


def build_snapshot(
    objects: Iterable[Obj], *, clock: Clock | None = None, scheduler_names: tuple[str, ...] = ("volcano",)
) -> ClusterInfo:
    """A :class:`ClusterInfo` from wire objects (Nodes, Pods, PodGroups, Queues, PriorityClasses,
    Namespaces, HyperNodes; PersistentVolumeClaims, PersistentVolumes and StorageClasses become
    its :attr:`ClusterInfo.volumes` when there is one; other kinds are ignored).

    Objects without a creationTimestamp get one from their position (index seconds after the
    epoch), so file order breaks ties. Pods join the job named by their
    ``scheduling.k8s.io/group-name`` annotation; Pending Pods of other schedulers are ignored,
    bound Pods always count on their node.

    Raises:
        SnapshotError: a bad quantity or field (the message names the object and field).
    """
    objs = list(objects)
    ci = ClusterInfo(now=clock.now() if clock is not None else 0.0)
    default_priority = 0
    for o in objs:
        if o.get("kind") == "PriorityClass":
            name = (o.get("metadata") or {}).get("name", "")
            try:
                ci.priority_classes[name] = int(o.get("value") or 0)
            except (TypeError, ValueError) as e:
                raise SnapshotError(f"{_ident(o)}: value: {e}", o) from e
            if o.get("globalDefault"):
                default_priority = ci.priority_classes[name]
    volume_objs: list[Obj] = []
    for i, o in enumerate(objs):
        kind = o.get("kind")
        if kind == "Namespace":
            ci.namespaces[(o.get("metadata") or {}).get("name", "")] = o
        elif kind == "Queue":
            try:
                q = QueueInfo.from_queue(o, _creation(o, float(i)))
            except (TypeError, ValueError) as e:
                raise SnapshotError(f"{_ident(o)}: spec: {e}", o) from e
            ci.queues[q.uid] = q
        elif kind == "Node":
            if not node_is_ready(o):
                continue
            try:
                n = NodeInfo.from_node(o)
            except ValueError as e:
                raise SnapshotError(f"{_ident(o)}: status.allocatable: {e}", o) from e
            ci.nodes[n.name] = n
        elif kind in VOLUME_KINDS:
            volume_objs.append(o)
    if volume_objs:
        ci.volumes = StaticListers(volume_objs)
    for i, o in enumerate(objs):
        if o.get("kind") == "PodGroup":
            job = job_from_pod_group(o, _creation(o, float(i)), ci.priority_classes, default_priority)
            ci.jobs[job.uid] = job
    for i, o in enumerate(objs):
        if o.get("kind") != "Pod":
            continue
        try:
            t = TaskInfo.from_pod(o)
        except ValueError as e:
            raise SnapshotError(f"{_ident(o)}: spec.containers[].resources: {e}", o) from e
        if not (o.get("metadata") or {}).get("creationTimestamp"):
            t.creation = float(i)
        sched = (o.get("spec") or {}).get("schedulerName") or "default-scheduler"
        if t.node_name and t.status not in COMPLETED_STATUSES and t.node_name in ci.nodes:
            ci.nodes[t.node_name].add_task(t)
        if t.job and t.job in ci.jobs and (sched in scheduler_names or t.status is not TaskStatus.Pending):
            ci.jobs[t.job].add_task(t)
    for uid in [u for u, j in ci.jobs.items() if j.queue not in ci.queues]:
        del ci.jobs[uid]
    ci.hypernodes = build_hypernodes(
        (o for o in objs if o.get("kind") == "HyperNode"), list(ci.nodes), {n: ni.labels for n, ni in ci.nodes.items()}
    )
    return ci


@dataclass
class SessionResult:
    """What one dry-run session decided.

    ``binds`` and ``evictions`` are what the binder and evictor received at commit;
    ``pipelined`` the tasks left Pipelined; ``pod_groups`` the new PodGroup status per
    ``<ns>/<name>``; ``fit_errors`` per job its fit error text when it is not ready;
    ``unschedulable`` per task ``<ns>/<pod>`` its (reason, message).
    """

    binds: dict[str, str] = field(default_factory=dict)
    evictions: list[str] = field(default_factory=list)
    pipelined: dict[str, str] = field(default_factory=dict)
    pod_groups: dict[str, Obj] = field(default_factory=dict)
    fit_errors: dict[str, str] = field(default_factory=dict)
    unschedulable: dict[str, tuple[str, str]] = field(default_factory=dict)
    events: list[tuple[str, str, str, str]] = field(default_factory=list)
    close: CloseResult | None = None

    def to_json(self) -> Obj:
        """The ``pumice volcano session`` output shape."""
        return {
            "binds": dict(sorted(self.binds.items())),
            "evictions": sorted(self.evictions),
            "pipelined": dict(sorted(self.pipelined.items())),
            "podGroups": {
                k: {"phase": v.get("phase", ""), "conditions": v.get("conditions") or []}
                for k, v in sorted(self.pod_groups.items())
            },
        }


def run_session(
    snapshot: ClusterInfo,
    conf: SchedulerConfiguration,
    *,
    cache: SessionCache | None = None,
    vectorize: bool = True,
    uid: str | None = None,
) -> SessionResult:
    """Open a session on ``snapshot``, run the configured actions, close it.

    The snapshot is consumed (the session mutates it). Binds/evictions go to ``cache`` (a
    recorder by default) and are reported in the result.
    """
    rec = cache if cache is not None else RecordingCache()
    ssn = open_session(snapshot, conf, rec, uid=uid, vectorize=vectorize)
    run_actions(ssn, conf.actions)
    jobs = ssn.jobs
    closed = ssn.close()
    res = SessionResult(close=closed, events=closed.events)
    if isinstance(rec, RecordingCache):
        res.binds = dict(rec.binds)
        res.evictions = list(rec.evictions)
    else:
        for j in jobs.values():
            for t in j.tasks_in(TaskStatus.Binding):
                res.binds[t.key] = t.node_name
        res.evictions = [t.key for t, _ in ssn.evicted]
    for j in jobs.values():
        for t in j.tasks_in(TaskStatus.Pipelined):
            res.pipelined[t.key] = t.node_name
        if j.pod_group is not None and not j.is_ready():
            res.fit_errors[j.uid] = j.fit_error()
    res.pod_groups = closed.pod_groups
    for k, (reason, msg, _nom) in closed.pod_conditions.items():
        res.unschedulable[k] = (reason, msg)
    ssn.release()
    return res
