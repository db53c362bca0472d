"""The kube-scheduler scores nodeorder delegates to that look beyond one node: ImageLocality,
InterPodAffinity (preferred terms) and PodTopologySpread (``ScheduleAnyway`` constraints).

Each function takes the task, the candidate nodes and the session's whole node list (the
Kubernetes node view: every Pod on a node except those evicted in this session, Pipelined and
in-session placements included, as Volcano's predicates plugin keeps its ``NodeMap``) and
returns the plugin's normalized 0..100 score per candidate node, or None when the plugin's
PreScore would skip (nothing to score), in which case it adds nothing.

Mirrors: kubernetes pkg/scheduler/framework/plugins imagelocality (Score, calculatePriority,
sumImageScores, scaledImageScore, normalizedImageName), interpodaffinity/scoring.go (PreScore,
processExistingPod, Score, NormalizeScore) and podtopologyspread/scoring.go + common.go
(initPreScoreState, PreScore, Score, NormalizeScore, filterTopologySpreadConstraints,
matchNodeInclusionPolicies, countPodsMatchSelector), with the arguments volcano's nodeorder
gives them: InterPodAffinityArgs{} (hardPodAffinityWeight 0: existing Pods' required affinity
terms do not score; existing Pods' preferred terms are not ignored) and PodTopologySpreadArgs
with system defaulting.
Deviates: the system-default spread constraints (zone maxSkew 5, hostname maxSkew 3), which
kube applies only to Pods selected by a Service, ReplicationController, ReplicaSet or
StatefulSet, are not applied: the scheduler's snapshot holds none of those objects. Image
states count the session's (Ready) nodes, where volcano's cache counts every node it knows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pumice.api import Obj
from pumice.api.selectors import SelectorError, from_label_selector
from pumice.scheduler.default.spread import soft_constraints, spread_scores
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo, has_pod_affinity
from pumice.scheduler.volcano.plugins.predicates import (
    match_label_selector,
    spread_node,
)

MAX_NODE_SCORE = 100
MB = 1024 * 1024
MIN_IMAGE_THRESHOLD = 23 * MB
MAX_CONTAINER_IMAGE_THRESHOLD = 1000 * MB


def _labels(pod: Obj) -> dict[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def _live_pods(node: NodeInfo) -> list[TaskInfo]:
    """The Pods the Kubernetes node view holds for ``node`` (evicted ones left out)."""
    return [t for k, t in node.tasks.items() if k not in node.evicted]


# ----- ImageLocality -------------------------------------------------------------------------
def normalized_image_name(name: str) -> str:
    """``name`` with ``:latest`` added when it carries no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def image_states(nodes: Sequence[NodeInfo]) -> dict[str, dict[str, tuple[int, int]]]:
    """Node name -> image name -> (size in bytes, number of nodes holding that name), from each
    Node's ``status.images`` (every name of an image). Empty when no node reports images."""
    per_node: dict[str, dict[str, int]] = {}
    holders: dict[str, int] = {}
    for n in nodes:
        names: dict[str, int] = {}
        for img in ((n.node.get("status") or {}).get("images") or []):
            size = int(img.get("sizeBytes") or 0)
            for nm in img.get("names") or []:
                names[str(nm)] = size
        if names:
            per_node[n.name] = names
            for nm in names:
                holders[nm] = holders.get(nm, 0) + 1
    return {node: {nm: (size, holders[nm]) for nm, size in names.items()} for node, names in per_node.items()}


def image_locality_scores(task: TaskInfo, nodes: Sequence[NodeInfo], states: Mapping[str, Mapping[str, tuple[int, int]]],
                          total_nodes: int) -> np.ndarray | None:
    """ImageLocality: per node, the sizes of the Pod's (init and regular) container images it
    already holds, each scaled by the share of nodes holding it, clamped to [23 MiB, 1000 MiB x
    containers] and mapped onto 0..100 (integer arithmetic). None when no node reports images."""
    if not states or total_nodes <= 0:
        return None
    spec = task.pod.get("spec") or {}
    containers = list(spec.get("initContainers") or []) + list(spec.get("containers") or [])
    if not containers:
        return None
    images = [normalized_image_name(str(c.get("image") or "")) for c in containers]
    max_threshold = MAX_CONTAINER_IMAGE_THRESHOLD * len(containers)
    out = np.zeros(len(nodes))
    for i, n in enumerate(nodes):
        held = states.get(n.name)
        if not held:
            continue
        total = 0
        for img in images:
            st = held.get(img)
            if st is not None:
                total += int(float(st[0]) * (float(st[1]) / float(total_nodes)))
        total = min(max(total, MIN_IMAGE_THRESHOLD), max_threshold)
        out[i] = MAX_NODE_SCORE * (total - MIN_IMAGE_THRESHOLD) // (max_threshold - MIN_IMAGE_THRESHOLD)
    return out


# ----- InterPodAffinity ----------------------------------------------------------------------
class AffinityTerm:
    """A Pod affinity term of ``owner``: its label selector, namespaces (the owner's own when
    neither ``namespaces`` nor ``namespaceSelector`` is given) and namespace selector (None
    matches no namespace), over ``topologyKey``. Mirrors: framework.AffinityTerm / newAffinityTerm."""

    __slots__ = ("namespaces", "ns_selector", "selector", "topology_key", "weight")

    def __init__(self, owner: TaskInfo, term: Obj, weight: int) -> None:
        self.selector = term.get("labelSelector")
        ns = term.get("namespaces") or []
        self.ns_selector = term.get("namespaceSelector")
        self.namespaces = set(ns) if (ns or self.ns_selector is not None) else {owner.namespace}
        self.topology_key = str(term.get("topologyKey") or "")
        self.weight = weight

    def matches(self, pod: TaskInfo, ns_labels: Mapping[str, str] | None) -> bool:
        if pod.namespace not in self.namespaces:
            if self.ns_selector is None or ns_labels is None:
                return False
            try:
                if not from_label_selector(self.ns_selector).matches(ns_labels):
                    return False
            except SelectorError:
                return False
        return match_label_selector(_labels(pod.pod), self.selector)


def _weighted_terms(owner: TaskInfo, kind: str) -> list[AffinityTerm]:
    aff = ((owner.pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    out = []
    for wt in aff.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
        out.append(AffinityTerm(owner, wt.get("podAffinityTerm") or {}, int(wt.get("weight") or 0)))
    return out


def inter_pod_affinity_scores(task: TaskInfo, nodes: Sequence[NodeInfo], all_nodes: Sequence[NodeInfo],
                              namespaces: Mapping[str, Obj], any_affinity: bool) -> np.ndarray | None:
    """InterPodAffinity scoring: per topology pair, the weights of the incoming Pod's preferred
    (anti-)affinity terms that existing Pods match (+/-), and of existing Pods' preferred
    (anti-)affinity terms the incoming Pod matches (+/-); a node scores the sum over its labels,
    min-max normalized onto 0..100 over the candidates. None when nothing contributes.

    ``any_affinity``: some Pod in the session has pod (anti-)affinity (else only the incoming
    Pod's own preferred terms can contribute).
    """
    aff_terms = _weighted_terms(task, "podAffinity")
    anti_terms = _weighted_terms(task, "podAntiAffinity")
    own = bool(aff_terms or anti_terms)
    if not own and not any_affinity:
        return None
    ns_obj = namespaces.get(task.namespace)
    ns_labels: Mapping[str, str] = ((ns_obj or {}).get("metadata") or {}).get("labels") or {}
    topo: dict[tuple[str, str], int] = {}

    def add(term: AffinityTerm, pod: TaskInfo, node_labels: Mapping[str, str], sign: int, pod_ns_labels: Mapping[str, str] | None) -> None:
        if term.matches(pod, pod_ns_labels):
            val = node_labels.get(term.topology_key)
            if val is not None:
                key = (term.topology_key, val)
                topo[key] = topo.get(key, 0) + term.weight * sign

    for n in all_nodes:
        node_labels = n.labels
        if not node_labels:
            continue
        for existing in _live_pods(n):
            if not own and not has_pod_affinity(existing):
                continue
            ens = namespaces.get(existing.namespace)
            existing_ns_labels = ((ens or {}).get("metadata") or {}).get("labels") or {}
            for t in aff_terms:
                add(t, existing, node_labels, 1, existing_ns_labels)
            for t in anti_terms:
                add(t, existing, node_labels, -1, existing_ns_labels)
            if has_pod_affinity(existing):
                for t in _weighted_terms(existing, "podAffinity"):
                    add(t, task, node_labels, 1, ns_labels)
                for t in _weighted_terms(existing, "podAntiAffinity"):
                    add(t, task, node_labels, -1, ns_labels)
    if not topo:
        return None
    raw = np.array([sum(topo.get((k, v), 0) for k, v in n.labels.items()) for n in nodes], dtype=float)
    if not len(raw):
        return raw
    lo, hi = raw.min(), raw.max()
    if hi - lo <= 0:
        return np.zeros(len(nodes))
    return np.trunc(MAX_NODE_SCORE * ((raw - lo) / (hi - lo)))


# ----- PodTopologySpread ---------------------------------------------------------------------
def pod_topology_spread_scores(task: TaskInfo, nodes: Sequence[NodeInfo], all_nodes: Sequence[NodeInfo]) -> np.ndarray | None:
    """PodTopologySpread scoring for the Pod's ``ScheduleAnyway`` constraints: the default
    scheduler's :func:`~pumice.scheduler.default.spread.spread_scores` (matching Pods in the node's
    domain times log(domains + 2) plus maxSkew - 1, summed and rounded, then ``100 * (max + min -
    s) / max`` over the candidates; nodes missing a topology key score 0) on this session's view
    of the nodes. None when the Pod has no such constraint (or one whose selector does not parse,
    which the API refuses at create)."""
    try:
        spread = soft_constraints(task.pod, None)
    except SelectorError:
        return None
    if spread is None or not all_nodes:
        return None
    views = {n.name: spread_node(task, n) for n in all_nodes}
    return np.array(spread_scores(spread, [views.get(n.name) or spread_node(task, n) for n in nodes], views.values()),
                    dtype=np.float64)
