"""VolumeBinding's Reserve and PreBind: before a Pod with WaitForFirstConsumer claims is bound to
its Node, give each waiting claim its volume there and wait until every claim is bound.

For each waiting claim, on the chosen Node (:func:`pumice.scheduler.default.volumebinding.plan_pod_volumes`):

- a fitting Available volume: the volume gets the claim's ``claimRef`` (and
  ``pv.kubernetes.io/bound-by-controller``); the PersistentVolume binder completes the binding;
- otherwise: the claim gets ``volume.kubernetes.io/selected-node: <node>``; the binder then asks the
  class's provisioner, whose volume the binder binds.

Then the claims are polled through the informers every second until each is bound
(``spec.volumeName`` and ``pv.kubernetes.io/bind-completed``), for at most ``timeout`` seconds
(kube-scheduler's ``bindTimeoutSeconds``, 600).

Used by both schedulers' binding steps (the default scheduler's bind task, the Volcano cache's
binder); it writes through the API, so Volcano's plugins never call it.

Mirrors: kubernetes v1.32 pkg/scheduler/framework/plugins/volumebinding binder.go
(AssumePodVolumes, BindPodVolumes, checkBindings) and volume_binding.go PreBind.
Deviates: nothing is assumed in a cache between the cycle and the writes (the plan is made again
from the informers when the bind starts); a claim whose ``selected-node`` is reset is not noticed
before the timeout.
"""

from __future__ import annotations

import copy

from pumice._util.clock import Clock
from pumice.api import Obj
from pumice.api.storage import ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, claim_fully_bound
from pumice.client.base import KubeClient
from pumice.scheduler.default.volumebinding import (
    PodVolumeClaims,
    VolumeBindingError,
    VolumeListers,
    has_claim_volumes,
    plan_pod_volumes,
    pre_filter,
)

BIND_TIMEOUT = 600.0
"""Seconds to wait for the claims to be bound (kube-scheduler's VolumeBindingArgs.BindTimeoutSeconds)."""
POLL_INTERVAL = 1.0


def _claim_ref(pvc: Obj) -> Obj:
    md = pvc["metadata"]
    return {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": md.get("namespace"),
            "name": md["name"], "uid": md.get("uid"), "resourceVersion": md.get("resourceVersion")}


async def bind_pod_volumes(client: KubeClient, listers: VolumeListers, pod: Obj, node_name: str,
                           node_labels: dict[str, str], clock: Clock, *, timeout: float = BIND_TIMEOUT) -> None:
    """Give the Pod's waiting claims their volumes on ``node_name`` and wait until all its claims
    are bound; return at once when it has no waiting claim.

    Raises:
        VolumeBindingError: a claim is now missing or unusable, no volume can be had on the Node,
            or the claims were not bound within ``timeout`` seconds.
        ApiError: a write was refused (e.g. a conflict with the binder).
    """
    if not has_claim_volumes(pod):
        return
    claims = pre_filter(pod, listers)
    if isinstance(claims, str):
        raise VolumeBindingError(claims)
    if not claims.delayed:
        return
    plan = plan_pod_volumes(claims, node_name, node_labels, listers)
    if plan is None:
        raise VolumeBindingError(f"no volume can be bound or provisioned for the pod's claims on node {node_name!r}")
    for pv, pvc in plan.static:
        new = copy.deepcopy(pv)
        new["spec"]["claimRef"] = _claim_ref(pvc)
        new["metadata"].setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
        await client.update(new)
    for pvc in plan.provision:
        if (pvc["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE) == node_name:
            continue
        new = copy.deepcopy(pvc)
        new["metadata"].setdefault("annotations", {})[ANN_SELECTED_NODE] = node_name
        await client.update(new)
    await _wait_bound(listers, claims, clock, timeout)


async def _wait_bound(listers: VolumeListers, claims: PodVolumeClaims, clock: Clock, timeout: float) -> None:
    deadline = clock.monotonic() + timeout
    keys = [(str(c["metadata"].get("namespace") or ""), str(c["metadata"]["name"])) for c in claims.delayed]
    while True:
        current = [listers.claim(ns, name) for ns, name in keys]
        if all(c is not None and claim_fully_bound(c) for c in current):
            return
        if clock.monotonic() >= deadline:
            waiting = sorted(f"{ns}/{name}" for (ns, name), c in zip(keys, current, strict=True)
                             if c is None or not claim_fully_bound(c))
            raise VolumeBindingError(f"binding volumes: timed out waiting for the condition (claims {', '.join(waiting)})")
        await clock.sleep(POLL_INTERVAL)

