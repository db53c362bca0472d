"""nodeorder: kube-scheduler scores summed with weights (each score 0..100).

LeastAllocated and MostAllocated over cpu/memory, BalancedAllocation, preferred NodeAffinity
and TaintToleration (PreferNoSchedule), each times its ``<name>.weight`` argument.

Mirrors: volcano pkg/scheduler/plugins/nodeorder/nodeorder.go and kube-scheduler
noderesources (least_allocated, most_allocated, balanced_allocation), nodeaffinity and
tainttoleration scoring.
Deviates: InterPodAffinity preferred terms, ImageLocality and PodTopologySpread score 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.framework.arguments import Arguments, arg, decode
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.plugins.predicates import match_node_selector_term, untolerated_taint

PLUGIN_NAME = "nodeorder"
MAX_NODE_SCORE = 100
DEFAULT_MILLI_CPU = 100.0
DEFAULT_MEMORY = 200.0 * 1024 * 1024


class NodeOrderArgs(Arguments, frozen=True):
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


def _nonzero(task: TaskInfo) -> tuple[float, float]:
    cpu = task.resreq.milli_cpu or DEFAULT_MILLI_CPU
    mem = task.resreq.memory or DEFAULT_MEMORY
    return cpu, mem


def resource_scores(
    args: NodeOrderArgs,
    cpu_req: float,
    mem_req: float,
    used_cpu: np.ndarray,
    used_mem: np.ndarray,
    ccpu: np.ndarray,
    cmem: np.ndarray,
) -> np.ndarray:
    """Least/Most/Balanced scores for arrays of nodes (millicores, bytes), kube's integer
    semantics: ``floor((cap - req) * 100 / cap)`` per resource, floored mean of the two."""
    ucpu, umem = used_cpu + cpu_req, used_mem + mem_req
    total = np.zeros(len(ucpu))
    with np.errstate(divide="ignore", invalid="ignore"):
        if args.least_requested:
            lc = np.floor((ccpu - ucpu) * MAX_NODE_SCORE / ccpu)
            lm = np.floor((cmem - umem) * MAX_NODE_SCORE / cmem)
            lc[(ucpu > ccpu) | (ccpu <= 0)] = 0
            lm[(umem > cmem) | (cmem <= 0)] = 0
            total += np.floor((lc + lm) / 2) * args.least_requested
        if args.most_requested:
            mc = np.floor(np.minimum(ucpu, ccpu) * MAX_NODE_SCORE / ccpu)
            mm = np.floor(np.minimum(umem, cmem) * MAX_NODE_SCORE / cmem)
            mc[ccpu <= 0] = 0
            mm[cmem <= 0] = 0
            total += np.floor((mc + mm) / 2) * args.most_requested
        if args.balanced_resource:
            fc = np.minimum(ucpu / ccpu, 1.0)
            fm = np.minimum(umem / cmem, 1.0)
            fc[ccpu <= 0] = 1.0
            fm[cmem <= 0] = 1.0
            total += np.floor((1 - np.abs(fc - fm) / 2) * MAX_NODE_SCORE) * args.balanced_resource
    return total


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

    def on_session_open(self, ssn: Session) -> None:
        args = self.args

        def rows_scores(task: TaskInfo, rows: np.ndarray) -> np.ndarray:
            cpu, mem = _nonzero(task)
            arr = ssn.arrays
            arr.sync()
            out = resource_scores(
                args, cpu, mem, arr.used[rows, 0], arr.used[rows, 1], arr.allocatable[rows, 0], arr.allocatable[rows, 1]
            )
            spec = task.pod.get("spec") or {}
            pns = arr.prefer_no_schedule[rows]
            preferred = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution"))
            if preferred or pns.any():
                out += self._affinity_taint(task, [ssn.node_list[int(i)] for i in rows], pns)
            elif args.taint_toleration:
                out += float(MAX_NODE_SCORE * args.taint_toleration)
            return out

        def batch(task: TaskInfo, nodes: Sequence[NodeInfo]) -> np.ndarray:
            if ssn.vectorize:
                return rows_scores(task, np.array([n.index for n in nodes], dtype=int))
            cpu, mem = _nonzero(task)
            used = np.array([[n.used.milli_cpu, n.used.memory] for n in nodes], dtype=float).reshape(-1, 2)
            alloc = np.array([[n.allocatable.milli_cpu, n.allocatable.memory] for n in nodes], dtype=float).reshape(-1, 2)
            scores = resource_scores(args, cpu, mem, used[:, 0], used[:, 1], alloc[:, 0], alloc[:, 1])
            return scores + self._affinity_taint(task, nodes)

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


def parse_arguments(arguments: Mapping[str, Any]) -> NodeOrderArgs:
    """Parse (once, at configuration load) the arguments under their upstream keys.

    Raises:
        ArgumentError: an unknown key or a value of the wrong type.
    """
    return decode(NodeOrderArgs, arguments)


def new(args: NodeOrderArgs) -> NodeOrderPlugin:
    return NodeOrderPlugin(args)
