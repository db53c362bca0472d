"""PodDisruptionBudget arithmetic shared by the disruption controller (status) and the API
server's eviction subresource (the check).

Mirrors: kubernetes pkg/controller/disruption/disruption.go (getExpectedPodCount for integer and
percentage budgets, countHealthyPods, updatePdbStatus) and pkg/registry/core/pod/storage/
eviction.go (checkAndDecrement, the 429 texts).
"""

from __future__ import annotations

from pumice.api import Obj, meta
from pumice.api.intstr import scaled_value
from pumice.api.selectors import from_label_selector

__all__ = ["budget_status", "pdb_matches", "pod_counts_as_healthy"]



def pdb_matches(pdb: Obj, pod: Obj) -> bool:
    """Whether the budget's selector selects the Pod (same namespace; an empty selector matches
    every Pod of the namespace in policy/v1)."""
    if (pdb.get("metadata") or {}).get("namespace") != (pod.get("metadata") or {}).get("namespace"):
        return False
    try:
        sel = from_label_selector((pdb.get("spec") or {}).get("selector") or {})
    except ValueError:
        return False
    return sel.matches((pod.get("metadata") or {}).get("labels") or {})


def pod_counts_as_healthy(pod: Obj) -> bool:
    return meta.pod_is_ready(pod) and not (pod.get("metadata") or {}).get("deletionTimestamp")


def budget_status(pdb: Obj, pods: list[Obj], disrupted: dict[str, str]) -> Obj:
    """The status fields of ``pdb`` for the Pods it selects: expectedPods, currentHealthy,
    desiredHealthy, disruptionsAllowed, disruptedPods, observedGeneration and the
    DisruptionAllowed condition (without its transition time).

    Deviates: the expected count of a percentage or maxUnavailable budget is the number of
    selected Pods, not the scale of their controllers.
    """
    spec = pdb.get("spec") or {}
    live = [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    expected = len(live)
    healthy = sum(1 for p in live if pod_counts_as_healthy(p) and p["metadata"]["name"] not in disrupted)
    if "maxUnavailable" in spec and spec["maxUnavailable"] is not None:
        desired = max(0, expected - scaled_value(spec["maxUnavailable"], expected, round_up=True))
    else:
        desired = scaled_value(spec.get("minAvailable", 1), expected, round_up=True)
    allowed = max(0, healthy - desired)
    cond = {"type": "DisruptionAllowed", "status": "True" if allowed > 0 else "False",
            "reason": "SufficientPods" if allowed > 0 else "InsufficientPods", "message": "",
            "observedGeneration": int((pdb.get("metadata") or {}).get("generation") or 0)}
    out: Obj = {"observedGeneration": int((pdb.get("metadata") or {}).get("generation") or 0),
                "expectedPods": expected, "currentHealthy": healthy, "desiredHealthy": desired,
                "disruptionsAllowed": allowed, "conditions": [cond]}
    if disrupted:
        out["disruptedPods"] = dict(disrupted)
    return out
