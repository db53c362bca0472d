"""Run one simulation: the real stack on a virtual clock over a workload.

Wiring (one asyncio loop under looptime, no sockets, no threads):

- the API server (in-memory storage) with the Volcano and ray.io admission plugins, reached by
  every component through the in-process streaming transport;
- a controller manager with the kube (replicaset, deployment, job, garbagecollector, namespace;
  endpoints when RayServices arrive), Volcano (queue, podgroup, vcjob) and KubeRay (RayCluster,
  RayJob, RayService; batch scheduler from the config) controllers, the KubeRay ones talking to
  the simulated Ray dashboard (:mod:`pumice.simulate.ray_dashboard`: Jobs and Serve API, and the
  head Pods' Serve proxy health check);
- the Volcano scheduler (the real :class:`~pumice.scheduler.volcano.scheduler.Scheduler`: its
  cache, configuration and ``run_once``), driven by :class:`TriggeredLoop` below; the default
  scheduler too when the workload has Pods for it (RayJob submitters);
- one node agent with the simulated runtime hosting every Node of the node list, each with its
  own capacity and labels.

The clock is set once: ``LoopClock(epoch)`` becomes the process clock and every component gets
it; loop time 0 is the simulation start (``epoch``).

Deviations from a live cluster, on purpose:

- Node Leases and heartbeats are off and the node lifecycle controller does not run: Nodes never
  fail in a trace replay, and 1,523 Nodes renewing a Lease every 10 s for 149 simulated days
  would be 2 billion writes that change nothing.
- Watch bookmarks are off and informers ask for watches without a timeout (instead of re-opening
  every 300 s), for the same reason.
- Sessions run on the period's ticks, only at the first tick after something changed (see
  :class:`TriggeredLoop`).
- Sandbox start latency is 0 (``start_latency`` to change): trace durations are run times.
- No Events: the node agent and the Volcano scheduler record none (nothing reads them in a run).
- A finished job's objects are deleted once recorded (``cleanup``), as PodGC and Volcano's
  ``ttlSecondsAfterFinished`` would do later; otherwise every session would snapshot every Pod
  the trace ever ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import math
import selectors
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import looptime

from pumice._util.clock import LoopClock, default_clock, set_default_clock
from pumice._util.errors import FATAL_TYPES, watch_task
from pumice.api import Obj
from pumice.api.meta import name as obj_name
from pumice.client.base import ApiError
from pumice.simulate.nodes import GPU_MEMORY, GPU_NUMBER, InputError, NodeSpec
from pumice.simulate.recorder import Recorder
from pumice.simulate.workload import NAMESPACE, Arrival, Workload

log = logging.getLogger("pumice.simulate")

DEFAULT_EPOCH = 1_700_000_000.0
WATCH_TIMEOUT = None
"""Informers' watch timeout during a run: none (see :func:`pumice.client.informer.set_watch_timeout`)."""
KUBE_CONTROLLERS = ("replicaset", "deployment", "job", "garbagecollector", "namespace", "podgc")
"""The kube controllers a run starts; ``podgc`` without its periodic pass (see
:mod:`pumice.controllers.kube.podgc`: it acts only when a Node is deleted or tainted out-of-service)."""

GPUSHARE_CONF = Path(__file__).with_name("gpushare.conf")
"""Volcano's built-in default configuration plus the ``deviceshare`` plugin (GPU sharing and GPU
number on): what a run without ``--scheduler-conf`` uses when Pods ask for
``volcano.sh/gpu-memory`` or ``volcano.sh/gpu-number``, so they are fitted card by card."""


def shares_gpu_cards(workload: Workload) -> bool:
    """Whether a Pod of the workload (a bare Pod or a vcjob task template) asks for
    ``volcano.sh/gpu-memory`` or ``volcano.sh/gpu-number``."""
    for a in workload.arrivals:
        for o in a.objects:
            specs = [o.get("spec") or {}] if o.get("kind") == "Pod" else \
                [(t.get("template") or {}).get("spec") or {} for t in (o.get("spec") or {}).get("tasks") or []]
            for spec in specs:
                for c in spec.get("containers") or []:
                    res = c.get("resources") or {}
                    if any(k in (res.get(part) or {}) for part in ("requests", "limits") for k in (GPU_MEMORY, GPU_NUMBER)):
                        return True
    return False


def effective_conf(cfg: SimConfig, shares: bool | None = None) -> str | None:
    """The configuration file the run uses: ``cfg.scheduler_conf``, else :data:`GPUSHARE_CONF`
    when :func:`shares_gpu_cards` (``shares``: its answer, when the caller has it already), else
    None (the built-in default)."""
    if cfg.scheduler_conf is not None:
        return cfg.scheduler_conf
    return str(GPUSHARE_CONF) if (shares_gpu_cards(cfg.workload) if shares is None else shares) else None


STALL_AFTER_SECONDS = 600.0
"""The default :attr:`SimConfig.stall_after`: simulated seconds with nothing changing (and nothing
counting down or due) after which a run ends ``stalled``."""


@dataclass
class SimConfig:
    """One run's inputs.

    Attributes:
        nodes: the cluster.
        workload: arrivals, queues and PriorityClasses.
        scheduler_conf: a volcano-scheduler.conf path (None: the built-in default; for a
            workload whose Pods share GPU cards, :data:`GPUSHARE_CONF`, see :func:`effective_conf`).
        queues: Queue manifests (weights, capability, guarantee); Queues the workload names and
            these lack are created with weight 1. One the API server refuses ends the run at once
            with :class:`~pumice.simulate.nodes.InputError` (``Queue 'qa' refused by the API server: ...``).
        batch_scheduler: KubeRay's batch scheduler (``volcano`` or None).
        seed: seeds the API server's UIDs, the controllers' name generators and the runtime.
        until: stop at this simulated time (seconds; None: when every job ended or the run stalls).
        schedule_period: the Volcano scheduler period, seconds.
        start_latency: simulated sandbox start, seconds.
        epoch: the wall-clock date simulated time 0 stands for (epoch seconds).
        stall_after: with every arrival in, no Pod counting down and no service deletion due, the
            run is stalled once nothing changed for this many simulated seconds, counted from the
            last change (a Pod, PodGroup, RayJob or RayService event; a rejected arrival; the last
            arrival). An idle stretch before a later arrival is never a stall.
        cleanup: delete a job's objects once it finished and was recorded (keeps the scheduler's
            snapshot to live objects; a finished Pod's deletion triggers no session).
        inputs: the files and flags that produced the run, as given (for the report only).
        snapshot_mode: the Volcano scheduler cache's ``incremental`` (default), ``full`` or
            ``verify`` snapshot (see :meth:`SchedulerCache.snapshot`); the same decisions in each,
            which the tests check.
    """

    nodes: list[NodeSpec]
    workload: Workload
    scheduler_conf: str | None = None
    queues: list[Obj] = field(default_factory=list)
    batch_scheduler: str | None = "volcano"
    seed: int = 0
    until: float | None = None
    schedule_period: float = 1.0
    start_latency: float = 0.0
    epoch: float = DEFAULT_EPOCH
    stall_after: float = STALL_AFTER_SECONDS
    name: str = "run"
    cleanup: bool = True
    snapshot_mode: str = "incremental"
    inputs: dict[str, Any] = field(default_factory=dict)
    """What produced the run, for its report (``summary.json`` ``inputs``): the files and flags as
    given (``pumice simulate`` fills it; see :func:`pumice.simulate.report.inputs`)."""


@dataclass(repr=False)
class SimResult:
    """What a run produced. ``wall_seconds`` and ``api_writes`` are outside the deterministic
    outputs (see :mod:`pumice.simulate.report`)."""

    def __repr__(self) -> str:
        # short on purpose: asyncio formats the run's result (a ValueError message in
        # Runner.run's signal handling), and the dataclass repr walked the whole workload
        return f"SimResult({self.config.name!r}, ended_by={self.ended_by!r}, end_time={self.end_time})"

    config: SimConfig
    recorder: Recorder
    end_time: float
    ended_by: str
    wall_seconds: float = 0.0
    api_writes: int = 0
    snapshot_mismatches: int = 0
    """``snapshot_mode="verify"``: sessions whose incremental snapshot differed from the full build."""
    conf: dict[str, Any] = field(default_factory=dict)
    """The scheduler configuration the run used (:func:`conf_identity`)."""
    stop_reason: str | None = None
    """Why a :data:`INTERRUPTED` run was stopped (the :class:`StopFlag`'s reason, e.g. ``SIGINT``)."""


Progress = Callable[[float, int, int, int], None]
"""``(simulated seconds, jobs finished, jobs total, api writes) -> None``."""

INTERRUPTED = "interrupted"
"""``SimResult.ended_by`` of a run stopped by :meth:`StopFlag.set` (Ctrl-C, SIGTERM)."""


class ComponentFailed(RuntimeError):
    """A component of the simulated stack (the controller manager, a scheduler, a task of the node
    agent) stopped with an exception during the run: the run cannot go on as the stack would, so
    it ends without a report.
    Message: ``simulation failed at simulated 1 s: controller-volcano-job stopped with MemoryError:
    ...; no report`` (the exception is the ``__cause__``)."""


class StopFlag:
    """Asks a running simulation to stop early: the run ends as ``--until`` at the simulated time
    reached would have ended it (``ended_by`` :data:`INTERRUPTED`, :attr:`SimResult.stop_reason`).

    :meth:`set` may be called from a signal handler or another thread: it records the reason and
    wakes the run's loop (``call_soon_threadsafe``); the run checks the flag between events (the
    watcher wakes at once) and before every scheduling session, so a run stops within one session
    of wall time. Once set it stays set (later calls keep the first reason).
    """

    def __init__(self) -> None:
        self.reason: str | None = None
        self._wake: Callable[[], None] | None = None

    def is_set(self) -> bool:
        return self.reason is not None

    def set(self, reason: str = "stopped") -> None:
        if self.reason is None:
            self.reason = reason
        wake = self._wake
        if wake is not None:
            wake()

    def bind(self, loop: asyncio.AbstractEventLoop, wake: Callable[[], None]) -> None:
        """Run ``wake`` on ``loop`` when the flag is set (now, if it is set already)."""

        def threadsafe() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the run is over anyway
                loop.call_soon_threadsafe(wake)

        self._wake = threadsafe
        if self.is_set():
            threadsafe()

    def unbind(self) -> None:
        self._wake = None


def conf_identity(path: str | None) -> dict[str, Any]:
    """Which scheduler configuration a run used, for its report: ``{"file": the path as given
    (``<built-in default>`` for None), "sha256": digest of its bytes (of the compiled-in text for
    the default), "actions": "enqueue, allocate, ...", "plugins": "priority, gang | drf, ..."
    (tiers separated by `` | ``)}``. Strings only, so each is one row of ``--compare``'s table.

    Raises:
        pumice.scheduler.volcano.ConfigError: the file cannot be read or parsed.
    """
    import hashlib

    from pumice.scheduler.volcano.conf import DEFAULT_SCHEDULER_CONF, ConfigError, default_conf, parse_conf

    if path is None:
        data, conf, name = DEFAULT_SCHEDULER_CONF.encode(), default_conf(), "<built-in default>"
    else:
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise ConfigError(f"{path}: cannot read: {e.strerror}") from e
        conf, name = parse_conf(data.decode(errors="replace"), source=path), path
        if Path(path) == GPUSHARE_CONF:
            name = "<built-in default + deviceshare> (pumice/simulate/gpushare.conf)"
    return {"file": name, "sha256": hashlib.sha256(data).hexdigest(), "actions": ", ".join(conf.actions),
            "plugins": " | ".join(", ".join(p.name for p in t.plugins) for t in conf.tiers)}


SIM_GC_GROWTH = 1_000_000
"""During a run the automatic collector is off; a full collection runs when the objects the
collector tracks have grown by this many since the last one (checked every simulated hour and
at every job's end, in :func:`_watch_until_done`). A run makes no cyclic garbage of its own (a
session drops its plugins' closures over it when the scheduler is done with it, see
``Session.release``; Philly to day 30 with the collector off leaves none), so the young
collections found nothing and only scanned the API server's and informers' objects that
outlive a few thousand writes: 2.9 s of Philly to day 30's 106 s (2.8%; 12% before the
session's cycles were broken). The bound keeps the memory in check should some workload make
cyclic garbage after all: it is collected once a million new objects have piled up. Outputs
do not depend on it (the same digest)."""


def _quiet_gc() -> bool:
    """Move what exists before the run (the loaded workload) out of the collector's way and turn
    the automatic collector off (see :data:`SIM_GC_GROWTH`); returns whether it was on."""
    enabled = gc.isenabled()
    gc.collect()
    gc.freeze()
    gc.disable()
    return enabled


def _collect_if_grown() -> None:
    """A full collection when the collector's tracked objects grew by :data:`SIM_GC_GROWTH` since
    the last one (the young generation's count keeps counting allocations minus deallocations
    while the collector is off, and a collection resets it)."""
    if gc.get_count()[0] > SIM_GC_GROWTH:
        gc.collect()




class _WakeSelector(selectors.DefaultSelector):
    """The selector of a run's loop: its zero-timeout polls (looptime polls for I/O before every
    loop iteration) return at once with nothing while nothing can be ready, instead of an epoll
    system call each.

    "Nothing can be ready" holds while the loop's own self-pipe is the only file registered and
    nothing has written to it since the last real poll. The loop marks :attr:`woken` before and
    after every ``call_soon_threadsafe`` (the only writer of that pipe, apart from signal
    handlers added with ``add_signal_handler``, after which every poll is real). A run registers
    no other file (no sockets); if anything does, every poll is real again. Polls with a timeout
    (a loop with nothing to run) are always real."""

    def __init__(self) -> None:
        super().__init__()
        self.woken = True
        self.always = False
        self._quiet_size = -1  # the number of registered files when only the self-pipe is

    def quiet_from_now(self) -> None:
        """Take the files registered now (the loop's self-pipe) as the quiet state."""
        self._quiet_size = len(self.get_map())

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout == 0 and not self.woken and not self.always and len(self.get_map()) == self._quiet_size:
            return []
        self.woken = False
        return super().select(timeout)


class _SimLoop(asyncio.SelectorEventLoop):
    """asyncio's selector loop on a :class:`_WakeSelector` (looptime makes it virtual-time)."""

    _selector: _WakeSelector

    def __init__(self) -> None:
        selector = _WakeSelector()
        super().__init__(selector)
        selector.quiet_from_now()

    def call_soon_threadsafe(self, callback: Any, *args: Any,  # type: ignore[override]  # same call, Any-typed
                             context: Any = None) -> asyncio.Handle:
        self._selector.woken = True
        handle = super().call_soon_threadsafe(callback, *args, context=context)
        self._selector.woken = True
        return handle

    def add_signal_handler(self, sig: int, callback: Any, *args: Any) -> None:  # type: ignore[override]
        self._selector.always = True  # its handler writes to the self-pipe itself
        super().add_signal_handler(sig, callback, *args)


class _PendingFutures(weakref.WeakSet):  # type: ignore[type-arg]
    """looptime's set of executor futures (it walks the set on every loop iteration to see
    whether a thread is still working): the same set, with the walk of an empty one free."""

    def __iter__(self) -> Any:
        if not len(self):
            return iter(())
        return super().__iter__()


LOOP_TICK = 1e-6
"""The smallest step a run's loop moves its virtual time by (looptime's resolution), seconds. A
timer within the loop's clock resolution (100 ns, see :func:`_virtual_loop`) is due at once,
without the time moving; one at least a tick away moves it by one tick at least."""


def _virtual_loop() -> asyncio.AbstractEventLoop:
    """A looptime loop (virtual time from 0, moved to the next timer when every task waits).

    asyncio takes a timer as due when its time is before now + the loop's clock resolution, which
    it reads from the monotonic clock (1 ns). From 2**24 simulated seconds (194 days) on, adjacent
    floats are more than 2 ns apart, so now + 1 ns rounds to now and a timer due exactly now
    never runs: the loop spins at that instant for ever (seen as runs stuck at 4661 simulated
    hours). A 100-ns resolution, under looptime's own 1-us tick, keeps timers due on time to
    2**30 s."""
    loop = looptime.patch_event_loop(_SimLoop(), start=0, noop_cycles=1, resolution=LOOP_TICK)
    loop._clock_resolution = 1e-7  # type: ignore[attr-defined]  # asyncio's own attribute, see above
    # looptime's pending executor futures (a name-mangled attribute): when present and still the
    # empty WeakSet it starts with, the same set whose empty walk costs nothing (see _PendingFutures)
    attr = "_LoopTimeEventLoop__sync_futures"
    futures = loop.__dict__.get(attr)
    if type(futures) is weakref.WeakSet and not futures:
        setattr(loop, attr, _PendingFutures())
    _fast_time(loop)
    _fast_select(loop)
    return loop


def _fast_time(loop: asyncio.AbstractEventLoop) -> None:
    """Give ``loop`` (looptime's, time compaction on, as a run's loop stays) a ``time()`` that
    reads its integer tick count directly: looptime's own asks whether compaction is on and
    converts through a helper on every call, and a run reads the time several times per loop
    iteration and about 190 times per job through the clock. The same division, so the same
    floats. Left as it is when looptime keeps its state under other names."""
    state = loop.__dict__
    now, reciprocal = "_LoopTimeEventLoop__now", state.get("_LoopTimeEventLoop__resolution_reciprocal")
    if not getattr(loop, "looptime_on", False) or type(state.get(now)) is not int or type(reciprocal) is not int:
        return

    def time() -> float:
        return state[now] / reciprocal  # type: ignore[no-any-return]  # int / int

    loop.time = time  # type: ignore[method-assign]  # the instance's own, ahead of the class's


def _fast_select(loop: asyncio.AbstractEventLoop) -> None:
    """Give ``loop`` (looptime's, as :func:`_virtual_loop` makes it: no end, no idle timeout or
    step) a poll that, while nothing outside the loop can be ready (:class:`_WakeSelector`'s quiet
    state, no executor future pending), does what looptime's own does without its per-poll
    bookkeeping, and moves the time to the next timer at once instead of after its no-op cycles.

    A no-op cycle is a loop iteration with nothing ready and no timer due: it runs nothing and
    changes nothing (in a closed loop nothing can arrive meanwhile), so skipping it changes no
    order of callbacks and no time. A timer that is due without the time moving (within the
    loop's clock resolution) is left to looptime's own poll, whose first no-op cycle runs it at
    the present time. The time moves by the same integer step looptime's would take. Left as it
    is when looptime keeps its state under other names or the loop is set up otherwise."""
    state = loop.__dict__
    sel = getattr(loop, "_selector", None)
    p = "_LoopTimeEventLoop__"
    names = ("now", "resolution_reciprocal", "end", "idle_timeout", "idle_step", "noop_limit", "noop_cycle",
             "enabled", "sync_futures")
    if not isinstance(sel, _WakeSelector) or any(p + n not in state for n in names) \
            or type(state[p + "now"]) is not int or type(state[p + "resolution_reciprocal"]) is not int \
            or any(state[p + n] is not None for n in ("end", "idle_timeout", "idle_step")) \
            or not isinstance(getattr(sel, "_fd_to_key", None), dict) or "select" not in sel.__dict__:
        return
    looptime_select = sel.select  # looptime's replacement of the selector's own (an instance attribute)
    fd_to_key: dict[Any, Any] = sel._fd_to_key  # type: ignore[attr-defined]  # the selector's registered files
    reciprocal: int = state[p + "resolution_reciprocal"]
    tick = 1 / reciprocal  # looptime's smallest step, in seconds
    futures = state[p + "sync_futures"]
    scheduled: list[asyncio.TimerHandle] = loop._scheduled  # type: ignore[attr-defined]  # asyncio's timer heap
    resolution: float = loop._clock_resolution  # type: ignore[attr-defined]
    now_key, limit_key, cycle_key, enabled_key = p + "now", p + "noop_limit", p + "noop_cycle", p + "enabled"

    def select(timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if sel.woken or sel.always or len(fd_to_key) != sel._quiet_size or timeout is None \
                or not state[enabled_key] or (futures and any(not f.done() for f in futures)):
            # a finished executor future can stay in looptime's weak set while it sits in a
            # reference cycle (the collector is off during a run): only pending ones count
            return looptime_select(timeout)
        if timeout == 0:
            if state[limit_key] is not None:
                state[cycle_key] = 0
            return []
        if scheduled and scheduled[0].when() < state[now_key] / reciprocal + resolution:
            return looptime_select(timeout)  # due now: looptime's no-op cycle runs it at this time
        step = round(timeout * reciprocal)
        if 0 < timeout < tick:
            step += 1
        state[now_key] += step
        state[limit_key] = state[cycle_key] = None
        return []

    sel.select = select  # type: ignore[method-assign]


def simulate(cfg: SimConfig, *, progress: Progress | None = None, stop: StopFlag | None = None) -> SimResult:
    """Run ``cfg`` to the end (or until ``stop`` is set) on a fresh looptime loop. Sets the process
    clock for the run and restores it after.

    Raises:
        pumice.scheduler.volcano.ConfigError: a bad scheduler configuration.
        InputError: bad inputs.
    """
    from pumice.client.informer import set_watch_timeout

    shares = shares_gpu_cards(cfg.workload)  # once: it walks every arrival's manifests
    cfg = replace(cfg, scheduler_conf=effective_conf(cfg, shares))
    conf = conf_identity(cfg.scheduler_conf)
    if "deviceshare" not in conf["plugins"].replace("|", ",").replace(" ", "").split(",") and shares:
        log.warning("%s: the Pods ask for volcano.sh/gpu-memory or gpu-number but the scheduler configuration has "
                    "no deviceshare plugin: GPUs are fitted pooled per Node, not card by card", conf["file"])
    clock = LoopClock(epoch=cfg.epoch)
    previous = default_clock()
    set_default_clock(clock)
    previous_watch = set_watch_timeout(WATCH_TIMEOUT)
    t0 = time.perf_counter()  # wall time of the run, for the timing report only
    gc_enabled = _quiet_gc()
    try:
        with asyncio.Runner(loop_factory=_virtual_loop) as runner:
            result = runner.run(_run(cfg, clock, progress, stop))
    finally:
        clock.pin(None)
        # what the run left (its result, and the objects frozen before it) goes to the oldest
        # generation directly: the collector was off, so the young generation held everything
        # the run made, and the first collection after it walked all of it
        gc.freeze()
        gc.unfreeze()
        if gc_enabled:
            gc.enable()
        if stop is not None:
            stop.unbind()
        set_default_clock(previous)
        set_watch_timeout(previous_watch)
    result.wall_seconds = time.perf_counter() - t0
    result.conf = conf
    return result


def _pod_key(o: Obj) -> tuple[Any, ...]:
    md, spec, st = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    sched = spec.get("schedulerName")
    # A bind by this scheduler only confirms what its session assumed; another scheduler's bind
    # takes room on a Node.
    node = spec.get("nodeName") if sched != "volcano" else None
    return (node, st.get("phase") in ("Succeeded", "Failed"),
            (md.get("annotations") or {}).get("scheduling.k8s.io/group-name"), sched, spec.get("priority"))


def _pod_waits(o: Obj) -> bool:
    """A Pod some scheduler has still to place: no Node, not ended, not being deleted."""
    return not (o.get("spec") or {}).get("nodeName") and (o.get("status") or {}).get("phase") not in (
        "Succeeded", "Failed") and not (o.get("metadata") or {}).get("deletionTimestamp")


def _group_waits(o: Obj) -> bool:
    """A PodGroup the enqueue action has still to admit (Pending or no phase yet), or Unknown. An
    Inqueue one is not counted: what it waits for are its Pods (counted themselves when they have
    no Node), which the allocate action places."""
    return (o.get("status") or {}).get("phase") in (None, "", "Pending", "Unknown")


def _pod_group_key(o: Obj) -> tuple[Any, ...]:
    # Phase changes are the scheduler's own writes (Inqueue, Running): the session that wrote them
    # had already acted on them.
    return (repr(o.get("spec")),)


def _spec_key(o: Obj) -> tuple[Any, ...]:
    md = o.get("metadata") or {}
    return (repr(o.get("spec")), repr(md.get("labels")), repr((o.get("status") or {}).get("allocatable")))


def _any_key(o: Obj) -> tuple[Any, ...]:
    return ((o.get("metadata") or {}).get("resourceVersion"),)


SCHEDULING_KEYS: dict[str, Callable[[Obj], tuple[Any, ...]]] = {
    "Pod": _pod_key, "PodGroup": _pod_group_key, "Queue": _spec_key, "Node": _spec_key,
    "PriorityClass": _any_key, "Namespace": _any_key,
}
"""Per informer kind: the part of an object a session's decisions depend on. An update that leaves
it unchanged (a Pod going Running, a PodGroup's conditions or counts, a Queue's
``status.allocated``: mostly the scheduler's own status writes) does not trigger a session."""


class TriggeredLoop:
    """Run the Volcano scheduler's cycle on its period's ticks, at the first tick after something
    changed.

    Ticks are ``start + k * period`` (``start``: the loop's first session, at once), as a live
    scheduler's ``wait.Until(runOnce, period)`` would run them; a tick with nothing changed since
    the previous session is skipped. A change at the very instant of a tick is taken by the next
    tick, as if the tick had come first: so a session never runs in the middle of the cascade
    that one change sets off at one virtual instant (a Pod arrives, the PodGroup controller
    creates its PodGroup and annotates it; a job ends, its objects are cleaned up and the garbage
    collector deletes its PodGroup): it sees the cascade's end state. Running at the change's
    own instant instead (as this loop did before) gave a session that saw the Pod but not yet its
    PodGroup, and one more a period later for the PodGroup, so two sessions per arrival and two
    per completion where one decides the same.

    Something changed = an informer of the scheduler's cache delivered an add or a delete, or an
    update that changed what :data:`SCHEDULING_KEYS` keeps of the object: a Pod arrived, ended
    (Succeeded/Failed), went away, or was bound by another scheduler; a PodGroup's, Queue's or
    Node's spec changed. Not kept: the confirmations of this scheduler's own decisions (its binds,
    the PodGroup phases and the Queue ``status.allocated`` it wrote, a Pod going Running), because
    the session that made them already counted them (binds are assumed in the cache, evicted Pods
    are Releasing until they are gone). A session's decisions are a function of the snapshot
    (plus the session seed and the clock, which no default plugin reads), so a session over a
    snapshot that equals the previous one in everything but those confirmations decides what
    the previous one decided, which was applied already (a failed bind, which changes nothing in
    the API, triggers a session itself; a failed eviction leaves the Pod Releasing in the cache,
    as on a live cluster, until it goes). Skipping it therefore changes no
    decision, and idle stretches cost nothing. The first session runs at start.

    A change that only frees room (a Pod ended or went away, a PodGroup was deleted) while
    nothing waits to be scheduled (no Pod without a Node that has not ended, no PodGroup Pending
    or Unknown) runs no session either: with nothing pending, the configured
    actions (enqueue, allocate, backfill, preempt, reclaim and their gang variants) have nothing
    to place and no preemptor or reclaimer to evict for, so that session would decide nothing; the
    next session, which the next arrival triggers, sees the freed room. What it would have
    written comes later or not at all: the Queue's ``status.allocated`` and the PodGroups'
    status are written by that next session (or never for a PodGroup the clean-up deleted), and
    the queues' deserved shares (:attr:`Recorder.deserved`, sampled by the sessions that run)
    keep their last value until then. ``triggers["idle-release"]`` counts those changes. Not
    with a plugin that acts on running Pods over time (``wait-for-pods-ready``) or whose
    ordering depends on past usage (``usage-budget``, ``admission-fair-sharing``), or an action
    outside that list (``shuffle``): then every change triggers a session.

    Exceptions, where time itself changes decisions: the ``sla`` plugin (a job's waiting time
    against ``sla-waiting-time``) and any plugin reading the clock; with such a plugin in the
    configuration the loop runs every period regardless (``always``). A Pending task's
    ``PodScheduled`` message and a PodGroup's conditions are refreshed only by sessions that run,
    so they may be older than on a live cluster (their content would be the same).
    """

    TIME_DEPENDENT = ("sla",)
    IDLE_RELEASE_ACTIONS = frozenset({"enqueue", "allocate", "backfill", "preempt", "reclaim", "gangpreempt",
                                      "gangreclaim"})
    """Actions that decide nothing when nothing is pending."""
    RUNNING_POD_PLUGINS = ("wait-for-pods-ready", "usage-budget", "admission-fair-sharing")
    """Plugins whose decisions depend on running Pods over time: with one, every release triggers."""

    def __init__(self, scheduler: Any, clock: LoopClock, period: float, stop: StopFlag | None = None) -> None:
        self.scheduler = scheduler
        self.stop = stop
        self.clock = clock
        self.period = period
        self.dirty = asyncio.Event()
        self.dirty.set()
        self.triggers: dict[str, int] = {}
        self._bind_errors = 0
        plugins = {p.name for tier in scheduler.conf.tiers for p in tier.plugins}
        self.always = bool(plugins & set(self.TIME_DEPENDENT))
        self.idle_release = (set(scheduler.conf.actions) <= self.IDLE_RELEASE_ACTIONS
                             and not plugins & set(self.RUNNING_POD_PLUGINS))
        self.waiting: set[tuple[str, str, str]] = set()
        """Pods without a Node that have not ended, and PodGroups Pending (or no phase) or Unknown."""

    def _released(self, kind: str) -> None:
        if self.idle_release and not self.waiting:
            self.triggers["idle-release"] = self.triggers.get("idle-release", 0) + 1
            return
        self._changed(kind)

    def _changed(self, kind: str) -> None:
        self.triggers[kind] = self.triggers.get(kind, 0) + 1
        self.dirty.set()

    def _track(self, kind: str, obj: Obj, gone: bool = False) -> None:
        if kind not in ("Pod", "PodGroup"):
            return
        md = obj.get("metadata") or {}
        k = (kind, md.get("namespace") or "", md.get("name") or "")
        if not gone and (_pod_waits(obj) if kind == "Pod" else _group_waits(obj)):
            self.waiting.add(k)
        else:
            self.waiting.discard(k)

    def _handlers(self, kind: str) -> tuple[Callable[[Obj], None], Callable[[Obj, Obj], None], Callable[[Obj], None]]:
        key = SCHEDULING_KEYS.get(kind, _any_key)

        def added(obj: Obj) -> None:
            self._track(kind, obj)
            self._changed(kind)

        def updated(old: Obj, new: Obj) -> None:
            self._track(kind, new)
            ko, kn = key(old), key(new)
            if ko == kn:
                return
            if kind == "Pod" and kn[1] and not ko[1] and (ko[0], *ko[2:]) == (kn[0], *kn[2:]):
                self._released(kind)  # it ended, and nothing else the scheduler reads changed
            else:
                self._changed(kind)

        def deleted(obj: Obj) -> None:
            self._track(kind, obj, gone=True)
            # A Pod that had ended freed its room when it ended: removing it (the simulator's
            # clean-up of finished jobs) changes no decision. A PodGroup's removal does (the
            # enqueue gate counts Running PodGroups' minResources) when something waits.
            if kind == "Pod" and (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return
            if kind in ("Pod", "PodGroup"):
                self._released(kind)
            else:
                self._changed(kind)

        return added, updated, deleted

    async def run(self) -> None:
        for kind, inf in self.scheduler.cache.informers.items():
            inf.add_event_handler(*self._handlers(kind))
        if self.stop is not None:
            # after a stop, the writes a session queued that have not started are dropped: the
            # run's watcher waits behind them in the loop's queue (one per Pending Pod of a
            # session's close, thousands for a wide job), and the results are already in
            self.scheduler.cache.abandon_writes = self.stop.is_set
        origin = self.clock.monotonic()
        tick = -1  # the last session's tick; the first session runs at once, at tick 0
        while True:
            if not self.always:
                await self.dirty.wait()
            now = self.clock.monotonic()
            if tick < 0:
                tick = 0
            else:
                # the first tick strictly after now (the epsilon absorbs float error in the
                # loop's time, so a change at a tick's instant never runs in that tick)
                tick = max(tick + 1, math.floor((now - origin) / self.period + 1e-9) + 1)
                await self.clock.sleep(origin + tick * self.period - now)
            if self.stop is not None and self.stop.is_set():
                return  # no session after a stop: the run's watcher ends the run now
            self.dirty.clear()
            try:
                self.scheduler.run_once()
            except FATAL_TYPES:
                raise  # not retried: the scheduler ends and the run with it (ComponentFailed)
            except Exception:
                log.exception("scheduling cycle failed")
            for write in list(self.scheduler.cache.pending_writes):
                write.add_done_callback(self._write_done)
            await asyncio.sleep(0)

    def _write_done(self, _task: Any) -> None:
        """A failed bind changes nothing in the API, yet the Pod must be tried again."""
        errors = getattr(self.scheduler.cache, "bind_errors", 0)
        if errors != self._bind_errors:
            self._bind_errors = errors
            self.triggers["bind-error"] = self.triggers.get("bind-error", 0) + 1
            self.dirty.set()


def _sim_scheduler_class() -> type:
    from pumice.scheduler.volcano.scheduler import Scheduler

    class SimScheduler(Scheduler):  # type: ignore[misc]
        """The live scheduler, reporting each session's evictions and queue shares to the recorder."""

        recorder: Recorder | None = None

        def _conf_warnings(self, conf: Any) -> None:
            """Not logged: ``pumice simulate`` prints them once, before the run."""

        def _record(self, ssn: Any, res: Any) -> None:
            super()._record(ssn, res)
            if self.recorder is not None:
                self.recorder.session(list(ssn.evicted), dict(ssn.queue_metrics))

    return SimScheduler


@dataclass
class _Stack:
    """The running components of one simulation: the API server, the in-process clients made for
    it, the long-running tasks (controller manager, schedulers, the node agent's own: see
    :attr:`pumice.node.agent.NodeAgent.tasks`), the node agent and the Volcano scheduler."""

    server: Any
    clients: list[Any] = field(default_factory=list)
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    manager: Any = None
    agent: Any = None
    runtime: Any = None
    scheduler: Any = None

    def client(self) -> Any:
        """A new in-process client of the server (closed with the stack)."""
        from pumice.client.kubeconfig import in_process

        c = in_process(self.server.app, scheme=self.server.scheme)
        self.clients.append(c)
        return c


async def _run(cfg: SimConfig, clock: LoopClock, progress: Progress | None, stop: StopFlag | None = None) -> SimResult:
    """Start the stack, replay the arrivals until the run ends (:func:`_watch_until_done`), stop."""
    clock.pin(asyncio.get_running_loop())  # its time compaction stays on for the run
    stack = await _start_api_server(cfg, clock)
    rec = Recorder(clock, clock.now(), cfg.nodes, {a.job: a for a in cfg.workload.arrivals})
    api = stack.client()
    try:
        await _create_policy_objects(api, cfg)
        await _start_node_agent(stack, cfg, clock)
        await _start_controllers(stack, cfg, clock, rec)
        await _start_schedulers(stack, cfg, clock, rec, stop)
        pending_deletes: set[asyncio.Task[None]] = set()
        woken = asyncio.Event()  # wakes _watch_until_done, e.g. when a job's task fails the run
        rec.on_lifetime_start = lambda a: _delete_later(api, a, clock, rec, pending_deletes, a.delete_after_start,
                                                        stack.tasks, woken.set)
        rec.start = clock.now()  # simulated time 0: everything is up, the first arrival is due
        injector = asyncio.create_task(_inject(api, cfg, clock, rec, pending_deletes, stack.tasks, woken.set),
                                       name="arrivals")
        ended_by = await _watch_until_done(cfg, clock, rec, stack.runtime, injector, pending_deletes, stack.server,
                                           progress, api, stop, stack.tasks, woken)
        failure = injector.exception() if injector.done() and not injector.cancelled() else None
        if isinstance(failure, FATAL_TYPES):
            stack.tasks.append(injector)  # ends the run as a component's would: "arrivals stopped with ..."
        elif failure is not None:
            raise failure  # a bug while replaying the arrivals: the run did not see them all, so no report
        _raise_if_crashed(stack, rec.now())
        if ended_by == INTERRUPTED:
            rec.drop_unarrived(rec.now())  # as --until at this time would have left them out
        rec.close()
        injector.cancel()
        for t in pending_deletes:
            t.cancel()
        end_time, writes = rec.now(), _resource_version(stack.server)
        await _stop_components(stack)
        _check_stored_objects(stack.server)
        return SimResult(cfg, rec, end_time, ended_by, api_writes=writes,
                         snapshot_mismatches=stack.scheduler.cache.snapshot_mismatches,
                         stop_reason=stop.reason if stop is not None and ended_by == INTERRUPTED else None)
    finally:
        await _close_api_server(stack)


def _crashed(t: asyncio.Task[Any]) -> BaseException | None:
    return t.exception() if t.done() and not t.cancelled() else None


def _raise_if_crashed(stack: _Stack, now: float) -> None:
    """Raise :class:`ComponentFailed` for the first of the stack's long-running tasks that ended
    with an exception (the controller manager: named by the runnable that stopped it; the node
    agent's: ``node-agent local-path provisioner``, ...)."""
    for t in stack.tasks:
        if (e := _crashed(t)) is None:
            continue
        name = t.get_name()
        if name == "controller-manager" and getattr(stack.manager, "failed_runnable", None):
            name = stack.manager.failed_runnable
        text = " ".join(str(e).split())
        raise ComponentFailed(f"simulation failed at simulated {now:.0f} s: {name} stopped with "
                              f"{type(e).__name__}{': ' + text if text else ''}; no report") from e


SIM_WATCH_HISTORY = 200
"""Watch events the run's API server keeps per resource (a watch from an older resourceVersion
gets 410 and its informer lists again). A run's watches start once, when its components start,
and never end before the run does (no watch timeout, no bookmarks, see :data:`WATCH_TIMEOUT`),
so the history only has to cover the few writes between an informer's list and its watch at
start-up. A longer one only keeps old object versions alive: 5,000 per resource held ~115 MB of
them at simulated day 40 of Philly (peak RSS 743 against 628 MB), and each was freed 5,000 writes
of its resource later, out of the processor's caches (see docs/performance-simulate.md,
session 18)."""


async def _start_api_server(cfg: SimConfig, clock: LoopClock) -> _Stack:
    """The API server: in-memory storage, the Volcano admission plugins, no bookmarks, a short
    watch history (:data:`SIM_WATCH_HISTORY`), no request metrics (nothing can scrape them: the
    run has no sockets, and the report does not read them)."""
    from pumice.apiserver.server import APIServer
    from pumice.controllers import volcano as volcano_controllers

    mutating, validating = volcano_controllers.admission_plugins()
    server = APIServer(None, admission_plugins=[*mutating, *validating], clock=clock,
                       seed=cfg.seed, bookmark_interval=None, history=SIM_WATCH_HISTORY, request_metrics=False)
    # no client applies in a simulation: its hundreds of thousands of writes record no Update
    # managers (Apply entries still work; see Registry.track_update_managers)
    server.registry.track_update_managers = False
    await server.start()
    return _Stack(server)


async def _start_node_agent(stack: _Stack, cfg: SimConfig, clock: LoopClock) -> None:
    """One node agent with the simulated runtime hosting every Node of the node list (own capacity
    and labels; no Leases, no Events)."""
    from pumice.node.agent import AgentConfig, NodeAgent

    agent = NodeAgent(stack.client(), AgentConfig(
        runtime="simulated", nodes=len(cfg.nodes), node_names=[n.name for n in cfg.nodes], clock=clock,
        seed=cfg.seed, sim_start_latency=cfg.start_latency, lease_renew_interval=None, record_events=False))
    for spec in cfg.nodes:
        state = agent.nodes[spec.name]
        state.capacity = spec.capacity()
        state.labels.update(spec.node_labels())
    await agent.start()
    stack.agent, stack.runtime = agent, agent.runtime
    stack.tasks.extend(agent.tasks)  # its provisioner, ...: one that crashes fails the run too


async def _start_controllers(stack: _Stack, cfg: SimConfig, clock: LoopClock, rec: Recorder) -> None:
    """The controller manager (kube, Volcano and KubeRay controllers, the KubeRay ones on the
    simulated Ray dashboard) and the recorder's informer handlers; returns once it runs."""
    from pumice.controllers import kube as kube_controllers
    from pumice.controllers import ray as ray_controllers
    from pumice.controllers.volcano.wiring import setup_controllers as setup_volcano_controllers
    from pumice.runtime.manager import Manager
    from pumice.simulate.ray_dashboard import SimulatedRayDashboard

    mgr = Manager(stack.client(), clock=clock, identity="pumice-simulate", metrics=False, keep_metrics=False)
    pod_inf = mgr.informers.informer(ray_controllers_kind("POD"))
    rayjob_inf = mgr.informers.informer(ray_controllers_kind("RAY_JOB"))
    rayservice_inf = mgr.informers.informer(ray_controllers_kind("RAY_SERVICE"))
    dash = SimulatedRayDashboard(
        clock, pods=lambda ns, sel: pod_inf.lister.list(ns, sel),
        rayjobs=lambda ns, n: rayjob_inf.lister.get(ns, n),
        finish_pod=getattr(stack.runtime, "finish_pod", None),
        rayservices=lambda ns, n: rayservice_inf.lister.get(ns, n),
        list_rayjobs=lambda ns: rayjob_inf.lister.list(ns))
    services = any(a.kind == "RayService" for a in cfg.workload.arrivals)
    # RayService readiness counts the serve Service's ready endpoints (EndpointSlices)
    kube_controllers.setup(mgr, controllers=KUBE_CONTROLLERS + (("endpoints",) if services else ()),
                           pod_gc_check_period=None)
    setup_volcano_controllers(mgr)
    ray_controllers.setup(mgr, batch_scheduler=cfg.batch_scheduler, dashboard_client_factory=dash.factory,
                          seed=cfg.seed, serve_proxy_healthy=dash.serve_proxy_healthy)
    pod_inf.add_event_handler(rec.pod_event, lambda _o, n: rec.pod_event(n), lambda o: rec.pod_event(o, True))
    rayjob_inf.add_event_handler(rec.rayjob_event, lambda _o, n: rec.rayjob_event(n), None)
    rayservice_inf.add_event_handler(rec.rayservice_event, lambda _o, n: rec.rayservice_event(n), None)
    pg_inf = mgr.informers.informer(ray_controllers_kind("POD_GROUP"))
    pg_inf.add_event_handler(rec.podgroup_event, lambda _o, n: rec.podgroup_event(n), None)
    if any(a.kind == "Job" for a in cfg.workload.arrivals):  # a vcjob ends with its phase
        vcjob_inf = mgr.informers.informer(ray_controllers_kind("VCJOB"))
        vcjob_inf.add_event_handler(rec.vcjob_event, lambda _o, n: rec.vcjob_event(n), None)
    stack.manager = mgr
    stack.tasks.append(asyncio.create_task(mgr.start(), name="controller-manager"))
    await mgr.wait_started()


async def _start_schedulers(stack: _Stack, cfg: SimConfig, clock: LoopClock, rec: Recorder,
                            stop: StopFlag | None = None) -> None:
    """The Volcano scheduler on :class:`TriggeredLoop`, reporting to the recorder; the default
    scheduler too when RayJobs arrive (their submitter Pods are its) or RayServices arrive without
    KubeRay's Volcano batch scheduler (their Pods are its then)."""
    # No scheduler metrics, as no request metrics from the API server: nothing can scrape them
    # (no sockets), the report does not read them, and the virtual clock stands still inside a
    # session, so every latency would be 0.
    sched = _sim_scheduler_class()(stack.client(), conf_path=cfg.scheduler_conf, schedule_period=cfg.schedule_period,
                                   clock=clock, snapshot_mode=cfg.snapshot_mode, keep_metrics=False)
    sched.recorder = rec
    # No Events from the scheduler, as none from the node agent: nothing reads them during a run
    # and the API server is gone after it (one write per job otherwise: the PodGroup's Scheduled).
    sched.cache.event_kind = None
    await sched.cache.start()
    stack.scheduler = sched
    stack.tasks.append(asyncio.create_task(TriggeredLoop(sched, clock, cfg.schedule_period, stop).run(),
                                           name="volcano-scheduler"))
    if _needs_default_scheduler(cfg):
        from pumice.scheduler.default.scheduler import run_scheduler

        stack.tasks.append(asyncio.create_task(run_scheduler(stack.client(), clock=clock), name="default-scheduler"))


def _pod_specs(o: Obj) -> list[Obj]:
    """The Pod specs a manifest makes: its own (Pod), its template's (Deployment, ReplicaSet,
    StatefulSet, DaemonSet, batch/v1 Job), or its job template's (CronJob)."""
    spec = o.get("spec") or {}
    if o.get("kind") == "Pod":
        return [spec]
    if o.get("kind") == "CronJob" and not str(o.get("apiVersion", "")).startswith("batch.volcano.sh"):
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    template = spec.get("template")
    return [template.get("spec") or {}] if isinstance(template, dict) else []


def _needs_default_scheduler(cfg: SimConfig) -> bool:
    """Whether some arrival has Pods for Kubernetes' default scheduler: a RayJob's submitter Job,
    a RayService's Pods without the Volcano batch scheduler, or a Pod (or Pod template) whose
    ``schedulerName`` is not ``volcano`` (Kubernetes defaults it to ``default-scheduler``).
    Without one, such Pods would wait forever."""
    for a in cfg.workload.arrivals:
        if a.kind == "RayJob" or (a.kind == "RayService" and not cfg.batch_scheduler):
            return True
        for o in a.objects:
            if any(spec.get("schedulerName", "default-scheduler") != "volcano" for spec in _pod_specs(o)):
                return True
    return False


async def _stop_components(stack: _Stack) -> None:
    """Cancel the long-running tasks, stop the scheduler's informers and the node agent (no grace:
    the run is over). Failures while stopping are logged, not raised: the results are in."""
    for t in stack.tasks:
        t.cancel()
    for t in stack.tasks:
        try:
            await t
        except asyncio.CancelledError:
            pass
        except Exception as e:
            log.warning("simulation: %s ended with %s: %s", t.get_name(), type(e).__name__, e)
    try:
        await stack.scheduler.cache.factory.stop()
    except Exception as e:
        log.warning("simulation: stopping the scheduler's informers: %s: %s", type(e).__name__, e)
    stack.agent.stop_grace = 0.0
    try:
        await asyncio.wait_for(stack.agent.stop(), timeout=60)
    except Exception as e:
        log.warning("simulation: stopping the node agent: %s: %s", type(e).__name__, e)


def _check_stored_objects(server: Any) -> None:
    """Raise when a component changed an object the API server stored (the in-process informers
    share them: :meth:`pumice.apiserver.store.Store.changed_objects`): the run's decisions may
    then rest on objects that differ from what the API holds, so it gives no report.

    Raises:
        RuntimeError: naming the first changed objects.
    """
    changed = server.store.changed_objects()
    if changed:
        raise RuntimeError(f"simulation: {len(changed)} stored objects were changed in place by a component "
                           f"(a bug: informer objects are read-only): {', '.join(changed[:5])}")


async def _close_api_server(stack: _Stack) -> None:
    stack.server.store.close_watchers()
    for c in stack.clients:
        try:
            await c.close()
        except Exception as e:
            log.debug("simulation: closing a client: %s: %s", type(e).__name__, e)
    stack.server.close()


def ray_controllers_kind(name: str) -> Any:
    from pumice.api import scheme

    return getattr(scheme, name)


def _resource_version(server: Any) -> int:
    """The store's revision: the number of API writes so far (the "events" of events/s)."""
    return int(getattr(server.store, "revision", 0))


async def _create_policy_objects(api: Any, cfg: SimConfig) -> None:
    from pumice.controllers.volcano.queue import new_queue

    for name, value in sorted(cfg.workload.priority_classes.items()):
        await api.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                          "metadata": {"name": name}, "value": value})
    given = set()
    for q in cfg.queues:
        given.add(obj_name(q))
        try:
            await api.create(q)
        except ApiError as e:
            raise InputError(f"Queue {obj_name(q)!r} refused by the API server: {' '.join(str(e).split())}") from None
    for name in cfg.workload.queues:
        if name not in given and name != "default":
            await api.create(new_queue(name))


async def _inject(api: Any, cfg: SimConfig, clock: LoopClock, rec: Recorder,
                  pending: set[asyncio.Task[None]], components: list[asyncio.Task[Any]],
                  wake: Callable[[], None]) -> None:
    for a in cfg.workload.arrivals:
        if cfg.until is not None and a.time > cfg.until:
            break
        wait = a.time - rec.now()
        if wait > 0:
            await clock.sleep(wait)
        for obj in a.objects:
            try:
                await api.create(obj)
            except FATAL_TYPES:
                raise  # the run fails (no report), as when a component dies of it
            except Exception as e:
                log.info("arrival %s: creating %s %s failed: %s", a.job, obj.get("kind"), obj_name(obj), e)
                rec.rejected(a.job, " ".join(str(e).split()) or type(e).__name__)
        if a.delete_after is not None:
            _delete_later(api, a, clock, rec, pending, a.delete_after, components, wake)
    rec.touch()  # every arrival is in: the stall window starts no earlier than the last one


def _delete_later(api: Any, a: Arrival, clock: LoopClock, rec: Recorder, pending: set[asyncio.Task[None]],
                  delay: float | None, components: list[asyncio.Task[Any]], wake: Callable[[], None]) -> None:
    """Delete ``a``'s manifests ``delay`` seconds from now (a task kept in ``pending`` meanwhile;
    its end: :func:`_watch_job_task`)."""
    assert delay is not None
    t = asyncio.get_running_loop().create_task(_delete_after(api, a, clock, rec, delay), name=f"job {a.job} deletion")
    pending.add(t)
    t.add_done_callback(pending.discard)
    _watch_job_task(t, a.job, "deletion", components, wake)


def _watch_job_task(t: asyncio.Task[None], job: str, what: str, components: list[asyncio.Task[Any]],
                    wake: Callable[[], None]) -> None:
    """A job's fire-and-forget task (its deletion, its clean-up) ends as
    :func:`pumice._util.errors.watch_task` says: an exception is logged with the job and a
    traceback (``job j1: deletion failed: ...``); a FATAL_TYPES error fails the run as a
    component's would, the task joining ``components`` (the stack's tasks, which
    :func:`_raise_if_crashed` checks when the run ends: ``job j1 deletion stopped with
    MemoryError``) and ``wake`` called, so :func:`_watch_until_done` ends the run at once."""
    def fatal(_e: BaseException) -> None:
        components.append(t)
        wake()

    watch_task(t, owner=f"job {job}", what=what, logger=log, on_fatal=fatal)


async def _delete_after(api: Any, a: Arrival, clock: LoopClock, rec: Recorder, delay: float) -> None:
    await clock.sleep(delay)
    for obj in a.objects:
        kind = api.scheme.by_api_version_kind(obj["apiVersion"], obj["kind"])
        await _delete_quietly_if_gone(api, a, kind, obj)
    rec.deployment_deleted(a.job)


async def _delete_quietly_if_gone(api: Any, a: Arrival, kind: Any, obj: Obj, **options: Any) -> None:
    """Delete one of ``a``'s objects; 404 (already gone: the garbage collector or an earlier
    clean-up was first) is expected and ignored, any other refusal is logged with the job, the
    object and the Status; an exception that is not an API answer propagates (a bug)."""
    ns = (obj.get("metadata") or {}).get("namespace", NAMESPACE)
    try:
        await api.delete(kind, obj_name(obj), ns, **options)
    except ApiError as e:
        if e.code != 404:
            log.warning("job %s: deleting %s %s/%s was refused: %s", a.job, obj.get("kind"), ns, obj_name(obj), e)


async def _cleanup(api: Any, a: Arrival) -> None:
    """Delete a finished job's objects (and, through the garbage collector, its Pods and
    PodGroup), as kube's PodGC and Volcano's ``ttlSecondsAfterFinished`` would; the recorder has
    what it needs already."""
    for obj in a.objects:
        if a.kind == "RayJob":
            continue
        kind = api.scheme.by_api_version_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
        if kind is None:  # not a kind the server knows: it refused it, nothing was created
            continue
        await _delete_quietly_if_gone(api, a, kind, obj, propagation_policy="Background")


async def _watch_until_done(cfg: SimConfig, clock: LoopClock, rec: Recorder, runtime: Any, injector: asyncio.Task[None],
                            pending_deletes: set[asyncio.Task[None]], server: Any, progress: Progress | None,
                            api: Any = None, stop: StopFlag | None = None,
                            components: list[asyncio.Task[Any]] | None = None,
                            woken: asyncio.Event | None = None) -> str:
    """Return why the run ended: ``until``, ``done`` (every job that can end ended; with
    ``cfg.until``, every job ended: services without an end run to it), ``stalled``,
    :data:`INTERRUPTED` (``stop`` was set; checked whenever the loop gets control) or ``failed``
    (``injector`` or one of ``components``, the stack's long-running tasks, ended with an
    exception; see :func:`_raise_if_crashed`). ``woken``: the event that wakes the loop (set
    by a job's task that fails the run: :func:`_watch_job_task`); a new one when None.

    Wakes when a job finishes and at least every simulated hour (progress), so a 149-day trace
    costs a few thousand wake-ups, not one per period. With ``cfg.until``, ends at the first loop
    instant whose simulated time is ``cfg.until`` or later (a wait is never shorter than
    :data:`LOOP_TICK`, which always moves the time).
    """
    finite = sum(1 for a in rec.arrivals.values() if a.duration is not None or a.delete_after is not None
                 or a.kind == "RayJob")
    total = len(rec.arrivals)
    woken = woken if woken is not None else asyncio.Event()
    cleanups: set[asyncio.Task[None]] = set()
    crashable = components if components is not None else []

    def finished(job: str) -> None:
        woken.set()
        if cfg.cleanup and api is not None:
            t = asyncio.get_running_loop().create_task(_cleanup(api, rec.arrivals[job]), name=f"job {job} clean-up")
            cleanups.add(t)
            t.add_done_callback(cleanups.discard)
            _watch_job_task(t, job, "clean-up", crashable, woken.set)

    rec.on_job_finished = finished
    injector.add_done_callback(lambda _t: woken.set())  # every arrival in: the stall window may apply now
    if stop is not None:
        stop.bind(asyncio.get_running_loop(), woken.set)
    for t in crashable:
        t.add_done_callback(lambda _t: woken.set())
    def finite_done() -> bool:
        return rec.finished >= finite and not pending_deletes and _all_finite_done(rec)

    while True:
        step = PROGRESS_EVERY
        if cfg.until is not None:
            step = min(step, cfg.until - rec.now())
        if injector.done() and getattr(runtime, "timers", 1) == 0 \
                and not pending_deletes \
                and not (cfg.until is not None and finite_done()):  # services left: they run to --until
            step = min(step, max(0.0, rec.last_change + cfg.stall_after - rec.now()))
        if step > 0 and not woken.is_set():
            # at least a tick: the simulated time is epoch-scale floats less the start (2**-22 s
            # apart), so at the loop instant of --until 1.1 it reads 1.0999999, and the 9.5e-8 s
            # left, under the loop's clock resolution, would be due at once without the time
            # moving: the loop would spin at that instant for ever
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), max(step, LOOP_TICK))
        woken.clear()
        if stop is not None and stop.is_set():
            return INTERRUPTED
        if _crashed(injector) is not None or any(_crashed(t) is not None for t in crashable):
            return "failed"
        await asyncio.sleep(0)
        _collect_if_grown()
        now = rec.now()
        if progress is not None:
            progress(now, rec.finished, total, _resource_version(server))
        if cfg.until is not None and now >= cfg.until:
            return "until"
        if not injector.done():
            continue
        if finite_done():
            if cfg.until is None or all(js.finished is not None for js in rec.jobs.values()):
                return "done"
            continue  # with --until, services without an end (no duration) run to it
        if getattr(runtime, "timers", 1) == 0 and not pending_deletes and now - rec.last_change >= cfg.stall_after:
            return "stalled"


PROGRESS_EVERY = 3600.0


def _all_finite_done(rec: Recorder) -> bool:
    return all(js.finished is not None for js in rec.jobs.values()
               if js.arrival.duration is not None or js.arrival.delete_after is not None or js.arrival.kind == "RayJob")
