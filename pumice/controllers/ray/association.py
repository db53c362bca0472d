"""The one place that answers "what is this child called, and how do I find it".

Names are strings; selectors are ``dict[str, str]`` label maps (render with
:func:`selector_string` for a list call). Random suffixes come from the caller's seeded
``random.Random``.

Mirrors: kuberay ray-operator/controllers/ray/common/association.go and the name helpers of
utils/util.go (CheckName, CheckLabel, GenerateHeadServiceName, GenerateIngressName,
GenerateRayClusterName, GenerateRayJobId).
"""

from __future__ import annotations

import random
import string
import unicodedata

from pumice.api import Obj
from pumice.api.selectors import from_set
from pumice.controllers.ray import constants as c

_ALNUM = string.ascii_lowercase + string.digits


def check_name(s: str) -> str:
    """Trim a name to 50 characters by dropping its head, then replace a leading digit or
    punctuation mark (what the trim can leave first) with ``r`` (upstream ``CheckName``)."""
    s = s[len(s) - 50:] if len(s) > 50 else s
    if s and (s[0].isdigit() or unicodedata.category(s[0]).startswith("P")):
        s = "r" + s[1:]
    return s


def check_label(s: str) -> str:
    """Trim a label value to 63 characters by dropping its head (upstream ``CheckLabel``)."""
    return s[len(s) - 63:] if len(s) > 63 else s


def random_suffix(rng: random.Random, n: int = 5) -> str:
    """``n`` random lower-case alphanumerics, like apimachinery's ``rand.String``."""
    return "".join(rng.choice(_ALNUM) for _ in range(n))


def identifier(cluster_name: str, node_type: str) -> str:
    """``ray.io/identifier`` value: ``<cluster>-head`` / ``<cluster>-worker`` (≤63)."""
    return check_label(f"{cluster_name}-{node_type}")


def head_service_name(cluster: Obj) -> str:
    """``<cluster>-head-svc`` unless ``headGroupSpec.headService.metadata.name`` is set."""
    hs = cluster.get("spec", {}).get("headGroupSpec", {}).get("headService") or {}
    custom = (hs.get("metadata") or {}).get("name")
    return custom or f"{cluster['metadata']['name']}-head-svc"


def owner_head_service_name(owner_name: str) -> str:
    """RayJob / RayService head Service: ``<owner>-head-svc``."""
    return f"{owner_name}-head-svc"


def ingress_name(cluster_name: str) -> str:
    """The head Ingress: ``<cluster>-head-ingress`` through :func:`check_name` (upstream
    ``CheckName(GenerateIngressName(name))``)."""
    return check_name(f"{cluster_name}-{c.RayNodeType.HEAD}-ingress")


def serve_service_name(owner_name: str) -> str:
    """``<owner>-serve-svc``: the serve Service of a RayCluster (or of a RayService without a custom
    name; upstream GenerateServeServiceName)."""
    return f"{owner_name}-serve-svc"


def headless_service_name(cluster_name: str) -> str:
    return f"{cluster_name}-headless"


def head_pod_generate_name(cluster_name: str) -> str:
    return check_name(f"{cluster_name}-head-").lower()


def worker_pod_generate_name(cluster_name: str, group_name: str) -> str:
    return check_name(f"{cluster_name}-{group_name}-worker-").lower()


def fqdn_head_service(cluster: Obj, domain: str = c.DEFAULT_CLUSTER_DOMAIN) -> str:
    """``<head-svc>.<ns>.svc.<domain>``: what workers and the submitter dial."""
    return f"{head_service_name(cluster)}.{cluster['metadata'].get('namespace', 'default')}.svc.{domain}"


def rayjob_cluster_name(rayjob_name: str, rng: random.Random) -> str:
    """Generated RayCluster name of a RayJob: ``<rayjob>-<5 random>``."""
    return f"{rayjob_name}-{random_suffix(rng)}"


def rayjob_job_id(rayjob_name: str, rng: random.Random) -> str:
    """Generated Ray submission id: ``<rayjob>-<5 random>``."""
    return f"{rayjob_name}-{random_suffix(rng)}"


def submitter_job_name(rayjob: Obj) -> str:
    """The submitter batch/v1 Job has the RayJob's own name."""
    return str(rayjob["metadata"]["name"])


def volcano_pod_group_name(obj: Obj) -> str:
    """``ray-<name>-pg``; a RayCluster created by a RayJob uses the RayJob's name."""
    meta = obj.get("metadata", {})
    lbl = meta.get("labels") or {}
    name = meta.get("name", "")
    if lbl.get(c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY) == c.CRDType.RAY_JOB and lbl.get(c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY):
        name = lbl[c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY]
    return f"ray-{name}-pg"


# --- selectors ----------------------------------------------------------------------------------

def cluster_pods_selector(cluster_name: str) -> dict[str, str]:
    return {c.RAY_CLUSTER_LABEL_KEY: cluster_name}


def head_pods_selector(cluster_name: str) -> dict[str, str]:
    return {c.RAY_CLUSTER_LABEL_KEY: cluster_name, c.RAY_NODE_TYPE_LABEL_KEY: str(c.RayNodeType.HEAD)}


def worker_group_pods_selector(cluster_name: str, group_name: str) -> dict[str, str]:
    return {c.RAY_CLUSTER_LABEL_KEY: cluster_name, c.RAY_NODE_GROUP_LABEL_KEY: group_name}


def head_service_selector(cluster_name: str) -> dict[str, str]:
    return {c.RAY_CLUSTER_LABEL_KEY: cluster_name, c.RAY_NODE_TYPE_LABEL_KEY: str(c.RayNodeType.HEAD),
            c.RAY_ID_LABEL_KEY: identifier(cluster_name, c.RayNodeType.HEAD)}


def selector_string(sel: dict[str, str]) -> str:
    """``k1=v1,k2=v2`` in key order (the ``labelSelector=`` form of a label map)."""
    return str(from_set(sel))


def matches(labels: dict[str, str], sel: dict[str, str]) -> bool:
    """Whether ``labels`` hold every pair of ``sel`` (:func:`pumice.api.selectors.from_set`)."""
    return from_set(sel).matches(labels)
