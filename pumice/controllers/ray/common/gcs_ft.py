"""GCS fault tolerance: which clusters need the Redis cleanup on deletion, and the cleanup Job.

Mirrors: kuberay ray-operator/controllers/ray/raycluster_controller.go (buildRedisCleanupJob,
getGCSFTDeletionTimeout), utils/util.go (IsGCSFaultToleranceEnabled, IsJobFinished) and
common/association.go (RayClusterRedisCleanupJobAssociationOptions).
"""

from __future__ import annotations

import copy

from pumice.api import Obj
from pumice.controllers.ray import association as assoc
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.common import pod as podb

REDIS_CLEANUP_NODE_TYPE = "redis-cleanup"
GCS_FT_DOCS = "https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html"


def is_embedded_backend(cluster: Obj) -> bool:
    """``gcsFaultToleranceOptions.backend: rocksdb`` (no Redis, no cleanup Job)."""
    return str(((cluster.get("spec") or {}).get("gcsFaultToleranceOptions") or {}).get("backend") or "") == "rocksdb"


def needs_redis_cleanup(cluster: Obj, enabled: bool = True) -> bool:
    """FT on with the Redis backend and the cleanup not switched off (``ENABLE_GCS_FT_REDIS_CLEANUP``)."""
    return enabled and podb.is_gcs_ft_enabled(cluster) and not is_embedded_backend(cluster)


def deletion_timeout_seconds(cluster: Obj) -> float:
    """``ray.io/gcs-ft-deletion-timeout`` (positive integer seconds) or 300."""
    raw = ((cluster.get("metadata") or {}).get("annotations") or {}).get(c.RAY_GCS_FT_DELETION_TIMEOUT_ANNOTATION_KEY)
    try:
        v = int(str(raw))
    except ValueError:
        return float(c.DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS)
    return float(v) if v > 0 else float(c.DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS)


def redis_cleanup_job_name(cluster: Obj) -> str:
    return assoc.check_label(f"{cluster['metadata']['name']}-redis-cleanup")


def redis_cleanup_selector(cluster_name: str) -> dict[str, str]:
    return {c.RAY_CLUSTER_LABEL_KEY: cluster_name, c.RAY_NODE_TYPE_LABEL_KEY: REDIS_CLEANUP_NODE_TYPE}


def _cleanup_script(with_username: bool) -> str:
    """The Ray container's argument: a docs pointer, then Ray's own ``cleanup_redis_storage`` on
    the first address of ``RAY_REDIS_ADDRESS`` (``redis://`` added when schemeless), exit 1 when
    it reports failure. The username is passed only when ``REDIS_USERNAME`` is in the env."""
    username = "username=os.getenv('REDIS_USERNAME', parsed.username), " if with_username else ""
    python = ("from ray._private.gcs_utils import cleanup_redis_storage; "
              "from urllib.parse import urlparse; "
              "import os; "
              "import sys; "
              "redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; "
              "redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; "
              "parsed = urlparse(redis_address); "
              "sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, "
              f"{username}password=os.getenv('REDIS_PASSWORD', parsed.password or ''), "
              "use_ssl=parsed.scheme=='rediss', storage_namespace=os.getenv('RAY_external_storage_namespace')) "
              "else None")
    return (f"echo \"To get more information about manually deleting the storage namespace in Redis and removing "
            f"the RayCluster's finalizer, please check {GCS_FT_DOCS} for more details.\" && python -c \"{python}\"")


def build_redis_cleanup_job(cluster: Obj, options: podb.PodOptions = podb.DEFAULT_POD_OPTIONS) -> Obj:
    """The Job ``<cluster>-redis-cleanup`` that deletes the cluster's storage namespace in Redis.

    Its Pod is the head Pod with only the Ray container (and no ``wait-for-tls-ip-san`` init
    container), labelled ``ray.io/node-type=redis-cleanup``, running :func:`_cleanup_script`
    without probes, 200m/256Mi, ``restartPolicy: Never``; ``backoffLimit: 0``,
    ``activeDeadlineSeconds: 300``; controller owner → the RayCluster.
    """
    pod = podb.build_head_pod(cluster, options)
    meta = pod["metadata"]
    meta["labels"][c.RAY_NODE_TYPE_LABEL_KEY] = REDIS_CLEANUP_NODE_TYPE
    spec = pod["spec"]
    ray = copy.deepcopy(spec["containers"][c.RAY_CONTAINER_INDEX])
    spec["containers"] = [ray]
    inits = [x for x in spec.get("initContainers") or [] if x.get("name") != "wait-for-tls-ip-san"]
    if inits:
        spec["initContainers"] = inits
    else:
        spec.pop("initContainers", None)
    env = ray.setdefault("env", [])
    ray["command"] = podb.container_command(options)
    ray["args"] = [_cleanup_script(any(e.get("name") == "REDIS_USERNAME" for e in env))]
    ray.pop("livenessProbe", None)
    ray.pop("readinessProbe", None)
    env.append({"name": "RAY_redis_db_connect_retries", "value": "120"})
    env.append({"name": "RAY_redis_db_connect_wait_milliseconds", "value": "500"})
    ray["resources"] = {"limits": {"cpu": "200m", "memory": "256Mi"}, "requests": {"cpu": "200m", "memory": "256Mi"}}
    spec["restartPolicy"] = "Never"
    tmpl_meta = {k: copy.deepcopy(v) for k, v in meta.items() if k not in ("ownerReferences", "generateName", "name")}
    job_meta: Obj = {"name": redis_cleanup_job_name(cluster), "namespace": cluster["metadata"].get("namespace", "default"),
                     "labels": dict(meta["labels"]), "ownerReferences": meta.get("ownerReferences") or []}
    if meta.get("annotations"):
        job_meta["annotations"] = dict(meta["annotations"])
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta,
            "spec": {"backoffLimit": 0, "activeDeadlineSeconds": 300, "template": {"metadata": tmpl_meta, "spec": spec}}}


def job_finished(job: Obj) -> str:
    """``Complete`` or ``Failed`` (``FailureTarget`` counts as Failed) when the Job has finished,
    else ``""``."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("status") != "True":
            continue
        if cond.get("type") in ("Complete", "Failed"):
            return str(cond["type"])
        if cond.get("type") == "FailureTarget":
            return "Failed"
    return ""


def has_finalizer(cluster: Obj) -> bool:
    """Whether the cluster carries the Redis cleanup finalizer (hasGCSFTFinalizer)."""
    return c.GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER in ((cluster.get("metadata") or {}).get("finalizers") or [])
