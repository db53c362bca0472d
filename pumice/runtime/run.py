"""Run a controller manager with a chosen set of controller groups, until stopped.

Used by ``pumice controller-manager`` (its own process, any API server named by a kubeconfig) and
by ``pumice up`` (in-process). The caller passes the groups' ``setup`` callables: which groups
exist is wired in :mod:`pumice.cli._controllers` (the layer that may import the controllers), not
looked up by module name here.

A setup callable registers controllers with ``mgr.controller(...)...complete(...)`` (and may add
runnables); it may be sync or async.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable, Sequence

from pumice._util.clock import Clock
from pumice.client.base import KubeClient
from pumice.runtime.manager import Manager

SetupFn = Callable[[Manager], object]
"""A controller group's setup: registers its controllers on the manager (sync or async)."""

__all__ = ["SetupFn", "run_controller_manager", "setup_controllers"]


async def setup_controllers(mgr: Manager, setups: Sequence[SetupFn]) -> None:
    """Call each setup on ``mgr``, in order, awaiting the async ones."""
    for setup in setups:
        out = setup(mgr)
        if inspect.isawaitable(out):
            await out


async def run_controller_manager(
    client: KubeClient,
    setups: Sequence[SetupFn],
    *,
    leader_elect: bool = True,
    clock: Clock | None = None,
    stop_event: asyncio.Event | None = None,
    health_port: int | None = None,
    identity: str | None = None,
    leader_election_id: str = "pumice-controller-manager",
    leader_election_namespace: str = "kube-system",
    lease_duration: float = 15.0,
    renew_deadline: float = 10.0,
    retry_period: float = 2.0,
    on_manager: Callable[[Manager], None] | None = None,
    graceful_shutdown_timeout: float = 30.0,
) -> None:
    """Build a :class:`Manager`, call ``setups`` on it, and run until ``stop_event`` is set (or the
    task is cancelled).

    Args:
        client: the API client (the caller keeps ownership and closes it).
        setups: the controller groups' setup callables (see :mod:`pumice.cli._controllers`).
        leader_elect: run only while holding the Lease ``leader_election_namespace/leader_election_id``.
        clock: time source.
        stop_event: set to stop gracefully.
        health_port: serve /healthz, /readyz, /metrics on 127.0.0.1 (None: off).
        on_manager: called with the Manager before it starts (tests use it to watch progress).
        graceful_shutdown_timeout: seconds the controllers' in-flight reconciles have at a stop
            before they are cancelled (the Manager's).

    Raises:
        LeaderElectionLost: the Lease was lost (the process should exit and be restarted).
    """
    mgr = Manager(
        client,
        clock=clock,
        leader_election=leader_elect,
        leader_election_id=leader_election_id,
        leader_election_namespace=leader_election_namespace,
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=retry_period,
        health_port=health_port,
        identity=identity,
        graceful_shutdown_timeout=graceful_shutdown_timeout,
    )
    await setup_controllers(mgr, setups)
    if on_manager is not None:
        on_manager(mgr)
    waiter: asyncio.Task[None] | None = None
    if stop_event is not None:
        async def _wait_stop() -> None:
            await stop_event.wait()
            mgr.stop()

        waiter = asyncio.get_running_loop().create_task(_wait_stop(), name="controller-manager-stop")
    try:
        await mgr.start()
    finally:
        if waiter is not None:
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiter
