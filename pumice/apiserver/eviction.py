"""The PodDisruptionBudget check of the eviction subresource.

A running Pod selected by a PodDisruptionBudget may be evicted only while the budget's
``status.disruptionsAllowed`` is above 0; the eviction then takes one (``disruptionsAllowed - 1``)
and records the Pod in ``status.disruptedPods`` in the same write, so two evictions cannot both
use the last allowed disruption. Pods that are not running (Pending, Succeeded, Failed) are
evicted without a check, as upstream.

Mirrors: kubernetes pkg/registry/core/pod/storage/eviction.go (Create, checkAndDecrement,
the 429 Status with the DisruptionBudget cause, the "more than one PodDisruptionBudget" 500).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from pumice._util.clock import rfc3339
from pumice.api import Obj
from pumice.api.disruption import pdb_matches
from pumice.apiserver.errors import StatusError

if TYPE_CHECKING:
    from pumice.apiserver.registry import Registry

__all__ = ["check_disruption_budget"]

PDBS = "policy/poddisruptionbudgets"


def check_disruption_budget(reg: Registry, pod: Obj) -> None:
    """Take one allowed disruption from the Pod's budget, or refuse.

    Raises:
        StatusError: 429 when the budget allows no disruption (or has not been computed yet for
            its current generation), 500 when several budgets select the Pod.
    """
    if (pod.get("status") or {}).get("phase") != "Running":
        return
    md = pod.get("metadata") or {}
    budgets = [s for s in reg.store.list(PDBS, md.get("namespace") or "") if pdb_matches(s.obj, pod)]
    if not budgets:
        return
    if len(budgets) > 1:
        raise StatusError(500, "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                               "does not support.", "InternalError")
    stored = budgets[0]
    pdb = stored.obj
    status = pdb.get("status") or {}
    name = pdb["metadata"]["name"]
    if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0) or \
            int(status.get("disruptionsAllowed") or 0) <= 0:
        cause = (f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} healthy pods and "
                 f"has {int(status.get('currentHealthy') or 0)} currently")
        raise StatusError(429, "Cannot evict pod as it would violate the pod's disruption budget.", "TooManyRequests",
                          {"causes": [{"reason": "DisruptionBudget", "message": cause}]})
    new = copy.deepcopy(pdb)
    st = new.setdefault("status", {})
    st["disruptionsAllowed"] = int(status.get("disruptionsAllowed") or 0) - 1
    st.setdefault("disruptedPods", {})[md.get("name")] = rfc3339(reg.clock.now())
    reg.store.put(PDBS, new)
