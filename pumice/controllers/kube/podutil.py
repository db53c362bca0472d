"""Pod helpers shared by the workload controllers: activeness, readiness, the ActivePods ranking
for choosing which Pods to delete, the template hash, intstr scaling and Pods from templates.

Mirrors: kubernetes pkg/controller/controller_utils.go (FilterActivePods, ActivePodsWithRanks,
IsPodActive, ComputeHash), pkg/api/v1/pod/util.go (IsPodAvailable) and
staging/src/k8s.io/apimachinery/pkg/util/intstr (GetScaledValueFromIntOrPercent).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

import msgspec

from pumice._util.clock import parse_rfc3339
from pumice.api import Obj, meta
from pumice.api.scheme import POD
from pumice.client.base import ApiError, KubeClient, is_not_found

_ENC = msgspec.json.Encoder()
_DEC = msgspec.json.Decoder()


def clone(obj: Any) -> Any:
    """A deep copy of a JSON value (via msgspec, several times faster than copy.deepcopy)."""
    return _DEC.decode(_ENC.encode(obj))


# pkg/util/rand SafeEncodeString alphabet (no vowels, no confusable characters).
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def is_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_active(pod: Obj) -> bool:
    """Not Succeeded/Failed and not being deleted (IsPodActive)."""
    return not is_terminal(pod) and not (pod.get("metadata") or {}).get("deletionTimestamp")


def is_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """Ready for at least ``min_ready_seconds`` (IsPodAvailable)."""
    c = meta.get_condition(pod, "Ready")
    if not c or c.get("status") != "True":
        return False
    if min_ready_seconds <= 0:
        return True
    t = c.get("lastTransitionTime")
    return bool(t) and parse_rfc3339(str(t)) + min_ready_seconds <= now


def available_in(pod: Obj, min_ready_seconds: int, now: float) -> float | None:
    """Seconds until a Ready Pod becomes available (None when not Ready or already available)."""
    c = meta.get_condition(pod, "Ready")
    if not c or c.get("status") != "True" or min_ready_seconds <= 0 or not c.get("lastTransitionTime"):
        return None
    left = parse_rfc3339(str(c["lastTransitionTime"])) + min_ready_seconds - now
    return left if left > 0 else None


def restart_count(pod: Obj) -> int:
    st = pod.get("status") or {}
    return sum(int(c.get("restartCount") or 0)
               for c in [*(st.get("initContainerStatuses") or []), *(st.get("containerStatuses") or [])])


_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def _ts(value: Any) -> float:
    try:
        return parse_rfc3339(str(value)) if value else 0.0
    except ValueError:
        return 0.0


def deletion_order(pods: list[Obj], related: list[Obj] | None = None) -> list[Obj]:
    """``pods`` sorted so that the first ones are deleted first (ActivePodsWithRanks).

    Order: unassigned before assigned; Pending, Unknown, then Running; not Ready before Ready;
    more related Pods on the same Node first; Ready for less time first; more restarts first;
    newer before older; then name.
    """
    on_node = Counter((p.get("spec") or {}).get("nodeName") for p in (related if related is not None else pods)
                      if (p.get("spec") or {}).get("nodeName"))

    def key(p: Obj) -> tuple[Any, ...]:
        spec, st, md = p.get("spec") or {}, p.get("status") or {}, p.get("metadata") or {}
        node = spec.get("nodeName") or ""
        ready = meta.pod_is_ready(p)
        rc = meta.get_condition(p, "Ready")
        ready_since = _ts(rc.get("lastTransitionTime")) if (ready and rc) else 0.0
        return (
            1 if node else 0,
            _PHASE_RANK.get(st.get("phase") or "Pending", 0),
            1 if ready else 0,
            -on_node[node] if node else 0,
            -ready_since,
            -restart_count(p),
            -_ts(md.get("creationTimestamp")),
            md.get("name", ""),
        )

    return sorted(pods, key=key)


def safe_encode(text: str) -> str:
    """rand.SafeEncodeString: each character mapped into the vowel-free alphabet."""
    return "".join(_SAFE_ALPHABET[ord(ch) % len(_SAFE_ALPHABET)] for ch in text)


def compute_hash(template: Obj, collision_count: int | None = None) -> str:
    """The pod-template-hash of a Pod template (a 32-bit hash of its canonical JSON, rendered as
    upstream renders ComputeHash: the decimal digits safe-encoded).

    Deviates: upstream hashes Go's deep-printed struct with FNV-32a, so the values differ from a
    real cluster's; they are stable across restarts and processes here.
    """
    data = json.dumps(template, sort_keys=True, separators=(",", ":"))
    if collision_count:
        data += f"#{collision_count}"
    h = int.from_bytes(hashlib.sha256(data.encode()).digest()[:4], "big")
    return safe_encode(str(h))


def pod_from_template(template: Obj, *, namespace: str, generate_name: str, owner_ref: Obj,
                      extra_labels: dict[str, str] | None = None) -> Obj:
    """A new Pod from a PodTemplateSpec (labels, annotations, finalizers and spec copied), owned
    by ``owner_ref`` (GetPodFromTemplate)."""
    md = template.get("metadata") or {}
    labels = {**(md.get("labels") or {}), **(extra_labels or {})}
    meta: Obj = {"generateName": generate_name, "namespace": namespace, "labels": labels,
                 "ownerReferences": [owner_ref]}
    if md.get("annotations"):
        meta["annotations"] = dict(md["annotations"])
    if md.get("finalizers"):
        meta["finalizers"] = list(md["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": clone(template.get("spec") or {})}


def controller_uid(obj: Obj) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid") or "")
    return None


async def delete_exactly(client: KubeClient, pod: Obj) -> bool:
    """Delete this Pod and not a namesake made since (uid precondition). Returns False when it is
    already gone or was replaced (404, 409), True when this call deleted it.

    Raises:
        ApiError: any other failure.
    """
    md = pod["metadata"]
    try:
        await client.delete(POD, md["name"], md.get("namespace"), preconditions={"uid": md["uid"]})
    except ApiError as e:
        if is_not_found(e) or e.code == 409:
            return False
        raise
    return True
