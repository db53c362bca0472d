"""The Agent Scheduler's worker view, per-Pod scheduling and conflict-aware binder.

A :class:`AgentView` is a worker's snapshot: a :class:`ClusterInfo` with a session of the agent
plugins (``predicates`` and ``nodeorder`` by default, the batch scheduler's own plugin code) and
a *binding version* per Node, bumped whenever the Node's Pods change (a bind by this scheduler,
or a Pod another scheduler bound, seen through :meth:`AgentView.observe_bound`).

:func:`schedule_pod` filters Nodes (predicates and ``resreq <= idle``), starting where the last
search stopped and stopping after :func:`num_feasible_nodes_to_find` feasible Nodes, scores them
and returns up to ``candidates`` Nodes, each stamped with the version it was computed from.

:class:`Binder` is optimistic: it takes the first candidate whose Node version has not moved
since (a version newer than the Node's is accepted), assumes the Pod there (bumping the
version) and hands the bind to the cache seam. When every candidate is stale the Pod goes back
to the head of activeQ; when none fitted it goes to the unschedulable pool.

:class:`WorkerPool` runs the workers as ``workers`` threads (the live scheduler and the bench use
it): each thread pops one Pod, schedules it on the view current at that moment (under the view's
read lock, so several workers compute at once) and hands the result to the binder, which resolves
results as they arrive (under the write lock: it is the only writer of the view). A worker that
computed on a version the binder has since moved gets a conflict, exactly as upstream's goroutines
do. :meth:`AgentScheduler.step` is the deterministic single-thread form used by scenario tests and
the simulator: ``workers`` Pods computed on the same view, then resolved in pop order.

Mirrors: volcano pkg/agentscheduler (worker, framework snapshot, actions/allocate) and
pkg/agentscheduler/cache/binder.go (candidate nodes with binding versions).
Deviates: the workers share one view under a readers-writer lock instead of each copying a
snapshot per cycle (the binder applies its binds to that view); CPython's GIL interleaves the
workers' pure-Python filtering and scoring, so they overlap rather than run on separate cores
(numpy sections release it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from pumice.api import Obj
from pumice.scheduler.default.queue import SchedulingQueue
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.queue_info import ClusterInfo
from pumice.scheduler.volcano.api.resource import Dimension
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import (
    ALL_NODE_UNAVAILABLE_MSG,
    FitError,
    FitErrors,
    Status,
    StatusCode,
    TaskStatus,
    insufficient_reason,
)
from pumice.scheduler.volcano.conf import SchedulerConfiguration, parse_conf
from pumice.scheduler.volcano.framework.interface import RecordingCache
from pumice.scheduler.volcano.framework.predicate_helper import predicate_rows
from pumice.scheduler.volcano.framework.session import Session, open_session
from pumice.scheduler.volcano.framework.util import num_feasible_nodes_to_find

AGENT_SCHEDULER_NAME = "agent-scheduler"
"""Upstream's default ``--scheduler-name`` of vc-agent-scheduler."""

AGENT_CONF_TEXT = """\
actions: "allocate"
tiers:
- plugins:
  - name: predicates
  - name: nodeorder
"""
"""The agent scheduler's default configuration: the trimmed plugin set."""

DEFAULT_CANDIDATES = 3
"""How many scored Nodes a worker hands the binder."""


def agent_conf() -> SchedulerConfiguration:
    """The default agent configuration (a fresh parse each call)."""
    return parse_conf(AGENT_CONF_TEXT, source="agent-scheduler")


@dataclass(frozen=True)
class Candidate:
    """A Node a worker chose and the binding version of that Node in the worker's view."""

    node: str
    version: int


@dataclass
class ScheduleResult:
    """A worker's result for one Pod: candidates best first, or the reason none fitted."""

    task: TaskInfo
    candidates: list[Candidate] = field(default_factory=list)
    reason: str = ""


class AgentView:
    """A worker's snapshot (see the module docstring).

    Args:
        cluster: the Nodes (with their running and bound Pods) to schedule on; owned by the view.
        conf: the plugin tiers (default :func:`agent_conf`).
        percentage_nodes_to_find: upstream's ``--percentage-nodes-to-find`` (0 = adaptive; the
            vectorised path always uses the adaptive number, as the batch allocate does).
        vectorize: score and filter with the session's numpy node arrays when the plugins allow.
        preferred: soft sharding: this scheduler's shard; feasible Nodes in it are ranked before
            every other feasible Node (None: no preference).
    """

    def __init__(self, cluster: ClusterInfo, conf: SchedulerConfiguration | None = None, *,
                 percentage_nodes_to_find: int = 0, vectorize: bool = True,
                 preferred: set[str] | None = None) -> None:
        self.cluster = cluster
        self.preferred = preferred
        self.session: Session = open_session(cluster, conf or agent_conf(), RecordingCache(), vectorize=vectorize)
        self.node_names = sorted(cluster.nodes)
        self.versions: dict[str, int] = dict.fromkeys(self.node_names, 0)
        self.percentage = percentage_nodes_to_find
        self._next_start = 0
        self._placed: dict[str, str] = {}

    def node(self, name: str) -> NodeInfo | None:
        return self.cluster.nodes.get(name)

    def fits(self, task: TaskInfo, node: NodeInfo) -> bool:
        """The predicates pass and the Pod's request fits the Node's idle resources."""
        return self.session.predicate_for_allocate(task, node) is None and task.resreq.less_equal(node.idle, Dimension.ZERO)

    def place(self, task: TaskInfo, node_name: str) -> None:
        """Account ``task`` on ``node_name`` (assumed or bound) and bump the Node's version."""
        if task.key in self._placed:
            return
        task.node_name = node_name
        task.status = TaskStatus.Binding if task.status is TaskStatus.Pending else task.status
        self.cluster.nodes[node_name].add_task(task)
        self._placed[task.key] = node_name
        self.versions[node_name] += 1

    def observe_bound(self, pod: Obj) -> bool:
        """A Pod bound by anyone (the batch scheduler included) as the informer reports it;
        False when it is not on a Node of this view or already accounted."""
        task = TaskInfo.from_pod(pod)
        if not task.node_name or task.node_name not in self.cluster.nodes or task.key in self._placed:
            return False
        self.place(task, task.node_name)
        return True


def _ranked(view: AgentView, nodes: list[NodeInfo], scores: np.ndarray, candidates: int) -> list[Candidate]:
    """Best first (own-shard Nodes first under soft sharding, then score, then name)."""
    pref = view.preferred

    def key(j: int) -> tuple[bool, float, str]:
        return (pref is not None and nodes[j].name not in pref, -float(scores[j]), nodes[j].name)

    order = sorted(range(len(nodes)), key=key)[:candidates]
    return [Candidate(nodes[j].name, view.versions[nodes[j].name]) for j in order]


def schedule_pod(view: AgentView, task: TaskInfo, *, candidates: int = DEFAULT_CANDIDATES) -> ScheduleResult:
    """One worker cycle for one Pod on ``view`` (see the module docstring); never mutates the view
    except for where the next search starts."""
    err = view.session.pre_predicate_fn(task)
    if err:  # upstream's agent allocate wraps the error so, and records it as the Pod's message
        return ScheduleResult(task, reason=f"pre-predicate failed for task {task.namespace}/{task.name}: {err}")
    if view.session.vectorize:
        vec = predicate_rows(view.session, task, "allocate")
        if vec is not None:
            return _schedule_rows(view, task, vec[0], candidates)
    names = view.node_names
    n = len(names)
    want = num_feasible_nodes_to_find(n, view.percentage)
    feasible: list[NodeInfo] = []
    start, looked = view._next_start, 0
    for i in range(n):
        looked = i + 1
        node = view.cluster.nodes[names[(start + i) % n]]
        if view.fits(task, node):
            feasible.append(node)
            if len(feasible) >= want:
                break
    view._next_start = (start + looked) % n if n else 0
    if not feasible:
        return ScheduleResult(task, reason=unschedulable_message(view, task))
    return ScheduleResult(task, _ranked(view, feasible, view.session.prioritize(task, feasible), candidates))


def _schedule_rows(view: AgentView, task: TaskInfo, rows: np.ndarray, candidates: int) -> ScheduleResult:
    """:func:`schedule_pod`'s vectorised path over the session's node arrays (same result as
    the loop: predicates, idle fit, scores, best first with name order on ties)."""
    ssn = view.session
    if len(rows):
        rows = rows[ssn.arrays.fits(task.resreq, "idle", rows)]
    if not len(rows):
        return ScheduleResult(task, reason=unschedulable_message(view, task))
    return ScheduleResult(task, _ranked(view, [ssn.node_list[int(r)] for r in rows], ssn.prioritize_rows(task, rows), candidates))


def unschedulable_message(view: AgentView, task: TaskInfo) -> str:
    """Why ``task`` fits no Node of ``view``: Volcano's FitErrors histogram over every Node, each
    judged as upstream's agent allocate does (the request against the Node's idle resources,
    ``Insufficient <first short resource>``, then the predicate plugins), e.g.
    ``0/2 nodes are unavailable: 2 Insufficient cpu.``; ``all nodes are unavailable`` when there is
    no Node at all. Only called on the failure path, so it checks every Node (no sampling).

    Mirrors: volcano pkg/agentscheduler/actions/allocate/allocate.go predicate and
    recordTaskFailStatus, pkg/scheduler/api/unschedule_info.go FitErrors.Error.
    """
    fe = FitErrors()
    for name in view.node_names:
        node = view.cluster.nodes[name]
        ok, short = task.resreq.less_equal_with_names(node.idle, Dimension.ZERO)
        err = (FitError(task.namespace, task.name, name, [Status(StatusCode.Unschedulable, insufficient_reason(short))])
               if not ok else view.session.predicate_for_allocate(task, node))
        if err is not None:
            fe.set_node_error(name, err)
    return str(fe) if fe.node_names else ALL_NODE_UNAVAILABLE_MSG


class Binder:
    """The conflict-aware binder (see the module docstring).

    Args:
        view: the view whose versions are checked and updated.
        bind: the cache seam called as ``bind(task, node_name)`` once the Pod is assumed.
    """

    def __init__(self, view: AgentView, bind: Callable[[TaskInfo, str], None]) -> None:
        self.view = view
        self._bind = bind
        self.conflicts = 0

    def bind(self, result: ScheduleResult) -> str | None:
        """The Node the Pod was bound to, or None when every candidate was stale."""
        for c in result.candidates:
            cur = self.view.versions.get(c.node)
            if cur is None or c.version < cur:
                continue
            self.view.place(result.task, c.node)
            self._bind(result.task, c.node)
            return c.node
        self.conflicts += 1
        return None


@dataclass
class StepReport:
    """What one round did: ``<ns>/<pod>`` -> Node for binds, keys requeued after a conflict,
    keys parked unschedulable with their reason."""

    bound: dict[str, str] = field(default_factory=dict)
    conflicted: list[str] = field(default_factory=list)
    unschedulable: dict[str, str] = field(default_factory=dict)


class RWLock:
    """Many readers or one writer (writer-preferring: a waiting writer holds new readers back)."""

    def __init__(self) -> None:
        self._cv = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cv:
            while self._writer or self._writers_waiting:
                self._cv.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cv:
                self._readers -= 1
                if not self._readers:
                    self._cv.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cv:
            self._writers_waiting += 1
            while self._writer or self._readers:
                self._cv.wait()
            self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cv:
                self._writer = False
                self._cv.notify_all()


class AgentScheduler:
    """The queue, ``workers`` workers and the binder over one view.

    Args:
        view: the worker view.
        bind: the cache seam (``bind(task, node_name)``); binds are recorded when omitted.
        workers: upstream's ``--scheduler-worker-count``.
        candidates: Nodes per result handed to the binder.
    """

    def __init__(self, view: AgentView, bind: Callable[[TaskInfo, str], None] | None = None, *, workers: int = 1,
                 candidates: int = DEFAULT_CANDIDATES) -> None:
        self.view = view
        self.queue = SchedulingQueue()
        self.tasks: dict[str, TaskInfo] = {}
        self.recorder = RecordingCache()
        self.binder = Binder(view, bind or self.recorder.bind)
        self.workers = max(1, workers)
        self.candidates = candidates
        self.lock = threading.RLock()
        """Guards the queue and ``tasks`` (worker threads pop, the loop adds and resolves)."""
        self.view_lock = RWLock()
        """Workers read the view under ``read()``; the binder and view swaps write."""
        self.queued = threading.Condition(self.lock)
        """Notified when a Pod may have become poppable (added, requeued, cluster event)."""

    def add(self, task: TaskInfo, now: float) -> bool:
        """Queue a new Pending Pod (keyed ``<ns>/<name>``); False when it is already queued."""
        with self.lock:
            if task.key in self.tasks:
                return False
            self.tasks[task.key] = task
            self.queue.add(task.key, task.namespace, task.name, task.priority, now)
            self.queued.notify_all()
            return True

    def forget(self, key: str) -> None:
        """The Pod was deleted or bound by someone else."""
        with self.lock:
            self.tasks.pop(key, None)
            self.queue.delete(key)

    def cluster_event(self, now: float) -> None:
        """A Node or Pod changed: unschedulable Pods go back to activeQ or backoffQ."""
        with self.lock:
            self.queue.move_all_to_active_or_backoff(now)
            self.queued.notify_all()

    def set_view(self, view: AgentView) -> None:
        """Replace the worker view (the live scheduler's rebuild); the queue is kept."""
        with self.view_lock.write():
            self.view = view
            self.binder.view = view

    def pop(self, now: float) -> TaskInfo | None:
        """Flush backoffQ and pop the next Pod of activeQ (None: nothing poppable)."""
        with self.lock:
            self.queue.flush(now)
            while True:
                qp = self.queue.pop_nowait()
                if qp is None:
                    return None
                task = self.tasks.get(qp.uid)
                if task is not None:
                    return task
                self.queue.done(qp.uid)

    def schedule(self, task: TaskInfo) -> ScheduleResult:
        """One worker cycle on the current view, under its read lock."""
        with self.view_lock.read():
            return schedule_pod(self.view, task, candidates=self.candidates)

    def compute(self, now: float) -> list[ScheduleResult]:
        """The workers' half of a deterministic round: pop up to ``workers`` Pods and schedule
        each on the current view (none sees the others' choices)."""
        out: list[ScheduleResult] = []
        for _ in range(self.workers):
            task = self.pop(now)
            if task is None:
                break
            out.append(self.schedule(task))
        return out

    def resolve(self, results: list[ScheduleResult], now: float) -> StepReport:
        """The binder's half: bind in the given order; stale -> urgent requeue; none fit -> pool.
        A Pod forgotten while its worker computed is dropped."""
        rep = StepReport()
        with self.view_lock.write(), self.lock:
            for r in results:
                key = r.task.key
                if key not in self.tasks:
                    self.queue.done(key)
                    continue
                if not r.candidates:
                    self.queue.failed(key, now)
                    rep.unschedulable[key] = r.reason
                    continue
                node = self.binder.bind(r)
                if node is None:
                    self.queue.requeue_urgent(key, now)
                    self.queued.notify_all()
                    rep.conflicted.append(key)
                else:
                    self.queue.done(key)
                    self.tasks.pop(key, None)
                    rep.bound[key] = node
        return rep

    def step(self, now: float) -> StepReport:
        """One round: :meth:`compute` then :meth:`resolve`."""
        return self.resolve(self.compute(now), now)


class WorkerPool:
    """``sched.workers`` worker threads (see the module docstring).

    Each thread: pop a Pod (waiting on ``sched.queued`` up to ``poll`` seconds when none is
    poppable, so backoffQ is flushed), :meth:`AgentScheduler.schedule` it on the current view,
    then ``emit(result)`` from the worker thread; the caller resolves results with
    :meth:`AgentScheduler.resolve` (the binder), in whatever thread it owns.

    Args:
        sched: the queue, view and binder.
        now: the project clock's monotonic seconds (called from the worker threads).
        emit: receives each result; must be thread-safe (e.g. ``loop.call_soon_threadsafe``).
        poll: longest wait for a poppable Pod, in seconds.
    """

    def __init__(self, sched: AgentScheduler, now: Callable[[], float], emit: Callable[[ScheduleResult], None], *,
                 poll: float = 0.05) -> None:
        self.sched = sched
        self.now = now
        self.emit = emit
        self.poll = poll
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for i in range(self.sched.workers):
            t = threading.Thread(target=self._run, name=f"agent-worker-{i}", daemon=True)
            self._threads.append(t)
            t.start()

    def wake(self) -> None:
        with self.sched.queued:
            self.sched.queued.notify_all()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop and join the threads (each finishes the Pod it holds first)."""
        self._stop.set()
        self.wake()
        for t in self._threads:
            t.join(timeout)
        self._threads.clear()

    def _run(self) -> None:
        sched = self.sched
        while not self._stop.is_set():
            task = sched.pop(self.now())
            if task is None:
                with sched.queued:
                    if not self._stop.is_set():
                        sched.queued.wait(self.poll)
                continue
            self.emit(sched.schedule(task))
