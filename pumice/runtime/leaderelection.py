"""Leader election over a coordination.k8s.io/v1 Lease, as client-go's leaderelection.

One candidate holds the Lease (``spec.holderIdentity``) and renews ``spec.renewTime`` every
``retry_period``; the others try every ``retry_period`` and take over once the record they observe
has not changed for ``leaseDurationSeconds`` (measured on their *own* monotonic clock from when
they last saw the record change, never by comparing timestamps across machines). A leader that
cannot renew for ``renew_deadline`` seconds gives up leadership. All writes are optimistic
(``resourceVersion``), so two candidates can never both succeed in one round.

Lease fields written: ``holderIdentity``, ``leaseDurationSeconds`` (int seconds, rounded up),
``acquireTime``, ``renewTime`` (MicroTime), ``leaseTransitions`` (+1 each time the holder
changes). On a graceful stop the leader releases the Lease (empty holder,
``leaseDurationSeconds: 1``), so a standby takes over at its next retry.

Timing invariant (validated): ``lease_duration > renew_deadline > retry_period * 1.2 > 0``.

Mirrors: client-go tools/leaderelection/leaderelection.go (tryAcquireOrRenew, acquire, renew,
release) and resourcelock/leaselock.go.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import zlib
from dataclasses import dataclass
from typing import Any

from pumice._util.clock import Clock, default_clock, rfc3339_micro
from pumice._util.errors import FATAL_TYPES
from pumice.api.scheme import LEASE
from pumice.client.base import KubeClient, is_conflict, is_not_found
from pumice.runtime import metrics

log = logging.getLogger(__name__)


__all__ = ["LEASE", "LeaderElectionConfig", "LeaderElector"]

_JITTER = 1.2


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Where the Lease is and how fast the election moves.

    Attributes:
        name: Lease name (controller-runtime's ``LeaderElectionID``).
        namespace: Lease namespace.
        identity: this candidate's unique id (hostname + "_" + uuid by default in the Manager).
        lease_duration: seconds a standby waits after the last observed change before taking over.
        renew_deadline: seconds the leader keeps retrying a renewal before giving up.
        retry_period: seconds between attempts.
        release_on_cancel: release the Lease when stopped gracefully.

    Raises:
        ValueError: unless lease_duration > renew_deadline > retry_period * 1.2 > 0, or when
            identity is empty.
    """

    name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election identity must not be empty")
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if not self.renew_deadline > _JITTER * self.retry_period:
            raise ValueError("renew_deadline must be greater than retry_period * 1.2")
        if not self.retry_period > 0:
            raise ValueError("retry_period must be greater than zero")


class LeaderElector:
    """Campaign for the Lease; :meth:`run` returns when leadership is lost.

    Attributes:
        is_leader: True while this candidate holds the Lease.
        leading: an Event set when leadership is acquired.
        observed: the last Lease spec seen.

    Usage (what the Manager does)::

        elector = LeaderElector(client, config, clock=clock)
        await elector.run()      # returns only after leading and then losing the Lease
    """

    def __init__(self, client: KubeClient, config: LeaderElectionConfig, *, clock: Clock | None = None) -> None:
        self.client = client
        self.config = config
        self.clock = clock or default_clock()
        self.is_leader = False
        self.leading = asyncio.Event()
        self.observed: dict[str, Any] = {}
        self._observed_time = 0.0
        self._lease_rv = ""
        self._rng = random.Random(zlib.crc32(config.identity.encode()))
        self._status = metrics.LEADER_STATUS.labels(config.name)

    @property
    def holder(self) -> str:
        """The holderIdentity last observed ("" when none)."""
        return str(self.observed.get("holderIdentity") or "")

    async def run(self) -> None:
        """Acquire (retrying every ``retry_period`` with jitter), then renew until a renewal fails
        for ``renew_deadline``; then return. Cancelling releases the Lease if held and
        ``release_on_cancel``."""
        try:
            await self._acquire()
            await self._renew()
        finally:
            was_leader = self.is_leader
            self._set_leader(False)
            if was_leader and self.config.release_on_cancel:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._release())

    def _set_leader(self, leading: bool) -> None:
        self.is_leader = leading
        self._status.set(1 if leading else 0)
        if leading:
            self.leading.set()
        else:
            self.leading.clear()

    async def _acquire(self) -> None:
        log.info("leader election: %s attempting to acquire lease %s/%s",
                 self.config.identity, self.config.namespace, self.config.name)
        while True:
            if await self._try_with_timeout():
                self._set_leader(True)
                log.info("leader election: %s acquired lease %s/%s",
                         self.config.identity, self.config.namespace, self.config.name)
                return
            await self.clock.sleep(self.config.retry_period * (1 + self._rng.random() * (_JITTER - 1)))

    async def _renew(self) -> None:
        while True:
            deadline = self.clock.monotonic() + self.config.renew_deadline
            renewed = False
            while True:
                if await self._try_with_timeout(deadline - self.clock.monotonic()):
                    renewed = True
                    break
                if self.clock.monotonic() + self.config.retry_period >= deadline:
                    break
                await self.clock.sleep(self.config.retry_period)
            if not renewed:
                log.warning("leader election: %s failed to renew lease %s/%s within %.1fs; lost",
                            self.config.identity, self.config.namespace, self.config.name,
                            self.config.renew_deadline)
                return
            await self.clock.sleep(self.config.retry_period)

    async def _try_with_timeout(self, timeout: float | None = None) -> bool:
        budget = self.config.renew_deadline if timeout is None else max(timeout, 0.0)
        try:
            async with asyncio.timeout(budget):
                return await self.try_acquire_or_renew()
        except TimeoutError:
            log.warning("leader election: lease call timed out")
            return False

    def _spec(self, *, acquire_time: str, transitions: int, now: float) -> dict[str, Any]:
        return {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": max(1, math.ceil(self.config.lease_duration)),
            "acquireTime": acquire_time,
            "renewTime": rfc3339_micro(now),
            "leaseTransitions": transitions,
        }

    def _observe(self, spec: dict[str, Any], rv: str) -> None:
        if spec != self.observed:
            self.observed = dict(spec)
            self._observed_time = self.clock.monotonic()
        self._lease_rv = rv

    async def try_acquire_or_renew(self) -> bool:
        """One round: create the Lease, renew it, or take it over if expired. Returns success;
        API errors are logged and count as failure."""
        now = self.clock.now()
        cfg = self.config
        try:
            lease = await self.client.get(LEASE, cfg.name, cfg.namespace)
        except asyncio.CancelledError:
            raise
        except FATAL_TYPES:
            raise  # not a failed round: the elector ends, and the manager (see FATAL_TYPES)
        except Exception as e:
            if not is_not_found(e):
                log.warning("leader election: get lease %s/%s: %s", cfg.namespace, cfg.name, e)
                return False
            spec = self._spec(acquire_time=rfc3339_micro(now), transitions=0, now=now)
            try:
                created = await self.client.create({
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": cfg.name, "namespace": cfg.namespace}, "spec": spec,
                })
            except asyncio.CancelledError:
                raise
            except FATAL_TYPES:
                raise
            except Exception as e2:
                log.info("leader election: create lease %s/%s: %s", cfg.namespace, cfg.name, e2)
                return False
            self._observe(created.get("spec") or spec, _rv(created))
            return True

        old = lease.get("spec") or {}
        self._observe(old, _rv(lease))
        holder = str(old.get("holderIdentity") or "")
        duration = float(old.get("leaseDurationSeconds") or 0)
        if holder and holder != cfg.identity and self._observed_time + duration > self.clock.monotonic():
            return False  # held by someone else and not expired (by our own observation)
        if holder == cfg.identity:  # renewing (or re-taking after a restart with the same identity)
            spec = self._spec(acquire_time=str(old.get("acquireTime") or rfc3339_micro(now)),
                              transitions=int(old.get("leaseTransitions") or 0), now=now)
        else:
            spec = self._spec(acquire_time=rfc3339_micro(now),
                              transitions=int(old.get("leaseTransitions") or 0) + 1,
                              now=now)
        updated = {**lease, "spec": spec}
        try:
            result = await self.client.update(updated)
        except asyncio.CancelledError:
            raise
        except FATAL_TYPES:
            raise  # not a failed round: the elector ends, and the manager (see FATAL_TYPES)
        except Exception as e:
            if not is_conflict(e):
                log.warning("leader election: update lease %s/%s: %s", cfg.namespace, cfg.name, e)
            return False
        self._observe(result.get("spec") or spec, _rv(result))
        return True

    async def _release(self) -> None:
        cfg = self.config
        lease = await self.client.get(LEASE, cfg.name, cfg.namespace)
        old = lease.get("spec") or {}
        if old.get("holderIdentity") != cfg.identity:
            return
        now = rfc3339_micro(self.clock.now())
        lease = {**lease, "spec": {
            "holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now,
            "leaseTransitions": int(old.get("leaseTransitions") or 0),
        }}
        await self.client.update(lease)
        log.info("leader election: %s released lease %s/%s", cfg.identity, cfg.namespace, cfg.name)


def _rv(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))
