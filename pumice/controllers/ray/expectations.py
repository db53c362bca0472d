"""Scale expectations: remember the Pods this operator created or deleted until a direct read
confirms them, so a lagging cache never causes a double create or a recount.

Keyed by ``(namespace, cluster, group)`` (the head group is ``""``). A create is satisfied when a
Get finds the Pod or after 30 s; a delete only when Get returns NotFound (terminating is not
enough). In memory only: after a restart the store is empty, which is safe because Pods are then
listed fresh.

Mirrors: kuberay ray-operator/controllers/ray/expectations/scale_expectations.go.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from pumice.controllers.ray import constants as c

Action = Literal["create", "delete"]


@dataclass
class _Record:
    pod_name: str
    action: Action
    recorded_at: float


@dataclass
class ScaleExpectations:
    """The store. ``exists(namespace, pod_name)`` is an async direct read supplied by the caller."""

    records: dict[tuple[str, str, str], list[_Record]] = field(default_factory=dict)
    create_timeout: float = c.SCALE_EXPECTATION_CREATE_TIMEOUT_SECONDS

    def expect(self, namespace: str, cluster: str, group: str, pod_name: str, action: Action, now: float) -> None:
        self.records.setdefault((namespace, cluster, group), []).append(_Record(pod_name, action, now))

    async def is_satisfied(self, namespace: str, cluster: str, group: str, now: float,
                           exists: Callable[[str, str], Awaitable[bool]]) -> bool:
        """True when every record of the group is confirmed; confirmed records are dropped."""
        key = (namespace, cluster, group)
        pending = []
        for rec in self.records.get(key, []):
            present = await exists(namespace, rec.pod_name)
            if rec.action == "create":
                if present or now - rec.recorded_at >= self.create_timeout:
                    continue
            elif not present:
                continue
            pending.append(rec)
        if pending:
            self.records[key] = pending
            return False
        self.records.pop(key, None)
        return True

    def delete_cluster(self, namespace: str, cluster: str) -> None:
        for key in [k for k in self.records if k[0] == namespace and k[1] == cluster]:
            del self.records[key]
