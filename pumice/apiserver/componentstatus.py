"""core/v1 ComponentStatus: the health of pumice's own parts, computed on each read.

kube-apiserver answers ``GET /api/v1/componentstatuses`` by probing the parts of the control
plane it knows (kube-controller-manager's and kube-scheduler's ``/healthz``, each etcd server) and
reporting one ``Healthy`` condition per part: ``True`` with message ``ok``, or ``False`` with the
probe's error as the message. Nothing is stored; only list and get are served, a watch is 405,
and every answer carries the Warning ``v1 ComponentStatus is deprecated in v1.19+``.

pumice reports its own parts under their own names, never upstream's (there is no etcd):
``storage`` (the SQLite store: unhealthy once a commit or fsync failed, after which the server
refuses writes until restarted) is always there; ``pumice up`` adds ``controller-manager``,
``scheduler`` (the default scheduler), ``volcano-scheduler`` (when Volcano runs) and
``node-agent``, each healthy while its task runs and unhealthy, with how it ended, once it has
stopped. A standalone ``pumice apiserver`` knows only its storage.

Mirrors: kubernetes pkg/registry/core/componentstatus/rest.go (List, Get, getComponentStatus),
k8s.io/apiserver pkg/endpoints/deprecation (the warning text).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pumice.api import Obj
from pumice.apiserver.errors import StatusError

__all__ = ["DEPRECATION_WARNING", "Check", "ComponentStatuses", "Probe", "task_probe"]

log = logging.getLogger(__name__)

#: what every componentstatuses answer says in its Warning header (deprecation.WarningMessage)
DEPRECATION_WARNING = "v1 ComponentStatus is deprecated in v1.19+"


@dataclass(frozen=True)
class Probe:
    """One probe's result.

    Attributes:
        healthy: True (condition status ``True``), False (``False``) or None (``Unknown``).
        message: the condition's message: ``ok`` when healthy, else what went wrong.
        error: the condition's ``error`` (upstream sets it only when the probe itself could not
            run); empty leaves it out.
    """

    healthy: bool | None
    message: str
    error: str = ""


#: a part's health check: called on every read, must not block
Check = Callable[[], Awaitable[Probe]]


def task_probe(task: asyncio.Task[None]) -> Check:
    """A check reporting a component run as ``task``: healthy while it runs, else unhealthy with
    how it ended (its exception, ``cancelled`` or ``stopped``)."""

    async def check() -> Probe:
        if not task.done():
            return Probe(True, "ok")
        if task.cancelled():
            return Probe(False, "cancelled")
        exc = task.exception()
        if exc is not None:
            return Probe(False, f"ended with {type(exc).__name__}: {exc}")
        return Probe(False, "stopped")

    return check


def _condition(probe: Probe) -> Obj:
    status = "Unknown" if probe.healthy is None else "True" if probe.healthy else "False"
    cond: Obj = {"type": "Healthy", "status": status}
    if probe.message:
        cond["message"] = probe.message
    if probe.error:
        cond["error"] = probe.error
    return cond


class ComponentStatuses:
    """The parts whose health ``componentstatuses`` reports, by name (the object's name)."""

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}

    def add(self, name: str, check: Check) -> None:
        """Report ``name`` with ``check`` (replacing an earlier check of that name)."""
        self._checks[name] = check

    def names(self) -> list[str]:
        return sorted(self._checks)

    async def probe(self, name: str) -> Probe | None:
        """The health of ``name`` now; None when no part has that name. A check that fails to run
        gives healthy None (``Unknown``) with the error, as upstream."""
        check = self._checks.get(name)
        if check is None:
            return None
        try:
            return await check()
        except Exception as e:
            log.warning("component status check of %s failed: %s", name, e)
            return Probe(None, "", f"{type(e).__name__}: {e}")

    async def _object(self, name: str) -> Obj:
        probe = await self.probe(name) or Probe(None, "", "no such component")  # callers pass known names
        return {"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name},
                "conditions": [_condition(probe)]}

    async def statuses(self) -> list[Obj]:
        """Every part's ComponentStatus, by name (upstream's order is that of its probes finishing)."""
        return list(await asyncio.gather(*(self._object(n) for n in self.names())))

    async def get(self, name: str) -> Obj:
        """The ComponentStatus of ``name``.

        Raises:
            StatusError: 404 ``componentstatus "<name>" not found`` (upstream names the resource
                in the singular here).
        """
        if name not in self._checks:
            raise StatusError(404, f'componentstatus "{name}" not found', "NotFound",
                              {"name": name, "kind": "componentstatus"})
        return await self._object(name)
