"""The Services a RayJob or RayService keeps pointed at one of its RayClusters
(``<owner>-head-svc``, the RayService's serve Service).

Mirrors: kuberay ray-operator/controllers/ray rayjob_controller.go reconcileServices and
rayservice_controller.go reconcileServices (the same steps in both).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from pumice.api import Obj, scheme
from pumice.api.meta import namespace
from pumice.client.base import KubeClient, is_not_found
from pumice.controllers.ray import constants as c

if TYPE_CHECKING:
    from pumice.controllers.ray.raycluster import EventRecorder


async def reconcile_cluster_service(client: KubeClient, recorder: EventRecorder, owner: Obj, want: Obj) -> Obj:
    """Create ``want`` when absent; when the live Service selects another ``ray.io/cluster``, replace
    its spec by ``want``'s (keeping the live clusterIP), else leave it.

    Events on ``owner`` as upstream: ``CreatedService`` / ``UpdatedService`` and, before re-raising,
    ``FailedToCreateService`` / ``FailedToUpdateService``.

    Returns:
        the Service as it is after this call.
    Raises:
        ApiError: a failed get (other than 404), create or update.
    """
    ns, name = namespace(owner) or "default", want["metadata"]["name"]
    try:
        old: Obj = await client.get(scheme.SERVICE, name, ns)
    except Exception as e:
        if not is_not_found(e):
            raise
        return await _recorded(recorder, owner, "Create", f"{ns}/{name}", client.create(want))
    target = want["spec"]["selector"].get(c.RAY_CLUSTER_LABEL_KEY)
    if ((old.get("spec") or {}).get("selector") or {}).get(c.RAY_CLUSTER_LABEL_KEY) == target:
        return old
    if (old.get("spec") or {}).get("clusterIP"):
        want["spec"]["clusterIP"] = old["spec"]["clusterIP"]
    old["spec"] = want["spec"]
    return await _recorded(recorder, owner, "Update", f"{ns}/{name}", client.update(old))


async def _recorded(recorder: EventRecorder, owner: Obj, verb: str, key: str, write: Awaitable[Obj]) -> Obj:
    """Await ``write`` (a create or update of Service ``key``) and record upstream's event pair:
    ``<verb>dService`` after it, ``FailedTo<verb>Service`` (then re-raise) when it fails."""
    try:
        out = await write
    except Exception as e:
        recorder.event(owner, "Warning", f"FailedTo{verb}Service", f"Failed to {verb.lower()} the service {key}, {e}")
        raise
    recorder.event(owner, "Normal", f"{verb}dService", f"{verb}d the service {key}")
    return out
