"""Which Nodes a scheduler may use under hard node sharding (shared by the scheduler and tests).

Mirrors: volcano pkg/agentscheduler/cache/shard_coordinator.go and the vc-scheduler's shard view.
"""

from __future__ import annotations

from pumice.api import Obj


def shard_nodes(shards: list[Obj], name: str) -> set[str] | None:
    """The Nodes scheduler ``name`` may use in hard sharding mode: its NodeShard's
    ``spec.nodesDesired`` minus the Nodes another scheduler still lists in ``status.nodesInUse``
    (a Node changes hands only after its old owner let go); None when it has no NodeShard."""
    mine = next((s for s in shards if (s.get("metadata") or {}).get("name") == name), None)
    if mine is None:
        return None
    others: set[str] = set()
    for s in shards:
        if (s.get("metadata") or {}).get("name") != name:
            others.update((s.get("status") or {}).get("nodesInUse") or [])
    return set((mine.get("spec") or {}).get("nodesDesired") or []) - others
