"""nodeorder: kube-scheduler scores summed with weights (each score 0..100).

LeastAllocated and MostAllocated over cpu/memory, BalancedAllocation (Kubernetes 1.36: the
improvement in balance), preferred NodeAffinity, TaintToleration (PreferNoSchedule),
ImageLocality, InterPodAffinity (preferred terms) and PodTopologySpread (``ScheduleAnyway``
constraints), each times its ``<name>.weight`` argument. Resource scores read the Kubernetes
node view (:attr:`NodeInfo.kube_nonzero` / :attr:`NodeInfo.kube_requested`): every Pod on the
node, Pipelined ones included, BestEffort ones counted at 100m / 200Mi; the affinity and spread
scores count the Pods on the session's nodes the same way (see :mod:`._k8s_scores`).

Mirrors: volcano pkg/scheduler/plugins/nodeorder/nodeorder.go and kube-scheduler
noderesources (least_allocated, most_allocated, balanced_allocation), nodeaffinity,
tainttoleration, imagelocality, interpodaffinity and podtopologyspread scoring.
Deviates: PodTopologySpread's system-default constraints are not applied (see
:mod:`._k8s_scores`).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext

import numpy as np

from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo, has_pod_affinity
from pumice.scheduler.volcano.framework.arguments import Arguments, arg, parser
from pumice.scheduler.volcano.framework.node_arrays import NodeArrays
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.plugins._k8s_scores import (
    image_locality_scores,
    image_states,
    inter_pod_affinity_scores,
    pod_topology_spread_scores,
)
from pumice.scheduler.volcano.plugins.predicates import match_node_selector_term, untolerated_taint

PLUGIN_NAME = "nodeorder"
MAX_NODE_SCORE = 100


class NodeOrderArgs(Arguments, frozen=True):
    lenient_types = True  # upstream reads these with GetInt/GetBool/...: a wrong type keeps the default
    least_requested: int = arg("leastrequested.weight", 1)
    most_requested: int = arg("mostrequested.weight", 0)
    node_affinity: int = arg("nodeaffinity.weight", 2)
    pod_affinity: int = arg("podaffinity.weight", 2)
    balanced_resource: int = arg("balancedresource.weight", 1)
    taint_toleration: int = arg("tainttoleration.weight", 3)
    image_locality: int = arg("imagelocality.weight", 1)
    pod_topology_spread: int = arg("podtopologyspread.weight", 2)
    selector_spread: int = arg("selectorspread.weight", 0)
    volume_binding: int = arg("volumebinding.weight", 1)


def balanced_score(
    req_cpu: float,
    req_mem: float,
    node_cpu: np.ndarray,
    node_mem: np.ndarray,
    ccpu: np.ndarray,
    cmem: np.ndarray,
    positive: bool | None = None,
) -> np.ndarray:
    """Kubernetes 1.36 BalancedAllocation: how much the Pod improves the Node's balance.

    ``balance(used) = trunc((1 - std(fractions)) * 100)`` over cpu and memory (a fraction is
    ``used / allocatable`` capped at 1; a resource with no allocatable is left out; std of two
    fractions is half their difference, of one is 0); the score is
    ``50 + trunc((50 + balance(with Pod) - balance(without Pod)) / 2)``.

    Args:
        req_cpu, req_mem: the Pod's requests (millicores, bytes; no non-zero defaults).
        node_cpu, node_mem: what the Pods already on each node request.
        ccpu, cmem: each node's allocatable.
        positive: whether every ``ccpu`` and ``cmem`` is above 0 (None: found out here).
    Mirrors: kubernetes pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go
    (v1.36, vendored by volcano ed72c7c8) balancedResourceScorer / balancedResourceScore.
    """

    if positive is None:
        positive = _all_positive(ccpu, cmem)

    def balance(ucpu: np.ndarray, umem: np.ndarray) -> np.ndarray:
        if positive:  # no division by zero, every node has both resources: std as below, exactly
            std = np.abs(np.minimum(ucpu / ccpu, 1.0) - np.minimum(umem / cmem, 1.0)) / 2
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                fc = np.minimum(ucpu / ccpu, 1.0)
                fm = np.minimum(umem / cmem, 1.0)
            both = (ccpu > 0) & (cmem > 0)
            std = np.where(both, np.abs(fc - fm) / 2, 0.0)
        return np.trunc((1 - std) * MAX_NODE_SCORE)

    half = MAX_NODE_SCORE // 2
    return half + np.trunc((half + balance(node_cpu + req_cpu, node_mem + req_mem) - balance(node_cpu, node_mem)) / 2)


def _all_positive(ccpu: np.ndarray, cmem: np.ndarray) -> bool:
    """Every node has some allocatable CPU and memory (then the scores divide by no zero)."""
    return bool((ccpu > 0).all()) and bool((cmem > 0).all())


def resource_scores(
    args: NodeOrderArgs,
    task: TaskInfo,
    nonzero: np.ndarray,
    requested: np.ndarray,
    ccpu: np.ndarray,
    cmem: np.ndarray,
    positive: bool | None = None,
) -> np.ndarray:
    """Least/Most/Balanced scores for arrays of nodes, kube's integer semantics.

    Least and Most read the non-zero view (``nonzero``: nodes x (millicores, bytes), the Pod
    counted with :attr:`TaskInfo.nonzero_request`): ``floor((cap - req) * 100 / cap)`` resp.
    ``floor(min(req, cap) * 100 / cap)`` per resource, floored mean of the two. Balanced reads
    actual requests (``requested``) and is skipped for a BestEffort Pod (its PreScore says Skip).
    ``positive``: whether every ``ccpu`` and ``cmem`` is above 0 (None: found out here).
    """
    cpu_nz, mem_nz = task.nonzero_request
    ucpu, umem = nonzero[:, 0] + cpu_nz, nonzero[:, 1] + mem_nz
    total = np.zeros(len(ucpu))
    # with every allocatable above 0 nothing divides by zero and the "no allocatable" cases
    # below select nothing: the same floats without them (the weights are whole numbers, and a
    # product by 1 is the value itself)
    if positive is None:
        positive = _all_positive(ccpu, cmem)
    with nullcontext() if positive else np.errstate(divide="ignore", invalid="ignore"):
        if args.least_requested:
            lc = np.floor((ccpu - ucpu) * MAX_NODE_SCORE / ccpu)
            lm = np.floor((cmem - umem) * MAX_NODE_SCORE / cmem)
            lc[(ucpu > ccpu) if positive else (ucpu > ccpu) | (ccpu <= 0)] = 0
            lm[(umem > cmem) if positive else (umem > cmem) | (cmem <= 0)] = 0
            total += _weighted(np.floor((lc + lm) / 2), args.least_requested)
        if args.most_requested:
            mc = np.floor(np.minimum(ucpu, ccpu) * MAX_NODE_SCORE / ccpu)
            mm = np.floor(np.minimum(umem, cmem) * MAX_NODE_SCORE / cmem)
            if not positive:
                mc[ccpu <= 0] = 0
                mm[cmem <= 0] = 0
            total += _weighted(np.floor((mc + mm) / 2), args.most_requested)
    req = task.resreq
    if args.balanced_resource and (req.milli_cpu > 0 or req.memory > 0):
        total += _weighted(balanced_score(req.milli_cpu, req.memory, requested[:, 0], requested[:, 1], ccpu, cmem, positive),
                           args.balanced_resource)
    return total


def node_resource_scores(args: NodeOrderArgs, task: TaskInfo, arr: NodeArrays) -> np.ndarray:
    """:func:`resource_scores` of ``task`` over every row of ``arr`` (read-only, shape (nodes,)).

    A row's scores come from that row alone and from the Pod's requests (numpy's elementwise
    operations give the same floats over any set of rows), so they are kept per request in
    ``arr`` and recomputed only for rows written since (:meth:`NodeArrays.rowwise`).
    """
    # (every node's allocatable above 0: so is every row's, known without a look)
    positive = True if arr.alloc_positive else None

    def compute(at: np.ndarray | None) -> np.ndarray:
        if at is None:
            return resource_scores(args, task, arr.kube_nonzero, arr.kube_requested, arr.allocatable[:, 0],
                                   arr.allocatable[:, 1], positive)
        alloc = arr.allocatable[at, :2]
        return resource_scores(args, task, arr.kube_nonzero[at], arr.kube_requested[at], alloc[:, 0], alloc[:, 1], positive)

    req = task.resreq
    return arr.rowwise(("nodeorder.resources", args, task.nonzero_request, req.milli_cpu, req.memory), compute)


def _weighted(scores: np.ndarray, weight: int) -> np.ndarray:
    return scores if weight == 1 else scores * weight


class NodeOrderPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: NodeOrderArgs) -> None:
        self.args = args

    def _affinity_taint(self, task: TaskInfo, nodes: Sequence[NodeInfo], pns: np.ndarray | None = None) -> np.ndarray:
        """Preferred node affinity and PreferNoSchedule taint scores (``pns``: which nodes have
        any PreferNoSchedule taint, when known)."""
        out = np.zeros(len(nodes))
        spec = task.pod.get("spec") or {}
        if self.args.node_affinity:
            pref = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution")) or []
            if pref:
                raw = np.array(
                    [sum(int(t.get("weight") or 0) for t in pref if match_node_selector_term(n, t.get("preference") or {})) for n in nodes],
                    dtype=float,
                )
                mx = raw.max() if len(raw) else 0
                if mx > 0:
                    raw = np.floor(raw * MAX_NODE_SCORE / mx)
                out += raw * self.args.node_affinity
        if self.args.taint_toleration:
            has = bool(pns.any()) if pns is not None else any(t.get("effect") == "PreferNoSchedule" for n in nodes for t in n.taints)
            if has:
                cnt = np.array([_count_prefer_no_schedule(task, n) for n in nodes], dtype=float)
                mx = cnt.max()
                sc = MAX_NODE_SCORE - np.floor(cnt * MAX_NODE_SCORE / mx) if mx > 0 else np.full(len(nodes), float(MAX_NODE_SCORE))
            else:
                sc = np.full(len(nodes), float(MAX_NODE_SCORE))
            out += sc * self.args.taint_toleration
        return out

    def _open_cluster_scores(self, ssn: Session) -> None:
        """What ImageLocality and InterPodAffinity need from the whole cluster, once a session."""
        self.ssn = ssn
        self.states: dict[str, dict[str, tuple[int, int]]] = {}
        if self.args.image_locality:  # from the Nodes' status.images alone: kept while no Node changes
            states = ssn.node_memo.get("nodeorder.image_states")
            if states is None:
                states = ssn.node_memo["nodeorder.image_states"] = image_states(ssn.node_list)
            self.states = states
        self.any_affinity = bool(self.args.pod_affinity) and (
            any(has_pod_affinity(t) for n in ssn.nodes_with_pod_affinity() for t in n.tasks.values())
            or ssn.any_job_has_pod_affinity()
        )

    def _needs_cluster_scores(self, task: TaskInfo) -> bool:
        spec = task.pod.get("spec") or {}
        return bool(
            (self.args.image_locality and self.states)
            or (self.args.pod_affinity and (self.any_affinity or has_pod_affinity(task)))
            or (self.args.pod_topology_spread and spec.get("topologySpreadConstraints"))
        )

    def _cluster_scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> np.ndarray:
        """ImageLocality, InterPodAffinity and PodTopologySpread, weighted and summed."""
        ssn, args = self.ssn, self.args
        out = np.zeros(len(nodes))
        if args.image_locality:
            got = image_locality_scores(task, nodes, self.states, len(ssn.node_list))
            if got is not None:
                out += got * args.image_locality
        if args.pod_affinity:
            got = inter_pod_affinity_scores(task, nodes, ssn.node_list, ssn.namespaces, self.any_affinity)
            if got is not None:
                out += got * args.pod_affinity
        if args.pod_topology_spread:
            got = pod_topology_spread_scores(task, nodes, ssn.node_list)
            if got is not None:
                out += got * args.pod_topology_spread
        return out

    def on_session_open(self, ssn: Session) -> None:
        args = self.args
        self._open_cluster_scores(ssn)

        def rows_scores(task: TaskInfo, rows: np.ndarray) -> np.ndarray:
            arr = ssn.arrays
            out = node_resource_scores(args, task, arr)[rows]
            spec = task.pod.get("spec") or {}
            any_pns = arr.any_prefer_no_schedule
            preferred = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution"))
            if preferred or (any_pns and arr.prefer_no_schedule[rows].any()):
                pns = arr.prefer_no_schedule[rows] if any_pns else np.zeros(len(rows), dtype=bool)
                out += self._affinity_taint(task, [ssn.node_list[int(i)] for i in rows], pns)
            elif args.taint_toleration:
                out += float(MAX_NODE_SCORE * args.taint_toleration)
            if self._needs_cluster_scores(task):
                out += self._cluster_scores(task, [ssn.node_list[int(i)] for i in rows])
            return out

        def batch(task: TaskInfo, nodes: Sequence[NodeInfo]) -> np.ndarray:
            if ssn.vectorize:
                return rows_scores(task, np.array([n.index for n in nodes], dtype=int))
            nonzero = np.array([n.kube_nonzero for n in nodes], dtype=float).reshape(-1, 2)
            requested = np.array([n.kube_requested for n in nodes], dtype=float).reshape(-1, 2)
            alloc = np.array([[n.allocatable.milli_cpu, n.allocatable.memory] for n in nodes], dtype=float).reshape(-1, 2)
            scores = resource_scores(args, task, nonzero, requested, alloc[:, 0], alloc[:, 1])
            scores = scores + self._affinity_taint(task, nodes)
            if self._needs_cluster_scores(task):
                scores = scores + self._cluster_scores(task, nodes)
            return scores

        ssn.add_batch_node_order_fn(PLUGIN_NAME, batch)
        if ssn.vectorize:
            ssn.batch_scores[PLUGIN_NAME] = rows_scores

    def on_session_close(self, ssn: Session) -> None:
        pass


def _count_prefer_no_schedule(task: TaskInfo, node: NodeInfo) -> int:
    tols = [t for t in (task.pod.get("spec") or {}).get("tolerations") or [] if t.get("effect") in (None, "", "PreferNoSchedule")]
    pod = {"spec": {"tolerations": tols}}
    count = 0
    for taint in node.taints:
        if taint.get("effect") != "PreferNoSchedule":
            continue
        fake = NodeInfo(node.name, node={"spec": {"taints": [taint]}})
        if untolerated_taint(pod, fake, ("PreferNoSchedule",)) is not None:
            count += 1
    return count


parse_arguments = parser(NodeOrderArgs)


new = NodeOrderPlugin
