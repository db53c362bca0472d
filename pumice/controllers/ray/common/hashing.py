"""The RayCluster spec hash that ignores what autoscalers and Kueue edit.

Used for a RayService's clusters (``ray.io/hash-without-replicas-and-workers-to-delete``) and for
the head Pod's ``ray.io/upgrade-strategy-recreate-hash``.

Mirrors: kuberay ray-operator/controllers/ray/utils/util.go GenerateHashWithoutReplicasAndWorkersToDelete
and GenerateJsonHash.

Deviates: SHA-1 over pumice's canonical JSON (sorted keys), so the value is not byte-equal to
Go's (which serializes struct fields in declaration order); only self-consistency and the list of
ignored fields matter (kuberay-2.md §11.7).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json

from pumice.api import Obj


def hash_without_replicas_and_workers_to_delete(cluster_spec: Obj) -> str:
    """Hash of a RayClusterSpec with the fields autoscalers and Kueue edit cleared: head
    ``tolerations``/``schedulingGates``; per worker group ``replicas``, ``minReplicas``,
    ``maxReplicas``, ``scaleStrategy.workersToDelete``, ``tolerations``, ``schedulingGates``; the
    cluster ``upgradeStrategy``.

    Returns:
        32 characters of base32 (extended hex alphabet) over SHA-1.
    """
    spec = copy.deepcopy(cluster_spec)
    spec.pop("upgradeStrategy", None)
    head_pod = ((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    head_pod.pop("tolerations", None)
    head_pod.pop("schedulingGates", None)
    for g in spec.get("workerGroupSpecs") or []:
        for k in ("replicas", "minReplicas", "maxReplicas"):
            g.pop(k, None)
        if isinstance(g.get("scaleStrategy"), dict):
            g["scaleStrategy"].pop("workersToDelete", None)
            if not g["scaleStrategy"]:
                g.pop("scaleStrategy")
        pod = (g.get("template") or {}).get("spec") or {}
        pod.pop("tolerations", None)
        pod.pop("schedulingGates", None)
    digest = hashlib.sha1(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()).digest()
    return base64.b32hexencode(digest).decode()
