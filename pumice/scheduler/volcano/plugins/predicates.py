"""predicates: the kube-scheduler filters Volcano wraps, plus Volcano's max-pods check.

Filters, in kube's order: NodeUnschedulable, NodeAffinity (nodeSelector + required node
affinity), NodePorts, TaintToleration, InterPodAffinity (required pod (anti-)affinity, basics:
labelSelector matchLabels/matchExpressions over a topologyKey), PodTopologySpread (a Pod's
``DoNotSchedule`` constraints, ``predicate.PodTopologySpreadEnable``: the default scheduler's
:mod:`pumice.scheduler.default.spread` prefilter, run at the pre-predicate over the session's
Nodes, and its check per Node), VolumeBinding (``predicate.VolumeBindingEnable``, for tasks with
claim volumes only, decided once per task: the default scheduler's
:mod:`pumice.scheduler.default.volumebinding` over the session's claim listers; a PreFilter refusal
is the pre-predicate error ``plugin VolumeBinding pre-predicates failed <message>``); and "node(s)
pod number exceeded" when the node's allocatable ``pods`` <= its pod count. Resource fit is not
here (allocate checks it).

The static filters (unschedulable, affinity, taints) depend only on the pod spec and the node,
so their verdict is computed once per distinct pod scheduling spec and node and cached for the
session; :meth:`PredicatesPlugin.batch` answers a whole node set with numpy.

Mirrors: volcano pkg/scheduler/plugins/predicates/predicates.go and the kube-scheduler filter
plugins nodeunschedulable, nodeaffinity, nodeports, tainttoleration, interpodaffinity,
volumebinding (PreFilter and Filter; its PreBind runs in the cache's binder,
:mod:`pumice.scheduler.default.bindvolumes`; not its Score).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from pumice.api import Obj
from pumice.api.selectors import SelectorError, from_label_selector, from_node_selector_requirements, from_set
from pumice.scheduler.default.spread import (
    REASON_NODE_LABEL_NOT_MATCH,
    FilterState,
    SpreadNode,
    hard_constraints,
    prefilter,
)
from pumice.scheduler.default.volumebinding import (
    PLUGIN_NAME as VOLUME_BINDING_PLUGIN,
)
from pumice.scheduler.default.volumebinding import (
    PodVolumeClaims,
    VolumeBindingError,
    filter_reasons,
    pre_filter,
)
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.resource import PODS
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import NODE_POD_NUMBER_EXCEEDED, Status, StatusCode
from pumice.scheduler.volcano.framework.arguments import Arguments, arg, parser
from pumice.scheduler.volcano.framework.node_arrays import NodeArrays
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "predicates"

ERR_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
ERR_PORTS = "node(s) didn't have free ports for the requested pod ports"
ERR_POD_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD_PLUGIN = "PodTopologySpread"


class PredicatesArgs(Arguments, frozen=True):
    lenient_types = True  # upstream reads these with GetInt/GetBool/...: a wrong type keeps the default
    node_affinity: bool = arg("predicate.NodeAffinityEnable", True)
    node_ports: bool = arg("predicate.NodePortsEnable", True)
    taint_toleration: bool = arg("predicate.TaintTolerationEnable", True)
    pod_affinity: bool = arg("predicate.PodAffinityEnable", True)
    node_volume_limits: bool = arg("predicate.NodeVolumeLimitsEnable", True)
    volume_zone: bool = arg("predicate.VolumeZoneEnable", True)
    pod_topology_spread: bool = arg("predicate.PodTopologySpreadEnable", True)
    volume_binding: bool = arg("predicate.VolumeBindingEnable", True)
    dra: bool = arg("predicate.DynamicResourceAllocationEnable", False)
    cache: bool = arg("predicate.CacheEnable", False)
    proportional: bool = arg("predicate.ProportionalEnable", False)
    proportional_resource: str = arg("predicate.resources", "")


# ----- matching helpers (the matching itself is pumice.api.selectors') ----------------------
def match_node_selector_term(node: NodeInfo, term: Obj) -> bool:
    """Whether ``node`` satisfies a NodeSelectorTerm: its matchExpressions over the labels and
    its matchFields over ``metadata.name``. An empty term, or one whose requirements do not
    convert (the API server refuses such Pods), matches nothing.

    Mirrors: k8s.io/component-helpers scheduling/corev1/nodeaffinity nodeSelectorTerms.Match.
    """
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    try:
        return ((not exprs or from_node_selector_requirements(exprs).matches(node.labels))
                and (not fields or from_node_selector_requirements(fields).matches({"metadata.name": node.name})))
    except SelectorError:
        return False


def match_label_selector(labels: Mapping[str, Any], sel: Obj | None) -> bool:
    """A Pod affinity term's labelSelector (None selects nothing); one that does not convert
    matches nothing."""
    try:
        return from_label_selector(sel).matches(labels)
    except SelectorError:
        return False


def node_affinity_fits(pod: Obj, node: NodeInfo) -> bool:
    spec = pod.get("spec") or {}
    if not from_set(spec.get("nodeSelector")).matches(node.labels):
        return False
    req = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")) or None
    if req is not None:
        terms = req.get("nodeSelectorTerms") or []
        if not any(match_node_selector_term(node, t) for t in terms):
            return False
    return True


def tolerates(tol: Obj, taint: Obj) -> bool:
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    op = tol.get("operator") or "Equal"
    if not tol.get("key"):
        return op == "Exists"
    if tol.get("key") != taint.get("key"):
        return False
    if op == "Exists":
        return True
    return (tol.get("value") or "") == (taint.get("value") or "")


def untolerated_taint(pod: Obj, node: NodeInfo, effects: tuple[str, ...] = ("NoSchedule", "NoExecute")) -> Obj | None:
    tols = (pod.get("spec") or {}).get("tolerations") or []
    for taint in node.taints:
        if taint.get("effect") not in effects:
            continue
        if not any(tolerates(t, taint) for t in tols):
            return taint
    return None


def host_ports(pod: Obj) -> list[tuple[str, str, int]]:
    out = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            hp = p.get("hostPort")
            if hp:
                out.append((p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", int(hp)))
    return out


def _ports_conflict(a: tuple[str, str, int], b: tuple[str, str, int]) -> bool:
    if a[1] != b[1] or a[2] != b[2]:
        return False
    return a[0] == b[0] or "0.0.0.0" in (a[0], b[0])


def spread_node(task: TaskInfo, node: NodeInfo) -> SpreadNode:
    """``node`` as PodTopologySpread sees it for ``task``: whether the Pod's node affinity and its
    NoSchedule/NoExecute tolerations admit it, and the labels of its live (not evicted, not
    terminating) Pods of the task's namespace."""
    pod = task.pod
    return SpreadNode(node.name, node.labels, node_affinity_fits(pod, node), untolerated_taint(pod, node) is None,
                      [(t.pod.get("metadata") or {}).get("labels") or {}
                       for k, t in node.tasks.items()
                       if k not in node.evicted and t.namespace == task.namespace
                       and not (t.pod.get("metadata") or {}).get("deletionTimestamp")])


def _static_key(pod: Obj) -> str:
    spec = pod.get("spec") or {}
    aff = (spec.get("affinity") or {}).get("nodeAffinity")
    if not spec.get("nodeSelector") and not aff and not spec.get("tolerations"):
        return ""
    return json.dumps(
        [spec.get("nodeSelector"), (spec.get("affinity") or {}).get("nodeAffinity"), spec.get("tolerations")],
        sort_keys=True,
    )


class PredicatesPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: PredicatesArgs) -> None:
        self.args = args
        self._static: dict[str, tuple[np.ndarray, dict[int, list[Status]]]] = {}
        self._keys: dict[str, str] = {}
        self.ssn: Session | None = None
        self.any_pod_affinity = False
        # task uid -> PodTopologySpread's PreFilter state (set by the pre-predicate)
        self._spread: dict[str, FilterState] = {}
        # task uid -> VolumeBinding's PreFilter result (tasks with claim volumes only)
        self._claims: dict[str, PodVolumeClaims | str] = {}

    # ----- per node -----------------------------------------------------------------------
    def static_statuses(self, task: TaskInfo, node: NodeInfo) -> list[Status]:
        pod = task.pod
        if node.unschedulable:
            tol = (pod.get("spec") or {}).get("tolerations") or []
            taint = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
            if not any(tolerates(t, taint) for t in tol):
                return [Status(StatusCode.UnschedulableAndUnresolvable, ERR_UNSCHEDULABLE, "NodeUnschedulable")]
        if self.args.node_affinity and not node_affinity_fits(pod, node):
            return [Status(StatusCode.UnschedulableAndUnresolvable, ERR_AFFINITY, "NodeAffinity")]
        if self.args.taint_toleration:
            bad = untolerated_taint(pod, node)
            if bad is not None:
                return [
                    Status(
                        StatusCode.UnschedulableAndUnresolvable,
                        f"node(s) had untolerated taint {{{bad.get('key')}: {bad.get('value', '')}}}",
                        "TaintToleration",
                    )
                ]
        return []

    def dynamic_statuses(self, task: TaskInfo, node: NodeInfo) -> list[Status]:
        out: list[Status] = []
        if self.args.node_ports:
            mine = host_ports(task.pod)
            if mine:
                for key, other in node.tasks.items():
                    if key in node.evicted:
                        continue
                    if any(_ports_conflict(a, b) for a in mine for b in host_ports(other.pod)):
                        out.append(Status(StatusCode.Unschedulable, ERR_PORTS, "NodePorts"))
                        return out
        if self.args.pod_affinity and self.any_pod_affinity and self.ssn is not None:
            st = self._pod_affinity(task, node)
            if st is not None:
                out.append(st)
                return out
        state = self._spread_state(task)
        if state is not None:
            why = state.reason(node.labels)
            if why is not None:
                code = (StatusCode.UnschedulableAndUnresolvable if why == REASON_NODE_LABEL_NOT_MATCH
                        else StatusCode.Unschedulable)
                out.append(Status(code, why, SPREAD_PLUGIN))
                return out
        claims = self._volume_claims(task)
        if isinstance(claims, str):  # the caller skipped the pre-predicate that refuses it
            out.append(Status(StatusCode.UnschedulableAndUnresolvable, claims, VOLUME_BINDING_PLUGIN))
        elif claims is not None and (claims.bound or claims.delayed):
            assert self.ssn is not None and self.ssn.volumes is not None
            try:
                reasons = filter_reasons(claims, node.name, node.labels, self.ssn.volumes)
            except VolumeBindingError as e:
                out.append(Status(StatusCode.Error, str(e), VOLUME_BINDING_PLUGIN))
                return out
            if reasons:
                out.append(Status(StatusCode.UnschedulableAndUnresolvable, ", ".join(reasons), VOLUME_BINDING_PLUGIN))
        return out

    # ----- VolumeBinding ------------------------------------------------------------------
    def _volume_claims(self, task: TaskInfo) -> PodVolumeClaims | str | None:
        """VolumeBinding's PreFilter result for the task: the pre-predicate's, or computed now
        when the caller skipped it; None when it does not apply (disabled, no claim volumes, or
        no claim listers in the session)."""
        if not self.args.volume_binding or not task.has_claim_volumes or self.ssn is None or self.ssn.volumes is None:
            return None
        got = self._claims.get(task.uid)
        if got is None:
            got = self._claims[task.uid] = pre_filter(task.pod, self.ssn.volumes)
        return got

    # ----- PodTopologySpread (DoNotSchedule) ----------------------------------------------
    def pre_predicate(self, task: TaskInfo) -> str | None:
        """PodTopologySpread's PreFilter: count the task's DoNotSchedule constraints' matching
        Pods per domain over the session's Nodes as they are now (allocations of this session
        included). An error text when a constraint's labelSelector does not parse."""
        self._spread.pop(task.uid, None)
        if self.args.pod_topology_spread and (task.pod.get("spec") or {}).get("topologySpreadConstraints"):
            try:
                self._compute_spread(task)
            except SelectorError as e:
                return f"{SPREAD_PLUGIN}: bad topologySpreadConstraints labelSelector: {e}"
        if task.has_claim_volumes:
            self._claims.pop(task.uid, None)
            claims = self._volume_claims(task)
            if isinstance(claims, str):
                return f"plugin {VOLUME_BINDING_PLUGIN} pre-predicates failed {claims}"
        return None

    def _compute_spread(self, task: TaskInfo) -> FilterState | None:
        """Raises: SelectorError (a constraint's labelSelector)."""
        assert self.ssn is not None
        cons = hard_constraints(task.pod)
        if not cons:
            return None
        labels = (task.pod.get("metadata") or {}).get("labels") or {}
        state = self._spread[task.uid] = prefilter(cons, labels, (spread_node(task, n) for n in self.ssn.node_list))
        return state

    def _spread_state(self, task: TaskInfo) -> FilterState | None:
        """The task's PreFilter state: the pre-predicate's, or computed now when the caller
        skipped it; None when the filter does not apply."""
        if (not self.args.pod_topology_spread or self.ssn is None
                or not (task.pod.get("spec") or {}).get("topologySpreadConstraints")):
            return None
        state = self._spread.get(task.uid)
        if state is not None:
            return state
        try:
            return self._compute_spread(task)
        except SelectorError:
            return None  # the pre-predicate reported it

    def predicate(self, task: TaskInfo, node: NodeInfo) -> list[Status]:
        out: list[Status] = []
        max_pods = node.allocatable.get(PODS)
        if node.allocatable.has_scalar(PODS) and max_pods <= node.pod_count():
            out.append(Status(StatusCode.Unschedulable, NODE_POD_NUMBER_EXCEEDED, PLUGIN_NAME))
        st = self.static_statuses(task, node)
        if st:
            return out + st
        return out + self.dynamic_statuses(task, node)

    def _pod_affinity(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        assert self.ssn is not None
        ssn = self.ssn
        aff = (task.pod.get("spec") or {}).get("affinity") or {}

        def pods_in_domain(key: str) -> list[TaskInfo]:
            val = node.labels.get(key)
            if val is None:
                return []
            return [t for n in ssn.node_list if n.labels.get(key) == val for k, t in n.tasks.items() if k not in n.evicted]

        def term_ns(term: Obj, owner: TaskInfo) -> set[str]:
            return set(term.get("namespaces") or [owner.namespace])

        for term in (aff.get("podAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []:
            key = term.get("topologyKey", "")
            ns = term_ns(term, task)
            matches = [
                t
                for t in pods_in_domain(key)
                if t.namespace in ns and match_label_selector((t.pod.get("metadata") or {}).get("labels") or {}, term.get("labelSelector"))
            ]
            if not matches:
                own = match_label_selector((task.pod.get("metadata") or {}).get("labels") or {}, term.get("labelSelector"))
                anywhere = any(
                    t.namespace in ns
                    and match_label_selector((t.pod.get("metadata") or {}).get("labels") or {}, term.get("labelSelector"))
                    for n in ssn.node_list
                    for k, t in n.tasks.items()
                    if k not in n.evicted
                )
                if not (own and not anywhere and key in node.labels):
                    return Status(StatusCode.UnschedulableAndUnresolvable, ERR_POD_AFFINITY, "InterPodAffinity")
        for term in (aff.get("podAntiAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []:
            key = term.get("topologyKey", "")
            ns = term_ns(term, task)
            for t in pods_in_domain(key):
                if t.namespace in ns and match_label_selector((t.pod.get("metadata") or {}).get("labels") or {}, term.get("labelSelector")):
                    return Status(StatusCode.Unschedulable, ERR_POD_ANTI_AFFINITY, "InterPodAffinity")
        labels = (task.pod.get("metadata") or {}).get("labels") or {}
        for n in ssn.node_list:
            for k, t in n.tasks.items():
                if k in n.evicted:
                    continue
                for term in (((t.pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}).get(
                    "requiredDuringSchedulingIgnoredDuringExecution"
                ) or []:
                    key = term.get("topologyKey", "")
                    if (
                        key in n.labels
                        and node.labels.get(key) == n.labels[key]
                        and task.namespace in term_ns(term, t)
                        and match_label_selector(labels, term.get("labelSelector"))
                    ):
                        return Status(StatusCode.Unschedulable, ERR_EXISTING_ANTI_AFFINITY, "InterPodAffinity")
        return None

    # ----- vectorized ---------------------------------------------------------------------
    def batch(self, task: TaskInfo) -> tuple[np.ndarray, Any]:
        """(mask over the session's node list, statuses(i) for a failing node index)."""
        assert self.ssn is not None
        ssn = self.ssn
        arr = ssn.arrays
        arr.sync()
        key = self._keys.get(task.uid)
        if key is None:
            key = self._keys[task.uid] = _static_key(task.pod)
        cached = self._static.get(key)
        if cached is None:
            mask = np.ones(len(ssn.node_list), dtype=bool)
            reasons: dict[int, list[Status]] = {}
            for i, n in enumerate(ssn.node_list):
                st = self.static_statuses(task, n)
                if st:
                    mask[i] = False
                    reasons[i] = st
            cached = (mask, reasons)
            self._static[key] = cached
        smask, sreasons = cached
        pods_ok = pods_room(arr)
        mask = smask & pods_ok
        dynamic = (bool(host_ports(task.pod)) or (self.args.pod_affinity and self.any_pod_affinity)
                   or self._spread_state(task) is not None or self._volume_claims(task) is not None)
        if dynamic:
            for idx in np.flatnonzero(mask):
                if self.dynamic_statuses(task, ssn.node_list[int(idx)]):
                    mask[idx] = False

        def statuses(i: int) -> list[Status]:
            return self.predicate(task, ssn.node_list[i]) if i not in sreasons or not pods_ok[i] else sreasons[i]

        return mask, statuses

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        # static results depend on the Pod's selector/affinity/tolerations (the key) and the Nodes
        self._static = ssn.node_memo.setdefault(("predicates.static", self.args), {})
        self.any_pod_affinity = ssn.any_job_has_pod_affinity() or any(
            ((t.pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity")
            for n in ssn.nodes_with_pod_affinity()
            for t in n.tasks.values()
        )
        ssn.add_pre_predicate_fn(PLUGIN_NAME, self.pre_predicate)
        ssn.add_predicate_fn(PLUGIN_NAME, self.predicate)
        ssn.batch_predicates[PLUGIN_NAME] = self.batch

    def on_session_close(self, ssn: Session) -> None:
        self.ssn = None
        self._static = {}
        self._spread = {}
        self._claims = {}


def pods_room(arr: NodeArrays) -> np.ndarray:
    """Per row of ``arr``: whether the node takes one more Pod (no allocatable ``pods``, or more
    than its Pods). Read-only, kept in ``arr`` (:meth:`NodeArrays.rowwise`)."""
    col = arr.col[PODS]

    def compute(at: np.ndarray | None) -> np.ndarray:
        if at is None:
            return ~(arr.has_dim[:, col] & (arr.allocatable[:, col] <= arr.pod_count))
        return ~(arr.has_dim[at, col] & (arr.allocatable[at, col] <= arr.pod_count[at]))

    return arr.rowwise(("predicates.pods", col), compute)


parse_arguments = parser(PredicatesArgs)


new = PredicatesPlugin
