"""The Manager: runs the shared informers, the controllers and other runnables, leader election,
health endpoints, and shuts them down in order.

Start order: health server -> informers (every replica keeps warm caches) -> runnables that do not
need the leader -> (leader election, when enabled) -> controllers and runnables that need the
leader. Shutdown runs the reverse: controllers (in-flight reconciles finish, up to the graceful
timeout), other runnables, the Lease is released, informers stop, Event writes are flushed, the
health server stops.

Leadership: with ``leader_election=True`` controllers run only while this manager holds the Lease
``<leader_election_namespace>/<leader_election_id>``. If the Lease is lost (renewal failed for
``renew_deadline``), the manager stops everything and :meth:`Manager.start` raises
:class:`LeaderElectionLost` (a restarted process campaigns again; that is upstream's behaviour).

Runnables: ``async def fn() -> None`` coroutine functions, run as tasks until they return or are
cancelled at shutdown. A runnable that raises stops the manager and :meth:`start` re-raises.

Mirrors: controller-runtime pkg/manager/internal.go (controllerManager.Start, engageStopProcedure)
and runnable_group.go.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pumice._util.clock import Clock, default_clock
from pumice.api.scheme import Scheme
from pumice.client.base import KubeClient
from pumice.client.informer import Informer, SharedInformerFactory
from pumice.runtime.builder import Builder
from pumice.runtime.controller import Controller
from pumice.runtime.events import EventRecorder
from pumice.runtime.leaderelection import LeaderElectionConfig, LeaderElector

log = logging.getLogger(__name__)

Runnable = Callable[[], Awaitable[None]]

__all__ = ["CacheSyncTimeout", "LeaderElectionLost", "Manager", "Runnable"]


class CacheSyncTimeout(RuntimeError):
    """The informers did not finish their first list in time (upstream: "timed out waiting for
    cache to be synced")."""


class LeaderElectionLost(RuntimeError):
    """The manager lost its Lease and stopped (upstream: "leader election lost")."""


@dataclass
class _Runnable:
    fn: Runnable
    needs_leader: bool
    name: str


class Manager:
    """Owns the client, clock, shared informers and event recorders of one process's controllers.

    Args:
        client: the API client every controller shares.
        clock: time source (default: the process clock).
        leader_election: run controllers only while holding the Lease.
        leader_election_id: Lease name.
        leader_election_namespace: Lease namespace.
        lease_duration, renew_deadline, retry_period: seconds (see
            :class:`~pumice.runtime.leaderelection.LeaderElectionConfig`).
        health_port: serve /healthz, /readyz (and /metrics) on 127.0.0.1:<port>; 0 picks a free
            port (read :attr:`health_port` after :meth:`wait_started`); None: no server.
        metrics: serve /metrics on the health port.
        keep_metrics: count the controllers' and their work queues' metrics (a process that
            serves none, such as a simulation, need not: see :class:`Controller`).
        identity: leader-election identity (default ``<hostname>_<uuid4>``).
        graceful_shutdown_timeout: seconds to let in-flight reconciles finish at stop.
        cache_sync_timeout: seconds to wait for the informers' first list before failing with
            :class:`CacheSyncTimeout` (e.g. a CRD that is not installed); None waits forever.

    Raises:
        ValueError: on inconsistent leader-election timings.
    """

    def __init__(
        self,
        client: KubeClient,
        *,
        clock: Clock | None = None,
        leader_election: bool = False,
        leader_election_id: str = "pumice-controller-manager",
        leader_election_namespace: str = "kube-system",
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        health_port: int | None = None,
        metrics: bool = True,
        keep_metrics: bool = True,
        identity: str | None = None,
        graceful_shutdown_timeout: float = 30.0,
        cache_sync_timeout: float | None = 120.0,
    ) -> None:
        self.client = client
        self.clock = clock or default_clock()
        self.informers = SharedInformerFactory(client, clock=self.clock)
        self.informers.on_failure = self._informer_failed
        self.leader_election = leader_election
        self.identity = identity or f"{os.uname().nodename}_{uuid.uuid4()}"
        # Events name the reporting instance; keep it stable across runs unless an identity is given.
        self._instance = identity or os.uname().nodename
        self.leader_election_config = LeaderElectionConfig(
            name=leader_election_id,
            namespace=leader_election_namespace,
            identity=self.identity,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
        )
        self.health_port = health_port
        self.metrics = metrics
        self.keep_metrics = keep_metrics
        self.graceful_shutdown_timeout = graceful_shutdown_timeout
        self.cache_sync_timeout = cache_sync_timeout
        self.controllers: list[Controller] = []
        self.failed_runnable: str | None = None
        """The name of the runnable (``controller-<name>`` for a controller) whose exception
        stopped the manager; None while none has."""
        self.elector: LeaderElector | None = None
        self._runnables: list[_Runnable] = []
        self._recorders: dict[str, EventRecorder] = {}
        self._stop_requested = False
        self._stop_event: asyncio.Event | None = None
        self._started = asyncio.Event()
        self._standby = asyncio.Event()
        self._leading = asyncio.Event()
        self._running = False
        self._health: Any = None  # pumice.runtime.health.HealthServer while serving
        self._healthz: dict[str, Callable[[], bool]] = {"ping": lambda: True}
        self._readyz: dict[str, Callable[[], bool]] = {"informers-synced": self._caches_synced}

    # -- accessors ---------------------------------------------------------------------------

    @property
    def scheme(self) -> Scheme:
        """The client's scheme (kinds known to the API server)."""
        return self.client.scheme

    @property
    def is_leader(self) -> bool:
        """True while controllers run (always True once started without leader election)."""
        return self._leading.is_set()

    def event_recorder(self, component: str) -> EventRecorder:
        """The EventRecorder writing Events with ``source.component = component`` (one per name)."""
        rec = self._recorders.get(component)
        if rec is None:
            rec = EventRecorder(self.client, component, clock=self.clock, instance=self._instance)
            self._recorders[component] = rec
        return rec

    # -- registration ------------------------------------------------------------------------

    def controller(self, name: str) -> Builder:
        """Start wiring a controller named ``name`` (see :mod:`pumice.runtime.builder`)."""
        return Builder(self, name)

    def add_controller(self, ctrl: Controller) -> None:
        """Register a built controller (the builder's ``complete`` calls this).

        Raises:
            ValueError: when a controller of that name exists.
        """
        if any(c.name == ctrl.name for c in self.controllers):
            raise ValueError(f"controller {ctrl.name!r} already exists in this manager")
        ctrl.graceful_shutdown_timeout = self.graceful_shutdown_timeout
        self.controllers.append(ctrl)
        if self._running and self._leading.is_set():
            self._spawn(_Runnable(ctrl.start, True, f"controller-{ctrl.name}"), self._leader_tasks)

    def add_healthz_check(self, name: str, check: Callable[[], bool]) -> None:
        """Add a liveness check to /healthz (``check()`` True when healthy; exceptions count as
        failure). Mirrors controller-runtime Manager.AddHealthzCheck."""
        self._healthz[name] = check

    def add_readyz_check(self, name: str, check: Callable[[], bool]) -> None:
        """Add a readiness check to /readyz. Mirrors controller-runtime Manager.AddReadyzCheck."""
        self._readyz[name] = check

    def add_runnable(self, fn: Runnable, needs_leader: bool = True, *, name: str | None = None) -> None:
        """Run ``await fn()`` while the manager runs (``needs_leader``: only while leading).

        ``fn`` runs until it returns or is cancelled at shutdown; an exception stops the manager.
        """
        r = _Runnable(fn, needs_leader, name or str(getattr(fn, "__qualname__", "runnable")))
        self._runnables.append(r)
        if self._running and (not needs_leader or self._leading.is_set()):
            self._spawn(r, self._leader_tasks if needs_leader else self._other_tasks)

    # -- lifecycle ---------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask the manager to stop (safe from signal handlers and before :meth:`start`)."""
        self._stop_requested = True
        if self._stop_event is not None:
            self._stop_event.set()

    async def wait_started(self) -> None:
        """Wait until the caches have synced and the controllers have started (handlers
        registered, workers running). With leader election this needs the Lease; see
        :meth:`wait_standby` for "running, maybe not leading"."""
        await self._started.wait()

    async def wait_standby(self) -> None:
        """Wait until the caches have synced (controllers may still wait for the Lease)."""
        await self._standby.wait()

    async def wait_leading(self) -> None:
        """Wait until this manager holds the Lease (immediately without leader election)."""
        await self._leading.wait()

    async def start(self) -> None:
        """Run until :meth:`stop` (or cancellation), then shut down in order.

        Raises:
            LeaderElectionLost: the Lease was lost while leading.
            CacheSyncTimeout: the informers did not sync within ``cache_sync_timeout``.
            RuntimeError: when started twice.
            BaseException: the first exception raised by a runnable (cancellation aside), after
                the shutdown; :attr:`failed_runnable` names the runnable. A controller's
                reconcile raises only what it does not retry (MemoryError, ...).
        """
        if self._running:
            raise RuntimeError("manager already started")
        self._running = True
        self._stop_event = asyncio.Event()
        if self._stop_requested:
            self._stop_event.set()
        self._leader_tasks: list[asyncio.Task[None]] = []
        self._other_tasks: list[asyncio.Task[None]] = []
        self._failure: BaseException | None = None
        self.failed_runnable = None
        elector_task: asyncio.Task[None] | None = None
        lost = False
        try:
            if self.health_port is not None:
                from pumice.runtime.health import HealthServer, build_app  # uvicorn: import only when used

                self._health = HealthServer(
                    build_app(self._healthz, self._readyz, metrics=self.metrics),
                    port=self.health_port,
                )
                await self._health.start()
                self.health_port = self._health.port
            await self.informers.start()
            for r in self._runnables:
                if not r.needs_leader:
                    self._spawn(r, self._other_tasks)
            synced = asyncio.ensure_future(self.informers.wait_for_cache_sync(timeout=self.cache_sync_timeout))
            if await self._until_stopped(synced) and not synced.result():
                unsynced = sorted(f"{i.kind.plural}.{i.kind.group or 'core'}"
                                  for i in self.informers.informers() if not i.has_synced)
                raise CacheSyncTimeout(
                    f"timed out after {self.cache_sync_timeout}s waiting for the caches of {', '.join(unsynced)} "
                    "to sync (is the kind served? a CRD may be missing)"
                )
            self._standby.set()
            if self.leader_election:
                self.elector = LeaderElector(self.client, self.leader_election_config, clock=self.clock)
                elector_task = asyncio.get_running_loop().create_task(self.elector.run(), name="leader-election")
                won = await self._until_stopped(self.elector.leading.wait(), elector_task)
                if won and self.elector.is_leader:
                    self._lead()
                    await self._until_stopped(self._controllers_started(), elector_task)
                    self._started.set()
                    done = await self._until_stopped(elector_task)
                    if done and not elector_task.cancelled() and (e := elector_task.exception()) is not None \
                            and self._failure is None:
                        # the elector failed (a MemoryError: FATAL_TYPES), which is no lost Lease
                        self._failure, self.failed_runnable = e, "leader-election"
                    lost = done and not self._stop_event.is_set() and self._failure is None
                elif elector_task.done() and not elector_task.cancelled() and elector_task.exception():
                    self._failure, self.failed_runnable = elector_task.exception(), "leader-election"
            else:
                self._lead()
                await self._until_stopped(self._controllers_started())
                self._started.set()
                await self._until_stopped()
        finally:
            # Lost the Lease: another manager may act already, so in-flight reconciles are
            # cancelled at once instead of being given the graceful timeout.
            await self._shutdown(elector_task, graceful=not lost)
        if self._failure is not None:
            raise self._failure
        if lost:
            raise LeaderElectionLost(
                f"{self.identity} lost lease {self.leader_election_config.namespace}/"
                f"{self.leader_election_config.name}"
            )

    def _lead(self) -> None:
        self._leading.set()
        for ctrl in self.controllers:
            self._spawn(_Runnable(ctrl.start, True, f"controller-{ctrl.name}"), self._leader_tasks)
        for r in self._runnables:
            if r.needs_leader:
                self._spawn(r, self._leader_tasks)

    async def _controllers_started(self) -> None:
        """Until every controller has registered its handlers, synced and started its workers."""
        await asyncio.gather(*(c.started.wait() for c in self.controllers))

    def _spawn(self, r: _Runnable, into: list[asyncio.Task[None]]) -> None:
        task = asyncio.get_running_loop().create_task(self._guard(r), name=r.name)
        into.append(task)

    async def _guard(self, r: _Runnable) -> None:
        try:
            await r.fn()
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # MemoryError, ... too: the manager stops and raises it (see start)
            log.exception("manager: runnable %s failed", r.name)
            if self._failure is None:
                self._failure, self.failed_runnable = e, r.name
            self.stop()

    def _informer_failed(self, inf: Informer, e: BaseException) -> None:
        """An informer stopped for good (a MemoryError in its list/watch loop or a handler): its
        cache no longer follows the API, so the manager stops and :meth:`start` raises ``e``
        (:attr:`failed_runnable`: ``informer-<plural>``)."""
        if self._failure is None:
            self._failure, self.failed_runnable = e, f"informer-{inf.kind.plural}"
        self.stop()

    async def _until_stopped(self, aw: Awaitable[object] | None = None,
                             also: asyncio.Task[None] | None = None) -> bool:
        """Wait for ``aw`` (and/or task ``also``) or the stop event; True when ``aw`` finished
        (or ``also`` finished) first."""
        assert self._stop_event is not None
        stop = asyncio.ensure_future(self._stop_event.wait())
        waits: set[asyncio.Future[Any]] = {stop}
        owned = aw is not None and not isinstance(aw, asyncio.Future)  # a coroutine we wrap: ours to cancel
        main: asyncio.Future[Any] | None = asyncio.ensure_future(aw) if aw is not None else None
        if main is not None:
            waits.add(main)
        if also is not None:
            waits.add(also)
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if owned and main is not None and not main.done():
                main.cancel()
        return stop not in done

    def _caches_synced(self) -> bool:
        return all(inf.has_synced for inf in self.informers.informers())

    async def _shutdown(self, elector_task: asyncio.Task[None] | None, *, graceful: bool = True) -> None:
        log.info("manager: stopping")
        self._leading.clear()
        # 1. controllers: let in-flight reconciles finish (unless the Lease is lost)
        for c in self.controllers:
            if not graceful:
                c.graceful_shutdown_timeout = 0
        await asyncio.gather(*(c.stop() for c in self.controllers), return_exceptions=True)
        # 2. runnables (leader ones first)
        for tasks in (self._leader_tasks, self._other_tasks):
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
            tasks.clear()
        # 3. release the Lease
        if elector_task is not None:
            elector_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await elector_task
        # 4. informers, events, health
        await self.informers.stop()
        for rec in self._recorders.values():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(rec.close(), 5.0)
        if self._health is not None:
            await self._health.stop()
            self._health = None
        self._running = False
        self._started.clear()
        self._standby.clear()
