"""The Volcano adapter: one PodGroup ``ray-<name>-pg`` per RayCluster or RayJob, and the group
annotation, queue label and ``schedulerName: volcano`` on every Pod.

minMember / minResources (``calculate_pod_group_params``):
- autoscaling off: 1 + Σ clamp(replicas,min,max) × numOfHosts; head + Σ per-pod × raw replicas ×
  numOfHosts;
- autoscaling on: 1 + Σ minReplicas × numOfHosts; head + Σ per-pod × minReplicas × numOfHosts;
- RayJob: the cluster numbers plus the submitter's resources in minResources only (K8sJobMode:
  submitter template; SidecarMode: default submitter container).

Mirrors: kuberay ray-operator/controllers/ray/batchscheduler/volcano/volcano_scheduler.go.

Deviates: upstream returns an error on every Initializing pass for a RayJob that uses
``clusterSelector`` (it cannot compute a gang for a cluster it does not own), so such a RayJob
hangs in Initializing. Here such a RayJob is not gang-scheduled: no PodGroup, and its submitter
Pod gets no Volcano metadata (the default scheduler places it).
"""

from __future__ import annotations

from pumice.api import Obj, scheme
from pumice.api.meta import owner_reference
from pumice.api.quantity import parse_quantity
from pumice.api.volcano import constants as vc
from pumice.client.base import KubeClient, is_already_exists, is_not_found
from pumice.controllers.ray import association as assoc
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.common import job as jobb
from pumice.controllers.ray.common import resources as res

PLUGIN_NAME = "volcano"
NETWORK_TOPOLOGY_MODE_LABEL = "volcano.sh/network-topology-mode"
NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL = "volcano.sh/network-topology-highest-tier-allowed"


def calculate_pod_group_params(cluster_spec: Obj) -> tuple[int, res.ResourceList, res.Formats]:
    """(minMember, minResources, the format of each minResources sum) of a RayCluster spec."""
    if not res.is_autoscaling_enabled(cluster_spec):
        return res.desired_worker_pods(cluster_spec) + 1, *res.desired_quantities(cluster_spec)
    return res.min_worker_pods(cluster_spec) + 1, *res.min_quantities(cluster_spec)


def submitter_resources(rayjob: Obj) -> tuple[res.ResourceList, res.Formats]:
    """The submitter's resources and their formats: template (K8sJobMode), default container
    (SidecarMode), else none."""
    spec = rayjob.get("spec", {})
    mode = jobb.submission_mode(rayjob)
    if mode == c.JobSubmissionMode.K8S_JOB_MODE:
        return res.pod_quantities(jobb.submitter_template(rayjob, spec["rayClusterSpec"]).get("spec", {}))
    if mode == c.JobSubmissionMode.SIDECAR_MODE:
        return res.container_quantities(jobb.default_submitter_container(spec["rayClusterSpec"]))
    return {}, {}


def rayjob_pod_group_params(rayjob: Obj) -> tuple[int, res.ResourceList, res.Formats]:
    """(minMember, minResources, their formats) of a RayJob: cluster numbers + submitter
    resources (not members), summed as SumResourceList."""
    members, total, formats = calculate_pod_group_params(rayjob["spec"]["rayClusterSpec"])
    return members, *res.sum_quantities([(total, formats), submitter_resources(rayjob)])


def build_pod_group(owner: Obj, min_member: int, min_resources: res.ResourceList,
                    formats: res.Formats | None = None) -> Obj:
    """The PodGroup for ``owner`` (RayCluster or RayJob); ``formats``: the Quantity format of each
    minResources sum (:func:`calculate_pod_group_params`), so ``1G`` requests sum to ``2G``.

    Raises:
        ValueError: the network-topology tier label is not an integer.
    """
    meta = owner["metadata"]
    lbl = meta.get("labels") or {}
    name = assoc.volcano_pod_group_name(owner)
    spec: Obj = {"minMember": min_member, "minResources": res.format_resource_list(min_resources, formats)}
    if NETWORK_TOPOLOGY_MODE_LABEL in lbl:
        topo: Obj = {"mode": lbl[NETWORK_TOPOLOGY_MODE_LABEL]}
        if NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL in lbl:
            try:
                topo["highestTierAllowed"] = int(lbl[NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL])
            except ValueError as e:
                raise ValueError(
                    f"failed to convert {NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL} label to int for podgroup "
                    f"{name} in namespace {meta.get('namespace')}: {e}") from e
        spec["networkTopology"] = topo
    if vc.QUEUE_NAME_KEY in lbl:
        spec["queue"] = lbl[vc.QUEUE_NAME_KEY]
    if c.RAY_PRIORITY_CLASS_NAME_LABEL_KEY in lbl:
        spec["priorityClassName"] = lbl[c.RAY_PRIORITY_CLASS_NAME_LABEL_KEY]
    pg_meta: Obj = {
        "name": name,
        "namespace": meta.get("namespace", "default"),
        "ownerReferences": [owner_reference({"apiVersion": "ray.io/v1", **owner})],
    }
    if meta.get("annotations"):
        pg_meta["annotations"] = dict(meta["annotations"])
    return {"apiVersion": vc.SCHEDULING_API_VERSION, "kind": "PodGroup", "metadata": pg_meta, "spec": spec,
            "status": {"phase": vc.PodGroupPhase.PENDING.value}}


def _uses_cluster_selector(obj: Obj) -> bool:
    return obj.get("kind") == "RayJob" and not obj.get("spec", {}).get("rayClusterSpec")


class VolcanoBatchScheduler:
    """Volcano gang scheduling for RayClusters and RayJobs (see the module docstring)."""

    name = PLUGIN_NAME

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    async def do_batch_scheduling_on_submission(self, obj: Obj) -> None:
        if obj.get("kind") == "RayCluster":
            lbl = obj.get("metadata", {}).get("labels") or {}
            if lbl.get(c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY) == c.CRDType.RAY_JOB:
                return  # the RayJob owns the PodGroup
            members, total, formats = calculate_pod_group_params(obj.get("spec", {}))
        elif obj.get("kind") == "RayJob":
            if _uses_cluster_selector(obj):
                return  # Deviates: not gang-scheduled (upstream errors forever)
            members, total, formats = rayjob_pod_group_params(obj)
        else:
            raise TypeError(f"unsupported object kind {obj.get('kind')!r}, only RayCluster and RayJob are supported")
        await self.sync_pod_group(obj, members, total, formats)

    async def sync_pod_group(self, owner: Obj, min_member: int, min_resources: res.ResourceList,
                             formats: res.Formats | None = None) -> bool:
        """Get-or-create the PodGroup; update only when minMember or minResources differ
        (``formats``: as :func:`build_pod_group`).

        Returns:
            True when it created or updated the PodGroup.
        """
        ns = owner["metadata"].get("namespace", "default")
        name = assoc.volcano_pod_group_name(owner)
        try:
            pg = await self._client.get(scheme.POD_GROUP, name, ns)
        except Exception as e:
            if not is_not_found(e):
                raise
            try:
                await self._client.create(build_pod_group(owner, min_member, min_resources, formats))
            except Exception as e2:
                if is_already_exists(e2):
                    return False
                raise
            return True
        spec = pg.setdefault("spec", {})
        current = {k: parse_quantity(v) for k, v in (spec.get("minResources") or {}).items()}
        wanted = {k: v for k, v in min_resources.items()}
        if spec.get("minMember") != min_member or spec.get("minResources") is None or \
                {k: v for k, v in current.items() if v != 0} != {k: v for k, v in wanted.items() if v != 0}:
            spec["minMember"] = min_member
            spec["minResources"] = res.format_resource_list(min_resources, formats)
            await self._client.update(pg)
            return True
        return False

    def add_metadata_to_child_resource(self, parent: Obj, child: Obj, group_name: str) -> None:
        if _uses_cluster_selector(parent):
            return
        meta = child.setdefault("metadata", {})
        labels = meta.setdefault("labels", {})
        plabels = parent.get("metadata", {}).get("labels") or {}
        for key in (vc.QUEUE_NAME_KEY, c.RAY_PRIORITY_CLASS_NAME_LABEL_KEY):
            if plabels.get(key):
                labels[key] = plabels[key]
        ann = meta.setdefault("annotations", {})
        ann[vc.KUBE_GROUP_NAME_ANNOTATION_KEY] = assoc.volcano_pod_group_name(parent)
        ann[vc.TASK_SPEC_KEY] = group_name
        if child.get("kind") != "RayCluster" and isinstance(child.get("spec"), dict):
            child["spec"]["schedulerName"] = PLUGIN_NAME

    async def cleanup_on_completion(self, obj: Obj) -> bool:
        """Shrink the RayJob's PodGroup to what still exists: the live cluster's numbers, or 0 and
        no resources when the cluster is gone or terminating."""
        if obj.get("kind") != "RayJob" or _uses_cluster_selector(obj):
            return False
        cluster_name = (obj.get("status") or {}).get("rayClusterName")
        if not cluster_name:
            return False
        members: int = 0
        total: res.ResourceList = {}
        formats: res.Formats = {}
        try:
            cluster = await self._client.get(scheme.RAY_CLUSTER, cluster_name, obj["metadata"].get("namespace"))
        except Exception as e:
            if not is_not_found(e):
                raise
        else:
            if not cluster.get("metadata", {}).get("deletionTimestamp"):
                members, total, formats = calculate_pod_group_params(cluster.get("spec", {}))
        return await self.sync_pod_group(obj, members, total, formats)
