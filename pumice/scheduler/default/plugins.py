"""The default scheduler's filter and score plugins, one Pod against one Node (pure functions).

These are the reference semantics: the plain-loop core runs them node by node, the vectorized
core computes the same answers over numpy columns, and a test checks the two agree.

Filters run in upstream's default order and stop at the first failing plugin per Node
(NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit; then
PodTopologySpread, which needs state over all Nodes and so is run by the cores from
:mod:`pumice.scheduler.default.spread`). A filter returns ``[]`` when the Node passes, else the
reasons (NodeResourcesFit may return several).

Scores are 0..100 (MaxNodeScore); the total is ``1*LeastAllocated + 1*BalancedAllocation +
3*TaintToleration`` (upstream default weights; NodeResourcesFit and BalancedAllocation score cpu
and memory with weight 1 each).

Mirrors: kubernetes pkg/scheduler/framework/plugins/{nodeunschedulable,nodename,tainttoleration,
nodeaffinity,nodeports,noderesources}/*.go and pkg/scheduler/framework/types.go FitError.Error.
"""

from __future__ import annotations

import math
from collections import Counter

from pumice.scheduler.default.podinfo import TAINT_UNSCHEDULABLE, NodeInfo, PodInfo, Taint
from pumice.scheduler.default.resources import CPU, MEMORY, PODS
from pumice.scheduler.default.spread import REASON_CONSTRAINTS_NOT_MATCH

MAX_NODE_SCORE = 100

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
REASON_TOO_MANY_PODS = "Too many pods"

# Reasons whose Nodes upstream's DefaultPreemption counts as "not helpful" (the filter answered
# UnschedulableAndUnresolvable); the others would be preemption candidates.
WEIGHT_LEAST_ALLOCATED = 1
WEIGHT_BALANCED_ALLOCATION = 1
WEIGHT_TAINT_TOLERATION = 3

_UNSCHEDULABLE_TAINT = Taint(TAINT_UNSCHEDULABLE, "", "NoSchedule")


def insufficient(resource: str) -> str:
    return REASON_TOO_MANY_PODS if resource == PODS else f"Insufficient {resource}"


def node_unschedulable(pod: PodInfo, node: NodeInfo) -> list[str]:
    if node.unschedulable and not pod.tolerates(_UNSCHEDULABLE_TAINT):
        return [REASON_UNSCHEDULABLE]
    return []


def node_name(pod: PodInfo, node: NodeInfo) -> list[str]:
    if pod.node_name and pod.node_name != node.name:
        return [REASON_NODE_NAME]
    return []


def first_untolerated_taint(pod: PodInfo, taints: tuple[Taint, ...]) -> Taint | None:
    for t in taints:
        if t.effect in ("NoSchedule", "NoExecute") and not pod.tolerates(t):
            return t
    return None


def taint_toleration(pod: PodInfo, node: NodeInfo) -> list[str]:
    t = first_untolerated_taint(pod, node.taints)
    return [t.reason()] if t else []


def node_affinity(pod: PodInfo, node: NodeInfo) -> list[str]:
    return [] if pod.matches_node_selection(node.labels, node.name) else [REASON_NODE_AFFINITY]


def ports_conflict(a: tuple[str, str, int], b: tuple[str, str, int]) -> bool:
    """Same protocol and port, and the host IPs overlap (0.0.0.0 overlaps every IP)."""
    return a[0] == b[0] and a[2] == b[2] and (a[1] == b[1] or "0.0.0.0" in (a[1], b[1]))


def node_ports(pod: PodInfo, node: NodeInfo) -> list[str]:
    for want in pod.host_ports:
        if any(ports_conflict(want, used) for used in node.used_ports):
            return [REASON_NODE_PORTS]
    return []


def node_resources_fit(pod: PodInfo, node: NodeInfo) -> list[str]:
    """Every requested resource (pods counts 1) must fit in allocatable minus requested.
    Reasons in upstream order: pods, cpu, memory, ephemeral-storage, then the rest by name."""
    order = [PODS, CPU, MEMORY, "ephemeral-storage"]
    names = order + sorted(k for k in pod.requests if k not in order)
    out = []
    for r in names:
        want = pod.requests.get(r, 0)
        if want > 0 and want > node.allocatable.get(r, 0) - node.requested.get(r, 0):
            out.append(insufficient(r))
    return out


FILTERS = (node_unschedulable, node_name, taint_toleration, node_affinity, node_ports, node_resources_fit)


def run_filters(pod: PodInfo, node: NodeInfo) -> list[str]:
    """Reasons from the first failing filter, ``[]`` when the Node fits."""
    for f in FILTERS:
        reasons = f(pod, node)
        if reasons:
            return reasons
    return []


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def least_allocated(pod: PodInfo, node: NodeInfo) -> int:
    """NodeResourcesFit LeastAllocated over cpu and memory (non-zero requests), weight 1 each."""
    total = weights = 0
    for i, r in enumerate((CPU, MEMORY)):
        cap = node.allocatable.get(r, 0)
        if cap == 0:
            continue
        total += least_requested_score(node.nonzero_requested[i] + pod.nonzero[i], cap)
        weights += 1
    return total // weights if weights else 0


def balanced_allocation(pod: PodInfo, node: NodeInfo) -> int:
    """NodeResourcesBalancedAllocation over cpu and memory (actual requests)."""
    fractions = []
    for r in (CPU, MEMORY):
        cap = node.allocatable.get(r, 0)
        if cap == 0:
            continue
        fractions.append(min(1.0, (node.requested.get(r, 0) + pod.requests.get(r, 0)) / cap))
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:  # pragma: no cover - only cpu and memory are scored
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def intolerable_prefer_no_schedule(pod: PodInfo, node: NodeInfo) -> int:
    """Raw TaintToleration score: PreferNoSchedule taints not tolerated (tolerations with an
    empty or PreferNoSchedule effect count)."""
    tols = [t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule")]
    return sum(
        1 for taint in node.taints
        if taint.effect == "PreferNoSchedule" and not any(t.tolerates(taint) for t in tols)
    )


def normalize_reverse(raw: list[int]) -> list[int]:
    """DefaultNormalizeScore(MaxNodeScore, reverse=true)."""
    top = max(raw, default=0)
    if top == 0:
        return [MAX_NODE_SCORE] * len(raw)
    return [MAX_NODE_SCORE - MAX_NODE_SCORE * r // top for r in raw]


def fit_error_message(num_nodes: int, reasons: Counter[str], unresolvable: int) -> str:
    """The FailedScheduling message, as kube-scheduler v1.32 writes it with DefaultPreemption on
    and no lower-priority Pods to preempt.

    ``reasons`` counts each reason over Nodes; ``unresolvable`` is the number of Nodes rejected by
    a filter that preemption cannot fix (everything but NodeResourcesFit and NodePorts).
    """
    if num_nodes == 0:
        return "no nodes available to schedule pods"
    parts = sorted(f"{v} {k}" for k, v in reasons.items())
    msg = f"0/{num_nodes} nodes are available: {', '.join(parts)}."
    post: Counter[str] = Counter()
    if unresolvable:
        post["Preemption is not helpful for scheduling"] = unresolvable
    if num_nodes - unresolvable:
        post["No preemption victims found for incoming pod"] = num_nodes - unresolvable
    post_parts = sorted(f"{v} {k}" for k, v in post.items())
    return f"{msg} preemption: 0/{num_nodes} nodes are available: {', '.join(post_parts)}."


def prefilter_error_message(num_nodes: int, message: str) -> str:
    """The FailedScheduling message when a PreFilter plugin rejected the Pod
    (UnschedulableAndUnresolvable, so every Node is one preemption cannot help): FitError.Error
    with the PreFilter message instead of the per-Node reasons."""
    if num_nodes == 0:
        return "no nodes available to schedule pods"
    return (f"0/{num_nodes} nodes are available: {message}. preemption: 0/{num_nodes} nodes are available: "
            f"{num_nodes} Preemption is not helpful for scheduling.")


RESOLVABLE_REASONS = (REASON_NODE_PORTS, REASON_CONSTRAINTS_NOT_MATCH)


def is_resolvable(reasons: list[str]) -> bool:
    """True when preemption could help: NodeResourcesFit, NodePorts and PodTopologySpread's skew
    check answer Unschedulable, the other filters (and PodTopologySpread's missing topology
    label) UnschedulableAndUnresolvable."""
    return all(r in RESOLVABLE_REASONS or r.startswith("Insufficient ") or r == REASON_TOO_MANY_PODS
               for r in reasons)
