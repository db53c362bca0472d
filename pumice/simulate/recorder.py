"""What happened during a run, recorded from the API's watch stream at virtual time.

The :class:`Recorder` is fed by informer handlers (Pods, PodGroups, RayJobs). It keeps one
:class:`PodRecord` per Pod, the allocation timeline (a step function appended at each change),
per-queue allocation, GPU fragmentation, and partial-gang intervals. Nothing here reads wall time.

Definitions (the summary's, see :mod:`pumice.simulate.metrics`):

- a Pod *holds* resources from its bind (``spec.nodeName`` set) until it is terminal (Succeeded,
  Failed) or gone;
- GPU fragmentation: free GPUs on GPU Nodes that are partly allocated (a Node with some GPU
  capacity in use and some free); a multi-GPU worker cannot use them;
- a gang job (``minMember`` > 1) *holds a partial gang* while 0 < held Pods < minMember;
- per queue, the CPU and GPU its held Pods request (allocated), and the deserved CPU and GPU the
  fair-share plugin (proportion, capacity) computed in each session, as shares of the cluster's
  capacity; a queue the session left out (no job in it) deserves nothing then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pumice._util.clock import Clock, parse_rfc3339
from pumice.api import Obj
from pumice.api.meta import is_condition_true
from pumice.api.ray.constants import JobDeploymentStatus, RayServiceConditionType
from pumice.api.volcano.constants import KUBE_GROUP_NAME_ANNOTATION_KEY, JobPhase
from pumice.node.podspec import pod_requests
from pumice.simulate.nodes import GPU, GPU_MEMORY, GPU_MILLI, GPU_NUMBER, NodeSpec, gpu_milli
from pumice.simulate.workload import JOB_LABEL, QUEUE_ANNOTATION, Arrival

TERMINAL = ("Succeeded", "Failed")
REJECTED = "Rejected"
"""The status of a job the API server (or KubeRay) refused (``Rejected: <its message>``)."""
API_SERVER = "the API server"
KUBERAY = "KubeRay"
"""Who refused a job (:attr:`JobState.rejected_by`): the API server refused to create a manifest;
KubeRay refused a created RayJob (``jobDeploymentStatus: ValidationFailed``)."""
VCJOB_ENDS = {JobPhase.COMPLETED: "Succeeded", JobPhase.FAILED: "Failed", JobPhase.ABORTED: "Aborted",
              JobPhase.TERMINATED: "Terminated"}
"""A Volcano Job's phases that end it (``status.state.phase``; Aborted stays until a ResumeJob
Command, which nothing sends during a run) -> the job's status in jobs.csv (Completed is written
``Succeeded``, as for every other kind)."""


@dataclass
class PodRecord:
    """One Pod's life. Times are seconds since the simulation start (None: did not happen)."""

    name: str
    job: str
    queue: str
    cpu_milli: int
    gpu_milli: int
    created: float
    bound: float | None = None
    started: float | None = None
    finished: float | None = None
    deleted: float | None = None
    node: str = ""
    phase: str = "Pending"
    """The last phase the API showed (after a deletion: the kubelet's terminal phase for it)."""
    phase_at_deletion: str | None = None
    """The phase when its deletion began (``deletionTimestamp`` set, or removed at once); None:
    not deleted."""
    evictions: int = 0
    uid: str = ""

    @property
    def status(self) -> str:
        """How it ended, for pods.csv: ``Evicted`` (preempt, reclaim, a disruption), ``Deleted``
        (deleted while Pending or Running: its owner or the run ended it; the kubelet then reports
        ``Failed`` for the containers it stopped, upstream since Kubernetes 1.27, which is no
        failure of the Pod's own), ``Succeeded``/``Failed`` (ended on its own, deleted afterwards
        or not), else its phase at the end (``Running``, ``Pending``)."""
        if self.evictions:
            return "Evicted"
        if self.phase_at_deletion is not None:
            return self.phase_at_deletion if self.phase_at_deletion in TERMINAL else "Deleted"
        return self.phase

    @property
    def holding(self) -> bool:
        return self.bound is not None and self.finished is None and self.deleted is None


@dataclass
class JobState:
    """Live per-job counters."""

    arrival: Arrival
    created: float | None = None
    min_member: int = 1
    held: int = 0
    terminal: int = 0
    partial_since: float | None = None
    partial_seconds: float = 0.0
    gang_bound: float | None = None
    enqueued: float | None = None
    ready: float | None = None
    finished: float | None = None
    status: str = ""
    retry_count: int | None = None
    """A Volcano Job's ``status.retryCount`` as last seen (None: other kinds, or no status yet)."""
    rejected_by: str = ""
    """Who refused the job (:data:`API_SERVER`, :data:`KUBERAY`); empty: not rejected."""
    draining: bool = False
    """Deleted (a service) with Pods still holding: counted finished when the last one goes."""


#: Status fields whose change alone is no progress of a job, at any depth: times.
NO_PROGRESS_KEYS = frozenset({"lastUpdateTime", "lastTransitionTime"})

#: Keys of a condition (an item of a ``conditions`` list, at any depth) whose change alone is no
#: progress: the message a repeated failure rewrites at every attempt (KubeRay's ReplicaFailure
#: condition, mirrored into the RayJob's ``rayClusterStatus``: ``Failed to create Pod: Pod "<a new
#: random name>" is invalid: ...`` every reconcile, with a new ``lastUpdateTime``). Any other
#: message (a RayJob's ``status.message``, ``rayJobInfo.message``, a Serve application's) is
#: progress.
NO_PROGRESS_CONDITION_KEYS = NO_PROGRESS_KEYS | {"message"}


def progress_of(status: Any) -> Any:
    """``status`` without the keys of :data:`NO_PROGRESS_KEYS` at any depth, nor those of
    :data:`NO_PROGRESS_CONDITION_KEYS` in a condition: two statuses with the same value here
    differ by no progress."""
    if isinstance(status, dict):
        return {k: _conditions_progress(v) if k == "conditions" else progress_of(v)
                for k, v in status.items() if k not in NO_PROGRESS_KEYS}
    if isinstance(status, list):
        return [progress_of(v) for v in status]
    return status


def _conditions_progress(conditions: Any) -> Any:
    """:func:`progress_of` of a ``conditions`` value: each condition without
    :data:`NO_PROGRESS_CONDITION_KEYS`."""
    if not isinstance(conditions, list):
        return progress_of(conditions)
    return [{k: progress_of(v) for k, v in c.items() if k not in NO_PROGRESS_CONDITION_KEYS}
            if isinstance(c, dict) else progress_of(c) for c in conditions]


@dataclass
class Sample:
    """One step of the allocation timeline (values hold until the next sample)."""

    t: float
    cpu_milli: int
    gpu_milli: int
    frag_gpu_milli: int
    queues: dict[str, tuple[int, int]]
    """queue -> (cpu_milli, gpu_milli) its Pods hold (queues holding nothing left out)."""


@dataclass
class Recorder:
    """See the module docstring. ``start`` is the clock's ``now()`` at simulated time 0."""

    clock: Clock
    start: float
    nodes: list[NodeSpec]
    arrivals: dict[str, Arrival]
    pods: dict[str, PodRecord] = field(default_factory=dict)
    jobs: dict[str, JobState] = field(default_factory=dict)
    timeline: list[Sample] = field(default_factory=list)
    changes: int = 0
    last_change: float = 0.0
    """Seconds since the start of the last change (:meth:`touch`)."""
    preemptions: int = 0
    reclaims: int = 0
    sessions: int = 0
    deserved: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)
    """queue -> steps ``(t, cpu share, gpu share)`` of its deserved resources / the cluster's
    capacity (gpu share 0 on a cluster without GPUs)."""
    on_job_finished: Callable[[str], None] | None = None
    on_lifetime_start: Callable[[Arrival], None] | None = None
    """Called when the Pod of an arrival with ``delete_after_start`` first goes Running (the run
    deletes it that many seconds later)."""
    finished: int = 0

    def __post_init__(self) -> None:
        self._cpu = 0
        self._gpu = 0
        self._queues: dict[str, tuple[int, int]] = {}
        self._node_gpu_cap = {n.name: n.gpus * 1000 for n in self.nodes}
        self._node_gpu_used: dict[str, int] = {}
        self._frag = 0
        self._evicting: set[str] = set()
        self._current: dict[str, str] = {}  # "<ns>/<name>" -> the record key of its latest Pod, once re-created
        self._pg_min: dict[str, int] = {}  # "<ns>/<PodGroup>" -> minMember
        self._pg_job: dict[str, str] = {}  # "<ns>/<PodGroup>" -> job, from its Pods' group-name annotation
        # queue -> (the deserved Resource last seen, its (cpu, gpu) shares, whether its GPU share
        # sums one non-zero term at most). Resources are immutable and the entry holds the object, so
        # "is" means the same amounts; so do an equal milli_cpu and equal scalars when the GPU
        # share has one non-zero term at most (with more, the sum's order follows the keys' order)
        self._share_of: dict[str, tuple[Any, tuple[float, float], bool]] = {}
        self._progress: dict[str, Any] = {}  # RayJob/RayService job -> progress_of((generation, status)) last seen
        self.gpu_capacity = sum(self._node_gpu_cap.values())
        self.cpu_capacity = sum(n.cpu_milli for n in self.nodes)
        for name, a in self.arrivals.items():
            self.jobs[name] = JobState(a, min_member=a.tasks if a.kind == "Job" else 1)

    def now(self) -> float:
        return self.clock.now() - self.start

    # -- allocation bookkeeping ------------------------------------------------------------
    def _frag_of(self, node: str) -> int:
        cap = self._node_gpu_cap.get(node, 0)
        used = self._node_gpu_used.get(node, 0)
        return cap - used if 0 < used < cap else 0

    def _hold(self, rec: PodRecord, sign: int) -> None:
        self._cpu += sign * rec.cpu_milli
        self._gpu += sign * rec.gpu_milli
        cpu, gpu = self._queues.get(rec.queue, (0, 0))
        self._queues[rec.queue] = (cpu + sign * rec.cpu_milli, gpu + sign * rec.gpu_milli)
        if rec.gpu_milli and rec.node in self._node_gpu_cap:
            self._frag -= self._frag_of(rec.node)
            self._node_gpu_used[rec.node] = self._node_gpu_used.get(rec.node, 0) + sign * rec.gpu_milli
            self._frag += self._frag_of(rec.node)
        job = self.jobs.get(rec.job)
        if job is not None:
            t = self.now()
            job.held += sign
            partial = 0 < job.held < job.min_member
            if partial and job.partial_since is None:
                job.partial_since = t
            elif not partial and job.partial_since is not None:
                job.partial_seconds += t - job.partial_since
                job.partial_since = None
            if sign > 0 and job.held >= job.min_member and job.gang_bound is None:
                job.gang_bound = t
            if sign < 0 and job.held == 0 and job.draining:
                job.draining = False
                self._finished(rec.job)
        self._sample()

    def _sample(self) -> None:
        t = self.now()
        s = Sample(t, self._cpu, self._gpu, self._frag, {q: v for q, v in self._queues.items() if v[0] or v[1]})
        if self.timeline and self.timeline[-1].t == t:
            self.timeline[-1] = s
        else:
            self.timeline.append(s)

    # -- Pods --------------------------------------------------------------------------------
    def pod_event(self, pod: Obj, deleted: bool = False) -> None:
        md = pod.get("metadata") or {}
        job = (md.get("labels") or {}).get(JOB_LABEL)
        if job is None:
            return
        base = f"{md.get('namespace', '')}/{md['name']}"
        key = self._current.get(base, base)
        rec = self.pods.get(key)
        uid = str(md.get("uid") or "")
        if rec is not None and rec.deleted is not None and uid and rec.uid and uid != rec.uid:
            # a new Pod of the same name (a vcjob re-creates an evicted or restarted Pod under its
            # name): a record of its own, "<ns>/<name>#<n>" for the n-th one (trial-8 F-8)
            key = f"{base}#{sum(1 for k in self.pods if k == base or k.startswith(base + '#')) + 1}"
            self._current[base] = key
            rec = None
        t = self.now()
        before = None if rec is None else (rec.bound, rec.phase, rec.phase_at_deletion, rec.deleted, rec.evictions)
        if rec is None:
            req = pod_requests(pod)
            arrival = self.arrivals.get(job)
            queue = (md.get("annotations") or {}).get(QUEUE_ANNOTATION) or (arrival.queue if arrival else "default")
            rec = PodRecord(md["name"], job, queue, req.get("cpu", 0), gpu_milli(req), t, uid=uid)
            self.pods[key] = rec
            js = self.jobs.get(job)
            if js is not None and js.created is None:
                js.created = rec.created
            group = (md.get("annotations") or {}).get(KUBE_GROUP_NAME_ANNOTATION_KEY)
            if group and js is not None:
                pg_key = f"{md.get('namespace', '')}/{group}"
                self._pg_job[pg_key] = job
                if pg_key in self._pg_min:
                    self._set_min_member(js, self._pg_min[pg_key])
        was_holding = rec.holding
        node = (pod.get("spec") or {}).get("nodeName")
        if node and rec.bound is None:
            rec.bound, rec.node = t, node
        status = pod.get("status") or {}
        if rec.phase_at_deletion is None and (deleted or md.get("deletionTimestamp")):
            rec.phase_at_deletion = rec.phase  # before the kubelet's last word on the deletion
        phase = status.get("phase") or rec.phase
        if phase == "Running" and rec.started is None:
            rec.started = t
            js = self.jobs.get(job)
            if js is not None and js.arrival.delete_after_start is not None and self.on_lifetime_start is not None:
                self.on_lifetime_start(js.arrival)
        if md.get("deletionTimestamp") and rec.deleted is None and phase not in TERMINAL and rec.bound is not None \
                and _disrupted(status) and key not in self._evicting:
            self._evicting.add(key)
            rec.evictions += 1
        rec.phase = phase
        if phase in TERMINAL and rec.finished is None:
            rec.finished = t
            self._terminal(rec)
        if deleted and rec.deleted is None:
            rec.deleted = t
            if rec.finished is None:
                self._terminal(rec)
        if rec.holding != was_holding:
            self._hold(rec, 1 if rec.holding else -1)
        if before != (rec.bound, rec.phase, rec.phase_at_deletion, rec.deleted, rec.evictions):
            # a change of the Pod's life; not one of its containers' only (a restart under
            # restartPolicy Always is no progress: it must not keep a stalled run going)
            self.touch()

    def _terminal(self, rec: PodRecord) -> None:
        js = self.jobs.get(rec.job)
        if js is None:
            return
        js.terminal += 1
        if js.arrival.kind == "Job":
            # a vcjob ends with its phase (vcjob_event), not with its Pods: its controller re-creates
            # an evicted Pod, and a RestartJob/RestartTask policy replaces failed ones (trial-8 F-8)
            return
        # a service (delete_after) whose Pod ended before its deletion (an eviction of a bare Pod)
        # ended then; one the run deleted ended at the deletion (deployment_deleted)
        if js.arrival.kind in ("Pod", "Job") and js.terminal >= js.arrival.tasks and js.finished is None:
            js.finished = self.now()
            js.status = "Succeeded" if rec.phase != "Failed" else "Failed"
            self._finished(rec.job)

    # -- PodGroups and RayJobs ----------------------------------------------------------------
    def podgroup_event(self, pg: Obj) -> None:
        """A PodGroup of a job: its ``minMember`` (the gang size the partial-gang and start times
        use) and when it was first Inqueue. The job is the PodGroup's ``pumice.io/sim-job`` label,
        its owner, or (a Ray cluster's PodGroup, owned by the RayCluster) the job of the Pods that
        name it in ``scheduling.k8s.io/group-name``."""
        md = pg.get("metadata") or {}
        pg_key = f"{md.get('namespace', '')}/{md.get('name', '')}"
        mm = int((pg.get("spec") or {}).get("minMember", 1) or 0)
        if mm > 0:
            self._pg_min[pg_key] = mm
        job = (md.get("labels") or {}).get(JOB_LABEL) or _job_of_owner(md, self.jobs) or self._pg_job.get(pg_key)
        js = self.jobs.get(job) if job else None
        if js is None:
            return
        self.touch()
        if mm > 0 and js.finished is None:  # a finished RayJob's PodGroup shrinks to 0 (cleanup_on_completion)
            self._set_min_member(js, mm)
        phase = (pg.get("status") or {}).get("phase")
        if phase in ("Inqueue", "Running") and js.enqueued is None:
            js.enqueued = self.now()

    @staticmethod
    def _set_min_member(js: JobState, mm: int) -> None:
        if mm != js.min_member and js.held == 0:
            js.min_member = mm

    def vcjob_event(self, job: Obj) -> None:
        """A Volcano Job's status: finished when its phase ends it (:data:`VCJOB_ENDS`: Completed,
        Failed, Aborted, Terminated), as ``kubectl get vcjob`` shows the end, with the restarts its
        lifecycle policies made (``status.retryCount``) kept in :attr:`JobState.retry_count`. The
        job is the Job's ``pumice.io/sim-job`` label, else its name."""
        md = job.get("metadata") or {}
        name = (md.get("labels") or {}).get(JOB_LABEL) or md.get("name", "")
        js = self.jobs.get(name)
        if js is None or js.arrival.kind != "Job":
            return
        st = job.get("status") or {}
        if st:
            js.retry_count = int(st.get("retryCount") or 0)
        end = VCJOB_ENDS.get((st.get("state") or {}).get("phase", ""))
        if end is not None and js.finished is None:
            js.finished, js.status = self.now(), end
            self.touch()
            self._finished(name)

    def rayjob_event(self, rj: Obj) -> None:
        """A RayJob's status: ``ready`` when its Ray job started (``rayJobInfo.startTime``), finished
        at ``jobDeploymentStatus`` Complete or Failed, rejected (:meth:`rejected`, by KubeRay) at
        ValidationFailed: KubeRay refused the spec and never leaves that state (terminal, as in
        ray-operator rayjob_controller.go), so the job ends at once with ``Rejected:
        ValidationFailed: <status.message>`` (the Warning Event ``InvalidRayJobSpec``'s text)."""
        name = (rj.get("metadata") or {}).get("name", "")
        js = self.jobs.get(name)
        if js is None:
            return
        st = rj.get("status") or {}
        self._touch_if_progress(name, rj, st)
        if js.created is None:
            js.created = self.now()
        started = (st.get("rayJobInfo") or {}).get("startTime")
        if started and js.ready is None:
            js.ready = parse_rfc3339(started) - self.start
        if st.get("jobDeploymentStatus") == JobDeploymentStatus.VALIDATION_FAILED:
            reason = st.get("reason") or JobDeploymentStatus.VALIDATION_FAILED.value
            self.rejected(name, f"{reason}: {st.get('message') or '(no message)'}", by=KUBERAY)
        elif st.get("jobDeploymentStatus") in ("Complete", "Failed") and js.finished is None:
            js.finished = self.now()
            js.status = "Succeeded" if st.get("jobDeploymentStatus") == "Complete" else "Failed"
            self._finished(name)

    def rayservice_event(self, rs: Obj) -> None:
        """A RayService's status: ``ready`` when its ``Ready`` condition first turned True (Serve
        applications RUNNING and serve endpoints up: ``NonZeroServeEndpoints``)."""
        name = (rs.get("metadata") or {}).get("name", "")
        js = self.jobs.get(name)
        if js is None:
            return
        self._touch_if_progress(name, rs, rs.get("status") or {})
        if js.created is None:
            js.created = self.now()
        if js.ready is None and is_condition_true(rs.get("status") or {}, RayServiceConditionType.READY):
            js.ready = self.now()

    def deployment_deleted(self, name: str) -> None:
        """A service (Deployment, RayService, DLRM instance, a YAML bare Pod with ``restartPolicy:
        Always``) was deleted at the end of its lifetime:
        it finished now (status ``Deleted``); the run counts it done once its Pods are gone, so
        their ends are in the Pod rows and the allocation timeline."""
        js = self.jobs.get(name)
        if js is not None and js.finished is None:
            js.finished = self.now()
            js.status = "Deleted" if js.gang_bound is not None else "Deleted before start"
            if js.held:
                js.draining = True
            else:
                self._finished(name)

    def _touch_if_progress(self, job: str, obj: Obj, status: Obj) -> None:
        """:meth:`touch` for a RayJob's or RayService's update unless it only repeats what was seen
        (:func:`progress_of`): a Ray cluster whose Pods the API server refuses is updated at every
        reconcile with the failure's new text, and that must not keep a stalled run going to --until.
        A finished job's updates (its Ray cluster torn down) are no progress of the run, and its
        last status seen is forgotten (:meth:`_finished`)."""
        js = self.jobs.get(job)
        if js is not None and js.finished is not None:
            return
        key = ((obj.get("metadata") or {}).get("generation"), progress_of(status))
        if self._progress.get(job) != key:
            self._progress[job] = key
            self.touch()

    def touch(self) -> None:
        """Something the run watches changed now: counted in :attr:`changes`, its time in
        :attr:`last_change` (the stall window is measured from it)."""
        self.changes += 1
        self.last_change = self.now()

    def rejected(self, name: str, reason: str, by: str = API_SERVER) -> None:
        """``by`` (the API server, or KubeRay for a RayJob it refused) refused an arrival: the job
        ended at once, never started (status ``Rejected: <reason>``, :attr:`JobState.rejected_by`
        ``by``), and counts as finished so it does not keep the run open."""
        js = self.jobs.get(name)
        if js is not None and js.finished is None:
            js.finished, js.status, js.rejected_by = self.now(), f"{REJECTED}: {reason}", by
            self.touch()
            self._finished(name)

    def _finished(self, job: str) -> None:
        self.finished += 1
        self._progress.pop(job, None)
        if self.on_job_finished is not None:
            self.on_job_finished(job)

    def session(self, evicted: list[tuple[Any, str]], queue_metrics: dict[str, dict[str, Any]]) -> None:
        """After each scheduling session: preemption/reclaim counts and each Queue's deserved CPU
        and GPU shares (a queue sampled before and absent now had no job in the session: 0)."""
        self.sessions += 1
        for _task, reason in evicted:
            if reason == "preempt":
                self.preemptions += 1
            elif reason == "reclaim":
                self.reclaims += 1
        deserved = self.deserved
        share_of = self._share_of
        given = 0  # queues with a deserved share this session (each once: queue_metrics is a dict)
        t: float | None = None
        for q, m in queue_metrics.items():
            des = m.get("deserved")
            if des is None:
                continue
            got = share_of.get(q)
            if got is None or (got[0] is not des and not (
                    got[2] and des.milli_cpu == got[0].milli_cpu and des.scalars == got[0].scalars)):
                got = share_of[q] = (des, (des.milli_cpu / self.cpu_capacity if self.cpu_capacity else 0.0,
                                           _gpu_share(des, self.gpu_capacity)), _one_gpu_term(des))
            share = got[1]
            series = deserved.get(q)
            if series is None:
                series = deserved[q] = []
            given += 1
            if not series or series[-1][1:] != share:
                if t is None:
                    t = self.now()
                series.append((t, *share))
        if given != len(deserved):  # a queue sampled before and left out now deserves nothing
            zero = (0.0, 0.0)
            for q, series in deserved.items():
                left = queue_metrics.get(q)
                if (left is None or left.get("deserved") is None) and series[-1][1:] != zero:
                    if t is None:
                        t = self.now()
                    series.append((t, *zero))

    def drop_unarrived(self, t: float) -> None:
        """Forget the jobs due after simulated time ``t`` (a run stopped early: the report covers
        what arrived by then, as ``--until t`` would)."""
        for name in [n for n, a in self.arrivals.items() if a.time > t]:
            del self.arrivals[name]
            self.jobs.pop(name, None)

    def close(self) -> None:
        """Close open partial-gang intervals at the end of the run."""
        t = self.now()
        for js in self.jobs.values():
            if js.partial_since is not None:
                js.partial_seconds += t - js.partial_since
                js.partial_since = t


_GPU_KEYS = frozenset((GPU, GPU_NUMBER, GPU_MILLI, GPU_MEMORY))


def _one_gpu_term(res: Any) -> bool:
    """Whether :func:`_gpu_share` of ``res`` sums one non-zero term at most (adding a zero leaves a
    float sum as it is, so the order of the keys cannot change it)."""
    return sum(1 for k, v in (getattr(res, "scalars", None) or {}).items() if k in _GPU_KEYS and v) <= 1


def _gpu_share(res: Any, capacity_milli: int) -> float:
    scalars = getattr(res, "scalars", None) or {}
    milli = 0.0
    for k, v in scalars.items():  # a Resource's scalars are never changed: no copy needed
        if k in (GPU, GPU_NUMBER):
            milli += float(v)
        elif k in (GPU_MILLI, GPU_MEMORY):
            milli += float(v) / 1000
    return milli / capacity_milli if capacity_milli else 0.0


def _disrupted(status: Obj) -> bool:
    return any(c.get("type") == "DisruptionTarget" and c.get("status") == "True"
               for c in status.get("conditions") or [])


def _job_of_owner(md: Obj, jobs: dict[str, JobState]) -> str | None:
    for ref in md.get("ownerReferences") or []:
        if ref.get("name") in jobs:
            return str(ref["name"])
    return None
