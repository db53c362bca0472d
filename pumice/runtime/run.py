"""Run a controller manager with a chosen set of controller groups, until stopped.

Used by ``pumice controller-manager`` (its own process, any API server named by a kubeconfig) and
by ``pumice up`` (in-process). Controller groups are found by name and loaded lazily, so a group
that is not installed (or fails to import) is reported in one line and the others still run:

==========  ==============================================================
``kube``    ``pumice.controllers.kube.setup(mgr)``
``ray``     ``pumice.controllers.ray.setup(mgr, batch_scheduler=...)``
``volcano`` ``pumice.controllers.volcano.setup(mgr)``
==========  ==============================================================

A ``setup`` function registers controllers with ``mgr.controller(...)...complete(...)`` (and may
add runnables); it may be sync or async.

Deviates: the runtime layer does not import controllers; the groups are plug-ins loaded by module
name (``importlib``), which is why this module can live below ``pumice.controllers``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import logging
import sys
from collections.abc import Callable
from typing import Any

from pumice._util.clock import Clock
from pumice.client.base import KubeClient
from pumice.runtime.manager import Manager

log = logging.getLogger(__name__)

CONTROLLER_GROUPS: dict[str, str] = {
    "kube": "pumice.controllers.kube",
    "ray": "pumice.controllers.ray",
    "volcano": "pumice.controllers.volcano",
}
"""Controller group name -> module that defines ``setup(mgr, ...)``."""

__all__ = ["CONTROLLER_GROUPS", "run_controller_manager", "setup_controllers"]


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def setup_controllers(
    mgr: Manager, controllers: list[str], *, batch_scheduler: str | None = None,
    report: Callable[[str], None] = _say,
) -> list[str]:
    """Call each group's ``setup``. Returns the groups set up; a missing group is reported via
    ``report`` in one line and skipped.

    Raises:
        ValueError: for a group name not in :data:`CONTROLLER_GROUPS` (lists the known ones).
    """
    unknown = [c for c in controllers if c not in CONTROLLER_GROUPS]
    if unknown:
        raise ValueError(f"unknown controllers {unknown}; known: {sorted(CONTROLLER_GROUPS)}")
    done: list[str] = []
    for group in controllers:
        module_name = CONTROLLER_GROUPS[group]
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            report(f"controller-manager: '{group}' controllers are not available ({module_name}: {e}); skipping")
            continue
        setup = getattr(module, "setup", None)
        if not callable(setup):
            report(f"controller-manager: '{group}' controllers are not available ({module_name}.setup "
                   "is missing); skipping")
            continue
        kwargs: dict[str, Any] = {}
        if group == "ray":
            kwargs["batch_scheduler"] = batch_scheduler
        out = setup(mgr, **kwargs)
        if inspect.isawaitable(out):
            await out
        done.append(group)
        log.info("controller-manager: %s controllers set up", group)
    return done


async def run_controller_manager(
    client: KubeClient,
    controllers: list[str],
    *,
    batch_scheduler: str | None = None,
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
) -> None:
    """Build a :class:`Manager`, set up ``controllers`` (e.g. ``["kube", "ray", "volcano"]``), and
    run until ``stop_event`` is set (or the task is cancelled).

    Args:
        client: the API client (the caller keeps ownership and closes it).
        controllers: controller group names (see :data:`CONTROLLER_GROUPS`).
        batch_scheduler: KubeRay's batch scheduler (``"volcano"`` or None; ``"none"`` means None).
        leader_elect: run only while holding the Lease ``leader_election_namespace/leader_election_id``.
        clock: time source.
        stop_event: set to stop gracefully.
        health_port: serve /healthz, /readyz, /metrics on 127.0.0.1 (None: off).
        on_manager: called with the Manager before it starts (tests use it to watch progress).

    Raises:
        LeaderElectionLost: the Lease was lost (the process should exit and be restarted).
        ValueError: unknown controller group name.
    """
    if batch_scheduler in ("", "none"):
        batch_scheduler = None
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
    )
    await setup_controllers(mgr, controllers, batch_scheduler=batch_scheduler)
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
