"""The RayCluster spec hash that ignores what autoscalers and Kueue edit.

Used for a RayService's clusters (``ray.io/hash-without-replicas-and-workers-to-delete``) and for
the head Pod's ``ray.io/upgrade-strategy-recreate-hash``.

Mirrors: kuberay ray-operator/controllers/ray/utils/util.go GenerateHashWithoutReplicasAndWorkersToDelete
and GenerateJsonHash.

The bytes hashed are those Go's encoding/json writes for the spec decoded into upstream's
``RayClusterSpec`` (:mod:`pumice.controllers.ray.common.gojson`), so the value equals upstream's
for the same spec (tests/ray/test_hash_go.py checks it against upstream's own function).
"""

from __future__ import annotations

import base64
import copy
import hashlib

from pumice.api import Obj
from pumice.controllers.ray.common.gojson import GoLayout, marshal


def spec_for_hashing(cluster_spec: Obj) -> Obj:
    """A copy of a RayClusterSpec with the fields autoscalers and Kueue edit cleared: head
    ``tolerations``/``schedulingGates``; per worker group ``replicas``, ``minReplicas``,
    ``maxReplicas``, ``scaleStrategy.workersToDelete``, ``tolerations``, ``schedulingGates``; the
    cluster ``upgradeStrategy``."""
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
        pod = (g.get("template") or {}).get("spec") or {}
        pod.pop("tolerations", None)
        pod.pop("schedulingGates", None)
    return spec


def json_hash(cluster_spec: Obj, layout: GoLayout | None = None) -> str:
    """SHA-1 of Go's JSON of a RayClusterSpec, as 32 characters of base32 (extended hex alphabet).

    Mirrors: utils/util.go GenerateJsonHash."""
    return base64.b32hexencode(hashlib.sha1(marshal(cluster_spec, layout)).digest()).decode()


def hash_without_replicas_and_workers_to_delete(cluster_spec: Obj, layout: GoLayout | None = None) -> str:
    """:func:`json_hash` of :func:`spec_for_hashing`.

    Args:
        cluster_spec: a RayClusterSpec in wire form.
        layout: the Go types' layout (default: upstream's at the reference snapshot).
    Returns:
        32 characters of base32 (extended hex alphabet).
    """
    return json_hash(spec_for_hashing(cluster_spec), layout)


def with_raycluster_defaults(cluster_spec: Obj) -> Obj:
    """A copy of a RayClusterSpec with the defaults the RayCluster controller sets in memory before
    it hashes the spec for the head Pod: a missing ``rayStartParams`` (head and every worker group)
    becomes ``{}``, which Go writes as ``{}`` where a nil map is ``null``.

    Mirrors: raycluster_controller.go setDefaults."""
    spec = copy.deepcopy(cluster_spec)
    groups = [spec.setdefault("headGroupSpec", {}), *(spec.get("workerGroupSpecs") or [])]
    for g in groups:
        if g.get("rayStartParams") is None:
            g["rayStartParams"] = {}
    return spec
