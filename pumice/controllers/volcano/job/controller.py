"""The vcjob controller (``batch.volcano.sh/v1alpha1`` Job).

One reconcile of a Job:

1. reads the Job, its PodGroup and its Pods from the informer caches, as upstream reads its job
   cache and PodGroup lister; the Job as this controller last wrote it stands in for a cached one
   with an older resourceVersion (upstream jobCache.Update refuses an older version), and a write
   made from a stale cache fails with 409 Conflict and is retried (the work queue's backoff);
2. derives the job events upstream's informer handlers would have sent, by comparing the Pods
   (uid, phase, restart count) and the PodGroup phase with what this controller saw last time (kept
   in memory, as upstream keeps its job cache): PodPending, PodRunning, PodFailed (+ exit code),
   TaskCompleted, TaskFailed (the task's live Pods restarted maxRetry times), PodEvicted (a Pod that vanished without this controller deleting it;
   a Pod being deleted stays in the job until then, so its turn to Failed is PodFailed, as in
   upstream since v1.14's "keep terminating pod in job", c1c35de8a),
   Unknown (PodGroup phase became Unknown), OutOfSync; plus a pending ``bus.volcano.sh`` Command
   aimed at the Job (which is deleted and wins);
3. resolves the action from the task-level then job-level ``policies`` (first match; ``*``;
   exitCode; PodPending only with a timeout; a timeout delays the action, kept in memory and
   cancelled as upstream does) and defaults to SyncJob;
4. runs the step of the current phase from :data:`~pumice.controllers.volcano.job.state.JOB_STEPS`;
5. handles ``ttlSecondsAfterFinished`` (the Job is deleted that long after it finished).

Deviates: a kill counts the Pods it keeps (Succeeded/Failed) in the status counts (upstream
leaves them out, so a finished Job's counts drop to 0 on the next event); the "force
TerminateJob after N failed retries" of upstream is not done (failures retry with backoff).

Mirrors: volcano pkg/controllers/job/job_controller.go, job_controller_handler.go,
job_controller_actions.go, job_controller_util.go (applyPolicies) and
pkg/controllers/garbagecollector (TTL).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pumice._util.clock import Clock, parse_rfc3339, rfc3339
from pumice._util.duration import go_duration_string, parse_go_duration
from pumice.api import Obj, scheme
from pumice.api.meta import controller_of, deep_copy
from pumice.client.base import ContextCanceled, KubeClient, get_or_none, is_already_exists, is_not_found
from pumice.controllers.volcano import keys
from pumice.controllers.volcano.admission.jobs import mutate_job, validate_job_spec
from pumice.controllers.volcano.job import builders
from pumice.controllers.volcano.job import plugins as job_plugins
from pumice.controllers.volcano.job.state import (
    FINISHED,
    RETAIN_SOFT,
    StateAction,
    Target,
    UpdateFn,
    step_for,
)
from pumice.controllers.volcano.keys import Action, Event, JobPhase, PodGroupPhase
from pumice.runtime.reconcile import Result

log = logging.getLogger(__name__)

INTERNAL_EVENTS = frozenset({Event.OUT_OF_SYNC, Event.COMMAND_ISSUED, Event.POD_RUNNING})
_SYNC = StateAction(Action.SYNC_JOB)  # the usual action (immutable, shared)
_DONE = Result()  # the usual outcome (immutable, shared)
INTERNAL_ACTIONS = frozenset({Action.SYNC_JOB, Action.ENQUEUE_JOB, Action.SYNC_QUEUE, Action.OPEN_QUEUE,
                              Action.CLOSE_QUEUE})


class JobEvent(NamedTuple):
    """One derived job event (upstream apis.Request); a NamedTuple, cheap to make (one or two
    per reconcile)."""

    event: Event
    task: str = ""
    pod: str = ""
    pod_uid: str = ""
    exit_code: int = 0
    version: int = 0


@dataclass
class Delayed:
    event: Event
    action: Action
    target: Target | None
    deadline: float
    pod: str
    pod_uid: str
    task: str


@dataclass
class _Memory:
    pods: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # name -> (uid, phase, restarts)
    killed: set[str] = field(default_factory=set)  # pod uids this controller deleted
    pg_phase: str = ""
    delayed: dict[str, Delayed] = field(default_factory=dict)  # pod name -> delayed action


def _events_of(policy: Obj) -> list[str]:
    ev = list(policy.get("events") or [])
    if policy.get("event"):
        ev.append(policy["event"])
    return ev


def policy_timeout(v: Any) -> float:
    """A policy's ``timeout`` (a metav1.Duration string such as ``"10s"``, or a number) in seconds.

    Raises:
        ValueError: a string that is not a Go duration (the admission webhook refuses those).
    """
    return float(v) if isinstance(v, int | float) else parse_go_duration(str(v))


#: Warning event reason of a Job that admission would have refused (pumice's own: upstream relies on
#: the webhook and has none)
INVALID_JOB_REASON = "InvalidJob"


def defaulted_and_checked(job: Obj) -> tuple[Obj, str]:
    """``job`` with the CREATE defaults of ``mutatejob.volcano.sh`` (task names, minAvailable,
    queue, maxRetry) applied on a copy when it lacks them, and the message of the reader-free
    ``validatejob.volcano.sh`` checks ("" when valid).

    The webhook applies and checks both at admission; on a cluster where it is not installed the
    controller still runs the Job as upstream's webhook would have left it, and refuses (with an
    event, see :data:`INVALID_JOB_REASON`) one the webhook would have refused. Nothing is written
    back: the defaults are derived again at each pass, so Pod names stay stable."""
    candidate = deep_copy(job)
    mutate_job(candidate, str((job.get("spec") or {}).get("schedulerName") or keys.DEFAULT_SCHEDULER_NAME))
    checked = candidate
    if any(v.get("volumeClaim") is not None and v.get("volumeClaimName") for v in (candidate.get("spec") or {}).get("volumes") or []):
        # the claim names this controller wrote back (see _Ops.create_job_io) are checked as at
        # the Job's creation, before they were there (upstream's update check ignores them too)
        checked = deep_copy(candidate)
        for v in checked["spec"]["volumes"]:
            if v.get("volumeClaim") is not None:
                v.pop("volumeClaimName", None)
    problem = validate_job_spec(checked)
    return (job if candidate.get("spec") == job.get("spec") else candidate), problem


def apply_policies(job: Obj, ev: JobEvent) -> tuple[Action, float]:
    """The action (and its delay in seconds) for one event (upstream applyPolicies)."""
    if ev.event in INTERNAL_EVENTS:
        return Action.SYNC_JOB, 0.0
    status_version = int((job.get("status") or {}).get("version") or 0)
    if ev.version < status_version:
        return Action.SYNC_JOB, 0.0

    def match(policy: Obj) -> tuple[Action, float] | None:
        events = _events_of(policy)
        hit = bool(events) and (ev.event in events or Event.ANY in events) and (
            ev.event != Event.POD_PENDING or policy.get("timeout") is not None)
        if not hit and policy.get("exitCode") is not None:
            hit = int(policy["exitCode"]) == ev.exit_code and ev.exit_code != 0
        if hit:
            return Action(str(policy.get("action") or "")), policy_timeout(policy.get("timeout") or 0)
        return None

    if ev.task:
        for t in builders.tasks(job):
            if t.get("name") == ev.task:
                for p in t.get("policies") or []:
                    r = match(p)
                    if r:
                        return r
                break
    for p in (job.get("spec") or {}).get("policies") or []:
        r = match(p)
        if r:
            return r
    return Action.SYNC_JOB, 0.0


def target_of(action: Action, ev: JobEvent | None) -> Target | None:
    if ev is None:
        return None
    if action == Action.RESTART_TASK:
        return Target("task", task_name=ev.task)
    if action == Action.RESTART_POD:
        return Target("pod", task_name=ev.task, pod_name=ev.pod)
    if action == Action.RESTART_PARTITION:
        return Target("partition", task_name=ev.task, pod_name=ev.pod)
    return None


def _action_type(a: Action) -> str:
    return {Action.RESTART_TASK: "task", Action.RESTART_POD: "pod",
            Action.RESTART_PARTITION: "partition"}.get(a, "job")


def _phase(obj: Obj | None) -> str:
    return str(((obj or {}).get("status") or {}).get("phase") or "")


def _pod_phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _ann(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _restarts(pod: Obj) -> int:
    """The restart count summed over the Pod's init and main container statuses."""
    st = pod.get("status") or {}
    n = 0
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in st.get(key) or ():
            r = cs.get("restartCount")
            if r:
                n += int(r)
    return n


def _exit_code(pod: Obj) -> int:
    cs = (pod.get("status") or {}).get("containerStatuses") or []
    if cs:
        term = (cs[0].get("state") or {}).get("terminated") or {}
        return int(term.get("exitCode") or 0)
    return 0


def classify(pods: list[Obj]) -> tuple[dict[str, int], dict[str, Obj]]:
    """Counts (pending/running/succeeded/failed/unknown) and taskStatusCount of live Pods."""
    counts = {"pending": 0, "running": 0, "succeeded": 0, "failed": 0, "unknown": 0}
    per_task: dict[str, Obj] = {}
    name = {"Pending": "pending", "Running": "running", "Succeeded": "succeeded", "Failed": "failed"}
    for pod in pods:
        ph = _pod_phase(pod)
        counts[name.get(ph, "unknown")] += 1
        task = _ann(pod).get(keys.TASK_SPEC_KEY)
        if task is None:
            continue
        phases = per_task.setdefault(task, {"phase": {}})["phase"]
        key = ph if ph in name else "Unknown"
        phases[key] = phases.get(key, 0) + 1
    return counts, per_task


class JobReconciler:
    """Reconciles one vcjob (Request = namespace/name)."""

    def __init__(self, client: KubeClient, *, jobs: Any, pods: Any, podgroups: Any, queues: Any, commands: Any,
                 priorityclasses: Any = None, clock: Clock, recorder: Any = None) -> None:
        self.client = client
        self.jobs = jobs
        self.pods = pods
        self.podgroups = podgroups
        self.queues = queues
        self.commands = commands
        self.priorityclasses = priorityclasses
        self.clock = clock
        self.recorder = recorder
        self.plugin_client = job_plugins.PluginClient(client)
        # "ns/name" -> (uid, what this controller saw of that Job last time); a Job made again
        # under the same name (another uid) starts with a fresh memory
        self._mem: dict[str, tuple[str, _Memory]] = {}
        # "ns/name" -> the Job as this controller's last status write returned it, until the
        # informer has that version (upstream's job cache, updated with each write's result)
        self._written: dict[str, Obj] = {}
        self._sweep_at = _SWEEP_MIN
        # "ns/name" -> (uid, generation, defaulted spec or None when unchanged, problem)
        self._defaults: dict[str, tuple[str, int, Obj | None, str]] = {}
        # "ns/name" -> (uid, generation, the task templates' PriorityClass names (() when none is
        # named), their values, the PodGroup spec the Job wants)
        self._pg_specs: dict[str, tuple[Any, Any, tuple[str, ...], tuple[int | None, ...], Obj]] = {}

    # -- reading -------------------------------------------------------------------------------

    def priority_of(self, name: str) -> int | None:
        if self.priorityclasses is None:
            return None
        pc = self.priorityclasses.get(None, name)
        return int(pc.get("value", 0)) if pc else None

    def job_pods(self, job: Obj) -> list[Obj]:
        uid = job["metadata"].get("uid", "")
        pods = self.pods.by_index("owner-uid", uid) if uid else []
        return sorted(pods, key=lambda p: p["metadata"]["name"])

    def current_job(self, namespace: str, name: str) -> Obj | None:
        """The Job from the informer cache, or the one this controller's last status write
        returned when the cache still holds an older resourceVersion of it; None when the cache
        has no such Job (deleted). Read-only: shared with every reader of the cache.

        Mirrors: volcano pkg/controllers/cache/cache.go jobCache.Update (an older resourceVersion
        never replaces a newer one)."""
        cached = self.jobs.get(namespace, name)
        key = f"{namespace}/{name}"
        mine = self._written.get(key)
        if mine is None:
            return cached
        if cached is not None and _newer(mine, cached):
            return mine
        del self._written[key]
        return cached

    def forget(self, job: Obj) -> None:
        """Drop what this controller remembers of ``job`` (the last known state of a deleted
        Job: its informer's delete event): the memory of that uid, the derived defaults and
        PodGroup spec, and its last written version. A reconcile of the Job that is under way
        drops its memory at its end (it finds the Job gone from the cache).

        Mirrors: volcano pkg/controllers/job job_controller_handler.go deleteJob (the Job
        leaves the controller's cache; nothing is enqueued)."""
        md = job.get("metadata") or {}
        key = f"{md.get('namespace') or ''}/{md.get('name', '')}"
        seen = self._mem.get(key)
        if seen is not None and seen[0] == str(md.get("uid", "")):
            del self._mem[key]
        self._defaults.pop(key, None)
        self._pg_specs.pop(key, None)
        mine = self._written.get(key)
        if mine is not None and mine["metadata"].get("uid") == md.get("uid"):
            del self._written[key]

    def _remember_write(self, job: Obj) -> None:
        """Keep ``job`` (an API answer) until the informer cache has caught up with it; drop the
        entries it has caught up with whenever the map doubled since the last sweep."""
        md = job["metadata"]
        self._written[f"{md.get('namespace') or ''}/{md['name']}"] = job
        if len(self._written) < self._sweep_at:
            return
        for key, mine in list(self._written.items()):
            ns, _, name = key.partition("/")
            cached = self.jobs.get(ns, name)
            if cached is None or not _newer(mine, cached):
                del self._written[key]
        self._sweep_at = max(_SWEEP_MIN, 2 * len(self._written))

    def defaulted(self, job: Obj) -> tuple[Obj, str]:
        """:func:`defaulted_and_checked` of ``job``, remembered per Job uid and generation (the
        defaults and checks read only the spec, which changes only with the generation)."""
        md = job["metadata"]
        gen = md.get("generation")
        if gen is None:
            return defaulted_and_checked(job)
        key = f"{md.get('namespace') or ''}/{md['name']}"
        uid = str(md.get("uid") or "")
        hit = self._defaults.get(key)
        if hit is None or hit[0] != uid or hit[1] != gen:
            out, problem = defaulted_and_checked(job)
            hit = (uid, gen, None if out is job else out["spec"], problem)
            self._defaults[key] = hit
            return out, problem
        spec, problem = hit[2], hit[3]
        return (job if spec is None else {**job, "spec": spec}), problem

    def wanted_podgroup_spec(self, job: Obj) -> Obj:
        """:func:`~pumice.controllers.volcano.job.builders.podgroup_spec` of ``job``, remembered
        per Job uid, generation and the values of its task templates' PriorityClasses (all it is
        computed from). Read-only."""
        md = job["metadata"]
        gen = md.get("generation")
        if gen is None:
            return builders.podgroup_spec(job, self.priority_of)
        uid = md.get("uid")
        key = f"{md.get('namespace') or ''}/{md['name']}"
        hit = self._pg_specs.get(key)
        if hit is not None and hit[0] == uid and hit[1] == gen:
            # the templates' PriorityClass names move only with the generation; their values may
            # change at any time, so they are read again (none named: nothing to read)
            pcs = hit[2]
            if not pcs or tuple(self.priority_of(pc) if pc else None for pc in pcs) == hit[3]:
                return hit[4]
        else:
            named = tuple(((t.get("template") or {}).get("spec") or {}).get("priorityClassName") or ""
                          for t in builders.tasks(job))
            pcs = named if any(named) else ()
        prios = tuple(self.priority_of(pc) if pc else None for pc in pcs)
        spec = builders.podgroup_spec(job, self.priority_of)
        self._pg_specs[key] = (uid, gen, pcs, prios, spec)
        return spec

    def get_podgroup(self, job: Obj) -> Obj | None:
        """The Job's PodGroup from the informer cache (read-only), or None."""
        return self.podgroups.get(job["metadata"].get("namespace"), builders.podgroup_name(job))

    def _event(self, obj: Obj, etype: str, reason: str, message: str) -> None:
        if self.recorder is not None:
            try:
                self.recorder.event(obj, etype, reason, message)
            except Exception:  # events are best effort
                log.debug("event not recorded", exc_info=True)

    # -- events --------------------------------------------------------------------------------

    def observe(self, job: Obj, pods: list[Obj], pg: Obj | None, mem: _Memory) -> tuple[list[JobEvent], _Memory]:
        """Derive job events from what changed since ``mem``; returns them and the new memory."""
        new = _Memory(pods={}, killed=set(mem.killed), pg_phase=_phase(pg), delayed=dict(mem.delayed))
        events: list[JobEvent] = []
        # read only for the rare events that need them (a Pod that succeeded or restarted)
        succeeded: dict[str, int] | None = None
        retried: dict[str, int] | None = None

        def task_completed(task: str) -> bool:
            nonlocal succeeded
            if succeeded is None:
                succeeded = {}
                for p in pods:
                    if _pod_phase(p) == "Succeeded":
                        tn = _ann(p).get(keys.TASK_SPEC_KEY, "")
                        succeeded[tn] = succeeded.get(tn, 0) + 1
            return succeeded.get(task, 0) >= _task_replicas(job, task)

        def task_failed(task: str) -> bool:
            """Upstream jobCache.TaskFailed: the task's live Pods restarted maxRetry times."""
            nonlocal retried
            replicas, max_retry = 0, 3
            for t in builders.tasks(job):
                if t.get("name", "") == task:
                    replicas, max_retry = int(t.get("replicas") or 0), int(t.get("maxRetry") or 3)
            if replicas == 0 or max_retry == -1:
                return False
            if retried is None:
                retried = {}
                for p in pods:
                    if _pod_phase(p) in ("Running", "Pending"):
                        tn = _ann(p).get(keys.TASK_SPEC_KEY, "")
                        retried[tn] = retried.get(tn, 0) + _restarts(p)
            return retried.get(task, 0) >= max_retry

        seen = mem.pods
        killed = mem.killed
        unversioned: set[str] = set()  # live, but not remembered: a job version that is no number
        for p in pods:
            md = p["metadata"]
            name, uid, ph = md["name"], md.get("uid", ""), _pod_phase(p)
            ann = md.get("annotations") or {}
            try:
                version = int(ann.get(keys.JOB_VERSION, "0"))
            except ValueError:
                unversioned.add(name)
                continue
            restarts = _restarts(p)
            new.pods[name] = (uid, ph, restarts)
            prev = seen.get(name)
            if prev is not None and prev[0] == uid and prev[1] == ph and (
                    prev[2] == restarts or ph not in ("Running", "Pending")):
                continue  # nothing this Pod shows changed
            task = ann.get(keys.TASK_SPEC_KEY, "")
            out_of_sync = keys.OUT_OF_SYNC_KEY in ann or uid in killed
            ev: Event | None = None
            code = 0
            if prev is None or prev[0] != uid:
                ev = Event.OUT_OF_SYNC if out_of_sync else Event.POD_PENDING
            elif prev[1] != ph:
                if ph == "Failed":
                    ev, code = Event.POD_FAILED, _exit_code(p)
                elif ph == "Succeeded":
                    ev = Event.TASK_COMPLETED if task_completed(task) else Event.OUT_OF_SYNC
                elif ph == "Running":
                    ev = Event.POD_RUNNING
                elif ph == "Pending":
                    ev = Event.POD_PENDING
                else:
                    ev = Event.OUT_OF_SYNC
                if out_of_sync:
                    ev = Event.OUT_OF_SYNC
            else:  # only the restart count moved, on a live Pod
                ev = Event.OUT_OF_SYNC if out_of_sync or not task_failed(task) else Event.TASK_FAILED
            events.append(JobEvent(ev, task, name, uid, code, version))
        if any(name not in new.pods for name in seen):
            for name, (uid, _ph, _r) in sorted(seen.items()):
                if name in new.pods or name in unversioned:
                    continue
                ev = Event.OUT_OF_SYNC if uid in killed else Event.POD_EVICTED
                # the deleted Pod's task and version are not in the cache any more: recover them
                task, version = _task_of(job, name), int((job.get("status") or {}).get("version") or 0)
                events.append(JobEvent(ev, task, name, uid, 0, version))
                new.killed.discard(uid)
        if pg is not None and new.pg_phase != mem.pg_phase and new.pg_phase == PodGroupPhase.UNKNOWN:
            events.append(JobEvent(Event.JOB_UNKNOWN, version=int((job.get("status") or {}).get("version") or 0)))
        return events, new

    async def take_command(self, job: Obj) -> Action | None:
        """The action of ``job``'s oldest Command with a known action, which is deleted (as the older
        ones with an unknown action are); None when there is none. The caller skips the call when
        there is no Command anywhere (the usual case)."""
        md = job["metadata"]
        mine = [c for c in self.commands.list(md.get("namespace"))
                if (c.get("target") or {}).get("kind") == "Job" and (c.get("target") or {}).get("name") == md["name"]]
        mine.sort(key=lambda c: (c["metadata"].get("creationTimestamp", ""), c["metadata"]["name"]))
        for cmd in mine:
            try:
                await self.client.delete(scheme.COMMAND, cmd["metadata"]["name"], cmd["metadata"].get("namespace"))
            except Exception as e:
                if is_not_found(e):
                    continue
                raise
            self._event(job, "Normal", "CommandIssued",
                        f"Start to execute command {cmd.get('action')}, and clean it up to make sure executed "
                        "not more than once.")
            try:
                return Action(cmd.get("action") or "")
            except ValueError:
                log.warning("job %s: ignoring command with unknown action %r", md["name"], cmd.get("action"))
        return None

    # -- reconcile ---------------------------------------------------------------------------

    async def reconcile(self, req: Any) -> Any:
        job = self.current_job(req.namespace, req.name)
        key = f"{req.namespace}/{req.name}"
        if job is None:
            self._mem.pop(key, None)
            self._defaults.pop(key, None)
            self._pg_specs.pop(key, None)
            return Result()
        if job["metadata"].get("deletionTimestamp"):
            return Result()
        job, problem = self.defaulted(job)
        if problem:
            # without the admission webhook (a real cluster that has not installed it) an invalid
            # Job would otherwise create and delete Pods in a loop or wait forever in silence
            self._event(job, "Warning", INVALID_JOB_REASON, f"the job cannot run: {problem.strip()}")
            return Result()
        uid = str(job["metadata"].get("uid", ""))
        seen = self._mem.get(key)
        mem = seen[1] if seen is not None and seen[0] == uid else _Memory()
        pods = self.job_pods(job)
        pg = self.get_podgroup(job)
        events, new_mem = self.observe(job, pods, pg, mem)
        # the time matters only to delayed actions: without an event or a delayed action none is
        # made, due or waited for (nothing below adds one), so the clock is not read
        now = self.clock.now() if events or new_mem.delayed else 0.0

        # cancel delayed actions the way upstream's CleanPodDelayActionsIfNeed does
        for ev in events:
            d = new_mem.delayed.get(ev.pod)
            if d is None or ev.event == Event.POD_PENDING:
                continue
            if (d.event == Event.POD_PENDING and d.pod_uid == ev.pod_uid) or (
                    d.event in (Event.POD_FAILED, Event.POD_EVICTED) and ev.event == Event.POD_RUNNING):
                del new_mem.delayed[ev.pod]

        act = _SYNC
        chosen: JobEvent | None = None
        # no Command anywhere (the usual case): nothing to take, and no coroutine made for it
        cmd = await self.take_command(job) if len(self.commands) else None
        if cmd is not None:
            act = StateAction(cmd)
        else:
            for ev in events:
                action, delay = apply_policies(job, ev)
                if delay > 0:
                    new_mem.delayed[ev.pod] = Delayed(ev.event, action, target_of(action, ev), now + delay,
                                                      ev.pod, ev.pod_uid, ev.task)
                    self._event(job, "Normal", "ExecuteAction", f"Execute action {action} after {go_duration_string(max(delay, 0.0))}")
                    continue
                if action != Action.SYNC_JOB:
                    act, chosen = StateAction(action, target_of(action, ev)), ev
                    break
            if act.action == Action.SYNC_JOB and new_mem.delayed:
                due = sorted((d for d in new_mem.delayed.values() if d.deadline <= now), key=lambda d: d.deadline)
                if due:
                    d = due[0]
                    act = StateAction(d.action, d.target)
                    chosen = JobEvent(d.event, d.task, d.pod, d.pod_uid)
                    new_mem.delayed.pop(d.pod, None)
        if act.action != Action.SYNC_JOB:
            self._event(job, "Normal", "ExecuteAction", f"Start to execute action {act.action} ")
        ops = _Ops(self, job, pods, pg, new_mem)
        await step_for(str(((job.get("status") or {}).get("state") or {}).get("phase") or ""))(ops, act)
        if act.action not in INTERNAL_ACTIONS:
            at = _action_type(act.action)
            for pname, d in list(new_mem.delayed.items()):
                if _action_type(d.action) != at:
                    continue
                if at == "task" and chosen is not None and d.task != chosen.task:
                    continue
                if at in ("pod", "partition") and chosen is not None and d.pod != chosen.pod:
                    continue
                del new_mem.delayed[pname]
        cached = self.jobs.get(req.namespace, req.name)
        if cached is not None and cached["metadata"].get("uid") == job["metadata"].get("uid"):
            self._mem[key] = (uid, new_mem)
        else:  # deleted while this reconcile ran: its delete event has passed (see forget)
            self._mem.pop(key, None)

        waits = [d.deadline - now for d in new_mem.delayed.values()]
        ttl_wait = None
        if (ops.job.get("spec") or {}).get("ttlSecondsAfterFinished") is not None:  # else nothing to await
            ttl_wait = await self._ttl(ops.job)
        if ttl_wait is not None:
            waits.append(ttl_wait)
        waits = [max(w, 0.001) for w in waits]
        return Result(requeue_after=min(waits)) if waits else _DONE

    async def _ttl(self, job: Obj) -> float | None:
        """Delete a finished Job once ``ttlSecondsAfterFinished`` passed; else seconds to wait."""
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        state = (job.get("status") or {}).get("state") or {}
        if ttl is None or state.get("phase") not in FINISHED:
            return None
        since = state.get("lastTransitionTime")
        finished = parse_rfc3339(since) if since else self.clock.now()
        left = finished + float(ttl) - self.clock.now()
        if left > 0:
            return left
        try:
            await self.client.delete(scheme.VCJOB, job["metadata"]["name"], job["metadata"].get("namespace"),
                                     propagation_policy="Background")
        except Exception as e:
            if not is_not_found(e):
                raise
        return None


def _task_replicas(job: Obj, task: str) -> int:
    """``replicas`` of the Job's task named ``task`` (the last of that name; 0 when none)."""
    n = 0
    for t in builders.tasks(job):
        if t.get("name", "") == task:
            n = int(t.get("replicas") or 0)
    return n


def _task_of(job: Obj, pod_name: str) -> str:
    jname = job["metadata"]["name"]
    for t in builders.tasks(job):
        prefix = f"{jname}-{t.get('name', '')}-"
        rest = pod_name[len(prefix):] if pod_name.startswith(prefix) else ""
        if rest.isdigit():
            return str(t.get("name", ""))
    return ""


class _Ops:
    """The three primitives of the phase table over one Job (see state.py)."""

    def __init__(self, r: JobReconciler, job: Obj, pods: list[Obj], pg: Obj | None, mem: _Memory) -> None:
        self.r = r
        # a shallow copy: the cached Job is shared; the steps only ever replace its status (with
        # a copy they own), never change a part of it in place
        self.job = dict(job)
        self.pods = pods
        self.pg = pg
        self.mem = mem

    @property
    def now(self) -> str:
        return rfc3339(self.r.clock.now())

    def _plugins(self) -> list[job_plugins.JobPlugin]:
        named = (self.job.get("spec") or {}).get("plugins")
        if not named:
            return []
        out = []
        for name, args in sorted(named.items()):
            try:
                out.append(job_plugins.build(name, list(args or [])))
            except KeyError as e:
                self.r._event(self.job, "Warning", "PluginError", str(e))
        return out

    def _stamp(self, status: Obj) -> None:
        state = status.setdefault("state", {})
        state["lastTransitionTime"] = self.now
        cond = {"status": state.get("phase", ""), "lastTransitionTime": state["lastTransitionTime"]}
        status["conditions"] = [c for c in status.get("conditions") or [] if c.get("status") != cond["status"]] + [cond]

    async def _write_status(self, status: Obj) -> None:
        obj = {**self.job, "status": status}
        try:
            self.job = await self.r.client.update_status(obj)
        except Exception as e:
            if is_not_found(e):
                return
            raise
        self.r._remember_write(self.job)

    async def _ensure_podgroup(self) -> None:
        job = self.job
        if self.pg is None:
            pg = builders.build_podgroup(job, self.r.priority_of, spec=self.r.wanted_podgroup_spec(job))
            try:
                self.pg = await self.r.client.create(pg)
            except Exception as e:
                if not is_already_exists(e):
                    raise
                # the cache has not seen it yet (or it was made meanwhile): read it
                self.pg = await get_or_none(self.r.client, scheme.POD_GROUP, pg["metadata"]["name"],
                                            pg["metadata"].get("namespace"))
            return
        upd = builders.podgroup_spec_update(self.pg, job, self.r.priority_of, want=self.r.wanted_podgroup_spec(job))
        if upd is not None:
            self.pg = await self.r.client.update(upd)

    async def sync_job(self, update: UpdateFn | None) -> None:
        """Mirrors: volcano pkg/controllers/job job_controller_actions.go syncJob: run the job
        plugins, while the Job is Pending make sure the claims of its ``spec.volumes`` exist
        (:meth:`create_job_io`; only Jobs with volumes), make sure the PodGroup exists, and (once
        it is past Pending) create and delete Pods toward the tasks' replicas, then write the
        status counted from them."""
        job = self.job
        spec = job.get("spec") or {}
        if self.r.queues.get(None, spec.get("queue") or keys.DEFAULT_QUEUE) is None:
            raise RuntimeError(f"queue {spec.get('queue')!r} of job {job['metadata']['name']} not found")
        status: Obj = _own_status(job.get("status") or {})
        original = job.get("status") or {}  # read only: compared, never changed
        job["status"] = status
        plugins = self._plugins()
        await self._run_plugins(status, spec, plugins)
        if spec.get("volumes") and (status.get("state") or {}).get("phase") == JobPhase.PENDING:
            await self._job_io_or_pending(status, original, update)
            spec = self.job.get("spec") or {}
        await self._ensure_podgroup()
        pg_phase = _phase(self.pg)
        if not pg_phase or pg_phase == PodGroupPhase.PENDING:
            await self._write_pending_status(status, original, update)
            return
        live, to_create, to_delete, terminating = self._diff_pods(plugins)
        created = await self._create_pods(to_create) if to_create else []
        for pod in to_delete:
            if await self._delete_pod(pod):
                terminating += 1
        new_status = self._counted_status(status, spec, [*live, *created], terminating)
        if update is not None:
            update(new_status)
        if _same_status(new_status, original):
            return
        if (new_status.get("state") or {}).get("phase") != (original.get("state") or {}).get("phase") \
                or not _same_status(new_status, status):
            self._stamp(new_status)
        await self._write_status(new_status)

    async def _run_plugins(self, status: Obj, spec: Obj, plugins: list[job_plugins.JobPlugin]) -> None:
        """A new Job becomes Pending (minAvailable, stamped) and its plugins' OnJobAdd run while
        it is Pending; afterwards OnJobUpdate."""
        phase = (status.get("state") or {}).get("phase") or ""
        if phase in ("", JobPhase.PENDING):
            if phase == "":
                status.setdefault("state", {})["phase"] = str(JobPhase.PENDING)
                status["minAvailable"] = int(spec.get("minAvailable") or 0)
                self._stamp(status)
            status.setdefault("controlledResources", {})
            for p in plugins:
                await p.on_job_add(self.job, self.r.plugin_client)
        else:
            for p in plugins:
                await p.on_job_update(self.job, self.r.plugin_client)

    async def _job_io_or_pending(self, status: Obj, original: Obj, update: UpdateFn | None) -> None:
        """:meth:`create_job_io`; when it fails, a ``PVCError`` Warning, the Pending status
        written (as upstream's initJobStatus had written it before) and the error raised (the
        work queue retries with backoff).

        Mirrors: volcano job_controller_actions.go initiateJob."""
        before = dict(status.get("controlledResources") or {})
        try:
            await self.create_job_io(status)
        except Exception as e:
            self.r._event(self.job, "Warning", "PVCError", f"Failed to create PVC, err: {e}")
            status["controlledResources"] = before
            await self._write_pending_status(status, original, update)
            raise

    async def create_job_io(self, status: Obj) -> None:
        """Make sure each of the Job's ``spec.volumes`` has its claim and record it in
        ``status.controlledResources`` as ``volume-pvc-<claim>: <claim>``.

        A volume without ``volumeClaimName`` gets a generated one (:func:`builders.gen_pvc_name`,
        drawn again while a claim of that name exists that this Job does not control) and, when
        it has a ``volumeClaim``, the claim is created with that spec, controlled by the Job; the
        names are then written into the Job's spec (one update). A drawn name whose claim this
        Job already controls (by ownerReference uid: an earlier try created it, then its spec
        write failed) is taken as it is, so a retry makes no second claim. A volume that names its claim needs that claim to exist.

        Raises:
            RuntimeError: ``pvc <name> is not found, the job will be in the Pending state until
                the PVC is created`` (upstream's text) for a named claim that does not exist.
            ApiError: reading or creating a claim, or updating the Job, failed.

        Mirrors: volcano job_controller_actions.go createJobIOIfNotExist, checkPVCExist, createPVC.
        Deviates: the claims are read from the API server, not from an informer cache (only Jobs
        with volumes pay for it); the generated names come from a generator seeded with the
        Job's uid and the volume's index instead of the wall clock, which lets a retry find the
        claim its failed try made (upstream draws a new name and leaves one more claim)."""
        job = self.job
        md = job["metadata"]
        ns = md.get("namespace") or "default"
        volumes: list[Obj] = (job.get("spec") or {}).get("volumes") or []
        resources = status.setdefault("controlledResources", {})
        named: list[Obj] | None = None
        for i, vol in enumerate(volumes):
            claim = str(vol.get("volumeClaimName") or "")
            if not claim:
                rng = random.Random(f"{md.get('uid', '')}/{i}")
                claim = builders.gen_pvc_name(md["name"], rng)
                mine = False
                while (found := await get_or_none(self.r.client, scheme.PERSISTENT_VOLUME_CLAIM, claim, ns)) is not None:
                    ref = controller_of(found)
                    if ref is not None and ref.get("uid") == md.get("uid"):
                        mine = True  # made by an earlier try whose spec write failed
                        break
                    claim = builders.gen_pvc_name(md["name"], rng)
                if named is None:
                    named = [dict(v) for v in volumes]
                named[i]["volumeClaimName"] = claim
                if vol.get("volumeClaim") is not None and not mine:
                    await self.r.client.create(builders.build_pvc(job, claim, vol["volumeClaim"]))
            elif not await self._claim_exists(ns, claim):
                raise RuntimeError(f"pvc {claim} is not found, the job will be in the Pending state until the PVC is created")
            resources[f"volume-pvc-{claim}"] = claim
        if named is not None:
            await self._write_claim_names(named)

    async def _claim_exists(self, namespace: str, name: str) -> bool:
        return await get_or_none(self.r.client, scheme.PERSISTENT_VOLUME_CLAIM, name, namespace) is not None

    async def _write_claim_names(self, volumes: list[Obj]) -> None:
        """Update the stored Job's ``spec.volumes`` to ``volumes`` (the generated claim names
        filled in); :attr:`job` takes the answer's metadata and keeps its spec and status."""
        md = self.job["metadata"]
        stored = self.r.current_job(md.get("namespace") or "default", md["name"])
        if stored is None or stored["metadata"].get("uid") != md.get("uid"):
            raise RuntimeError(f"job {md.get('namespace')}/{md['name']} changed while its claims were made")
        answer = await self.r.client.update({**stored, "spec": {**stored["spec"], "volumes": volumes}})
        self.r._remember_write(answer)
        self.job = {**answer, "spec": {**self.job["spec"], "volumes": volumes}, "status": self.job.get("status")}

    async def _write_pending_status(self, status: Obj, original: Obj, update: UpdateFn | None) -> None:
        """While the PodGroup is Pending no Pods are made; only the status (and ``update``) is written."""
        if update is not None:
            update(status)
        if status != original:
            if (status.get("state") or {}) != (original.get("state") or {}):
                self._stamp(status)
            await self._write_status(status)

    def _diff_pods(self, plugins: list[job_plugins.JobPlugin]
                   ) -> tuple[list[Obj], list[tuple[Obj, Obj]], list[Obj], int]:
        """``(live Pods, (task, Pod) to create, Pods to delete, terminating count)``: each task
        replica's Pod by name; out-of-sync or killed Pods and Pods of no replica are deleted."""
        job = self.job
        terminating = 0
        live: list[Obj] = []
        by_name = {p["metadata"]["name"]: p for p in self.pods}
        to_create: list[tuple[Obj, Obj]] = []
        to_delete: list[Obj] = []
        for task in builders.tasks(job):
            tname = task.get("name", "")
            for i in range(int(task.get("replicas") or 0)):
                pname = builders.pod_name(job["metadata"]["name"], tname, i)
                pod = by_name.pop(pname, None)
                if pod is None:
                    to_create.append((task, self._new_pod(task, i, plugins)))
                    continue
                if pod["metadata"].get("deletionTimestamp"):
                    terminating += 1
                    continue
                if keys.OUT_OF_SYNC_KEY in _ann(pod) or pod["metadata"].get("uid") in self.mem.killed:
                    to_delete.append(pod)
                live.append(pod)
        for p in by_name.values():  # Pods of no replica (usually none)
            if p["metadata"].get("deletionTimestamp"):
                terminating += 1
            else:
                to_delete.append(p)
        return live, to_create, to_delete, terminating

    async def _create_pods(self, to_create: list[tuple[Obj, Obj]]) -> list[Obj]:
        """Create the Pods whose task dependencies are ready; a failure other than AlreadyExists
        is a FailedCreatePod Warning and raised (a stop's ContextCanceled is raised alone)."""
        created: list[Obj] = []
        for task, pod in to_create:
            if not self._depends_on_ready(task):
                continue
            try:
                created.append(await self.r.client.create(pod))
            except ContextCanceled:  # the controller is stopping: no FailedCreatePod for that
                raise
            except Exception as e:
                if not is_already_exists(e):
                    self.r._event(self.job, "Warning", "FailedCreatePod", f"Error creating pods: {e}")
                    raise
        return created

    @staticmethod
    def _counted_status(status: Obj, spec: Obj, pods: list[Obj], terminating: int) -> Obj:
        """The status with the Pod counts (per phase and per task) of ``pods``: a new dict with
        its own ``state``, ``controlledResources`` and ``conditions`` containers (see
        :func:`_own_status`)."""
        counts = {"pending": 0, "running": 0, "succeeded": 0, "failed": 0, "unknown": 0}
        c, per_task = classify(pods)
        counts.update(c)
        new_status: Obj = {
            "state": dict(status.get("state") or {}),
            **counts,
            "terminating": terminating,
            "version": int(status.get("version") or 0),
            "minAvailable": int(spec.get("minAvailable") or 0),
            "taskStatusCount": per_task,
            "controlledResources": dict(status.get("controlledResources") or {}),
            "conditions": list(status.get("conditions") or []),
            "retryCount": int(status.get("retryCount") or 0),
        }
        if "runningDuration" in status:
            new_status["runningDuration"] = status["runningDuration"]
        return new_status

    def _new_pod(self, task: Obj, index: int, plugins: list[job_plugins.JobPlugin]) -> Obj:
        pod = builders.build_pod(self.job, task, index)
        for p in plugins:
            p.on_pod_create(pod, self.job)
        return pod

    def _depends_on_ready(self, task: Obj) -> bool:
        dep = task.get("dependsOn")
        if not dep or not dep.get("name"):
            return True
        names = list(dep["name"])
        if len(names) > 1 and dep.get("iteration") == "any":
            return any(self._task_ready(n) for n in names)
        return all(self._task_ready(n) for n in names)

    def _task_ready(self, task_name: str) -> bool:
        task = next((t for t in builders.tasks(self.job) if t.get("name") == task_name), None)
        if task is None:
            return True
        ready = 0
        for p in self.pods:
            if _ann(p).get(keys.TASK_SPEC_KEY) != task_name:
                continue
            ph = _pod_phase(p)
            if ph == "Succeeded" or (ph == "Running" and all(cs.get("ready") for cs in (p.get("status") or {}).get("containerStatuses") or [])):
                ready += 1
        if task.get("minAvailable") is not None:
            return ready >= int(task["minAvailable"])
        return True

    async def _delete_pod(self, pod: Obj) -> bool:
        md = pod["metadata"]
        try:
            await self.r.client.delete(scheme.POD, md["name"], md.get("namespace"))
        except Exception as e:
            if not is_not_found(e):
                log.warning("failed to delete pod %s: %s", md["name"], e)
                return False
        self.mem.killed.add(md.get("uid", ""))
        return True

    async def kill_job(self, retain: frozenset[str], update: UpdateFn | None) -> None:
        await self._kill(retain, None, update)

    async def kill_target(self, target: Target, update: UpdateFn | None) -> None:
        await self._kill(frozenset(), target, update)

    async def _kill(self, retain: frozenset[str], target: Target | None, update: UpdateFn | None) -> None:
        job = self.job
        spec = job.get("spec") or {}
        status: Obj = _own_status(job.get("status") or {})
        original = job.get("status") or {}  # read only: compared, never changed
        kept: list[Obj] = []
        to_kill: list[Obj] = []
        terminating = 0
        if target is not None:
            for p in self.pods:
                task = _ann(p).get(keys.TASK_SPEC_KEY)
                if task != target.task_name or (target.type == "pod" and p["metadata"]["name"] != target.pod_name) or (target.type == "partition" and (p["metadata"].get("labels") or {}).get(
                        "volcano.sh/partition-id") != _partition_of(self.pods, target.pod_name)):
                    kept.append(p)
                else:
                    to_kill.append(p)
        else:
            status["version"] = int(status.get("version") or 0) + 1
            last_retry = int(status.get("retryCount") or 0) >= int(spec.get("maxRetry") or 0) - 1
            keep = RETAIN_SOFT if last_retry else retain
            for p in self.pods:
                if p["metadata"].get("deletionTimestamp"):
                    terminating += 1
                elif _pod_phase(p) in keep:
                    kept.append(p)
                else:
                    to_kill.append(p)
        failed_delete: list[Obj] = []
        for p in to_kill:
            if p["metadata"].get("deletionTimestamp") or await self._delete_pod(p):
                terminating += 1
            else:
                failed_delete.append(p)
        counts, per_task = classify([p for p in [*kept, *failed_delete]
                                     if not p["metadata"].get("deletionTimestamp")])
        status.update(counts)
        status["terminating"] = terminating
        status["taskStatusCount"] = per_task
        if failed_delete:
            self.r._event(job, "Warning", "FailedDeletePod", f"Error deleting pods: {len(failed_delete)} failed")
            raise RuntimeError(f"failed to kill {len(failed_delete)} pods of {len(to_kill)}")
        if update is not None and update(status):
            self._stamp(status)
        ltt = (status.get("state") or {}).get("lastTransitionTime")
        created = job["metadata"].get("creationTimestamp")
        if ltt and created:
            status["runningDuration"] = go_duration_string(max(parse_rfc3339(ltt) - parse_rfc3339(created), 0.0))
        job["status"] = status
        for plugin in self._plugins():
            await plugin.on_job_delete(job, self.r.plugin_client)
        if status != original:
            await self._write_status(status)
        if target is None and self.pg is not None:
            try:
                await self.r.client.delete(scheme.POD_GROUP, self.pg["metadata"]["name"], self.pg["metadata"].get("namespace"))
            except Exception as e:
                if not is_not_found(e):
                    raise
            self.pg = None


#: the smallest size of ``JobReconciler._written`` at which it is swept
_SWEEP_MIN = 64


def _newer(a: Obj, b: Obj) -> bool:
    """Whether ``a`` is a later version of the same object than ``b`` (same uid, larger
    resourceVersion as an integer; False when either version is not an integer)."""
    ma, mb = a["metadata"], b["metadata"]
    if ma.get("uid") != mb.get("uid"):
        return False
    try:
        return int(ma.get("resourceVersion") or 0) > int(mb.get("resourceVersion") or 0)
    except ValueError:
        return False


def _partition_of(pods: list[Obj], pod_name: str) -> str | None:
    for p in pods:
        if p["metadata"]["name"] == pod_name:
            return (p["metadata"].get("labels") or {}).get("volcano.sh/partition-id")
    return None


def _own_status(status: Obj) -> Obj:
    """A copy of a Job status (read-only, from the informer cache) that a step may change: the
    dict, its ``state`` and ``controlledResources`` (the plugins record themselves there) and its
    ``conditions`` list are new; every other value is shared, as the steps and plugins only ever
    replace those (a condition entry, ``taskStatusCount``...), never change them in place. Key
    order is kept."""
    out = dict(status)
    for k, v in out.items():
        if type(v) is dict:
            if k == "state" or k == "controlledResources":
                out[k] = dict(v)
        elif type(v) is list and k == "conditions":
            out[k] = list(v)
    return out


#: status fields compared as integers by :func:`_same_status` (absent, None and 0 are alike)
_COUNT_KEYS = frozenset({"pending", "running", "succeeded", "failed", "unknown", "terminating", "version",
                         "retryCount", "minAvailable"})
#: status fields that only move with time: never compared
_TIMED_KEYS = frozenset({"conditions", "runningDuration"})
_ABSENT = object()


def _same_status(a: Obj, b: Obj) -> bool:
    """Whether two Job statuses agree on every field but those that only move with time
    (``conditions``, ``runningDuration``, ``state.lastTransitionTime``): the counts compared as
    integers (absent = 0), ``taskStatusCount`` and ``controlledResources`` absent = empty, any
    other field present in both and equal. Reads both, changes neither (decides a write)."""
    if a == b:  # the usual no-write reconcile: what it counts is what it wrote last time
        return True
    for k in a.keys() | b.keys():
        if k in _TIMED_KEYS:
            continue
        if k in _COUNT_KEYS:
            if int(a.get(k) or 0) != int(b.get(k) or 0):
                return False
        elif k == "taskStatusCount" or k == "controlledResources":
            if (a.get(k) or {}) != (b.get(k) or {}):
                return False
        elif k not in a or k not in b:
            return False
        elif k == "state" and isinstance(a[k], dict) and isinstance(b[k], dict):
            sa, sb = a[k], b[k]
            if any(sa.get(x, _ABSENT) != sb.get(x, _ABSENT) for x in sa.keys() | sb.keys() if x != "lastTransitionTime"):
                return False
        elif a[k] != b[k]:
            return False
    return True
