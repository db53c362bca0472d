"""What the scheduler needs from a Pod and a Node, parsed once per object change.

:class:`PodInfo` holds the Pod's requests, host ports, tolerations and node-selection
requirements; :class:`NodeInfo` holds a Node's allocatable, labels, effective taints and what the
Pods assigned to it use. Both are plain values; the filter and score functions in
:mod:`pumice.scheduler.default.plugins` read them, and the vectorized table in
:mod:`pumice.scheduler.default.vector` keeps the same facts as numpy columns.

Mirrors: kubernetes pkg/scheduler/framework/types.go (PodInfo, NodeInfo) and
staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity (requirement matching).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from pumice.api import Obj
from pumice.api.meta import get_condition
from pumice.api.selectors import LabelSelector, SelectorError, from_node_selector_requirements
from pumice.scheduler.default.resources import (
    PODS,
    node_allocatable,
    pod_host_ports,
    pod_nonzero_requests,
    pod_requests,
)
from pumice.scheduler.default.spread import Spread, SpreadConstraint

TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


class PodSpecError(ValueError):
    """A Pod the scheduler cannot interpret (bad quantity, unknown operator); the message says
    which field."""


@dataclass(frozen=True)
class Requirement:
    """One node selector requirement: ``key``, ``operator`` (In, NotIn, Exists, DoesNotExist, Gt,
    Lt) and ``values``. ``field`` marks a matchFields entry (only ``metadata.name``).

    Matching is :func:`pumice.api.selectors.from_node_selector_requirements`' (the vectorized
    table in :mod:`pumice.scheduler.default.vector` evaluates the same requirements column-wise).

    Raises:
        SelectorError: at construction, when the values do not fit the operator.
    """

    key: str
    operator: str
    values: tuple[str, ...] = ()
    field: bool = False
    _selector: LabelSelector = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_selector", from_node_selector_requirements(
            [{"key": self.key, "operator": self.operator, "values": list(self.values)}]))

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        return self._selector.matches({"metadata.name": node_name} if self.field else labels)


Term = tuple[Requirement, ...]


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Mirrors: k8s.io/api core/v1 toleration.go ToleratesTaint."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def reason(self) -> str:
        """The TaintToleration filter's reason for this taint."""
        return f"node(s) had untolerated taint {{{self.key}: {self.value}}}"


def _requirement(raw: Obj, *, is_field: bool) -> Requirement:
    op = raw.get("operator", "")
    if op not in OPERATORS:
        raise PodSpecError(f"unsupported node selector operator {op!r}, want one of {', '.join(OPERATORS)}")
    try:
        return Requirement(str(raw.get("key", "")), op, tuple(str(v) for v in raw.get("values") or ()), is_field)
    except SelectorError as e:
        raise PodSpecError(f"bad node selector requirement: {e}") from e


def parse_node_selection(spec: Obj) -> tuple[Term, tuple[Term, ...] | None]:
    """``(nodeSelector as In requirements, required affinity terms or None)``.

    Raises:
        PodSpecError: an operator outside In, NotIn, Exists, DoesNotExist, Gt, Lt.
    """
    selector = tuple(Requirement(k, "In", (str(v),)) for k, v in sorted((spec.get("nodeSelector") or {}).items()))
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is None:
        return selector, None
    terms = []
    for t in required.get("nodeSelectorTerms") or []:
        reqs = [_requirement(r, is_field=False) for r in t.get("matchExpressions") or []]
        reqs += [_requirement(r, is_field=True) for r in t.get("matchFields") or []]
        terms.append(tuple(reqs))
    return selector, tuple(terms)


@dataclass(frozen=True)
class PodInfo:
    """Scheduling facts of one Pod.

    Attributes:
        requests: effective requests in integer units, always with ``pods: 1``.
        nonzero: ``(millicores, bytes)`` for LeastAllocated (100m / 200 MiB defaults).
        host_ports: ``(protocol, hostIP, port)``.
        selector: nodeSelector as ``In`` requirements (all must hold).
        affinity_terms: required node affinity terms (any must hold), None when absent.
        tolerations: the Pod's tolerations.
        priority: ``spec.priority`` (0 when unset).
        labels: the Pod's labels (PodTopologySpread counts Pods by them).
        terminating: it has a deletionTimestamp (PodTopologySpread does not count it).
        spread: the soft topology spread constraints it is scored with; the scheduler sets them
            (:mod:`pumice.scheduler.default.spread`), :meth:`from_pod` leaves None.
        spread_filter: its ``DoNotSchedule`` topology spread constraints, which filter Nodes
            (:func:`pumice.scheduler.default.spread.hard_constraints`); the scheduler sets them,
            :meth:`from_pod` leaves none.
        volume_reasons: VolumeBinding's Filter verdicts, Node name -> reasons, for the Nodes it
            refuses (UnschedulableAndUnresolvable); the scheduler sets it for a Pod with claims
            (:mod:`pumice.scheduler.default.volumebinding`), None otherwise.
    """

    uid: str
    namespace: str
    name: str
    requests: dict[str, int]
    nonzero: tuple[int, int]
    host_ports: tuple[tuple[str, str, int], ...] = ()
    node_name: str = ""
    selector: Term = ()
    affinity_terms: tuple[Term, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()
    priority: int = 0
    creation: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    terminating: bool = False
    spread: Spread | None = None
    spread_filter: tuple[SpreadConstraint, ...] = ()
    volume_reasons: Mapping[str, tuple[str, ...]] | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def tolerates(self, taint: Taint) -> bool:
        return any(t.tolerates(taint) for t in self.tolerations)

    def matches_node_selection(self, labels: Mapping[str, str], node_name: str) -> bool:
        """nodeSelector and required node affinity (Mirrors: nodeaffinity.GetRequiredNodeAffinity)."""
        if not all(r.matches(labels, node_name) for r in self.selector):
            return False
        if self.affinity_terms is None:
            return True
        return any(term and all(r.matches(labels, node_name) for r in term) for term in self.affinity_terms)

    @classmethod
    def from_pod(cls, pod: Obj) -> PodInfo:
        """Parse a wire-form Pod.

        Raises:
            PodSpecError: a bad quantity or node selector operator.
        """
        spec = pod.get("spec") or {}
        meta = pod.get("metadata") or {}
        try:
            requests = pod_requests(pod)
            nonzero = pod_nonzero_requests(pod)
        except ValueError as e:
            raise PodSpecError(f"bad resource quantity: {e}") from e
        requests[PODS] = 1
        selector, terms = parse_node_selection(spec)
        tolerations = tuple(
            Toleration(t.get("key") or "", t.get("operator") or "Equal", t.get("value") or "", t.get("effect") or "")
            for t in spec.get("tolerations") or []
        )
        return cls(
            uid=str(meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}"),
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            requests=requests,
            nonzero=nonzero,
            host_ports=tuple(pod_host_ports(pod)),
            node_name=str(spec.get("nodeName") or ""),
            selector=selector,
            affinity_terms=terms,
            tolerations=tolerations,
            priority=int(spec.get("priority") or 0),
            creation=str(meta.get("creationTimestamp") or ""),
            labels=dict(meta.get("labels") or {}),
            terminating=bool(meta.get("deletionTimestamp")),
        )


def node_ready_status(node: Obj) -> str:
    """The Node's Ready condition status ("True", "False", "Unknown"; "Unknown" when absent)."""
    return str((get_condition(node, "Ready") or {}).get("status") or "Unknown")


def effective_taints(node: Obj) -> tuple[Taint, ...]:
    """The Node's taints plus the NoSchedule taint the node lifecycle controller would add for a
    Node that is not Ready (``node.kubernetes.io/not-ready`` or ``.../unreachable``).

    Deviates: upstream relies on the lifecycle controller's TaintNodesByCondition; pumice derives
    the taint here so that "Ready nodes only" holds even without that controller.
    """
    spec = node.get("spec") or {}
    taints = [Taint(t.get("key") or "", t.get("value") or "", t.get("effect") or "") for t in spec.get("taints") or []]
    ready = node_ready_status(node)
    if ready != "True":
        key = TAINT_NOT_READY if ready == "False" else TAINT_UNREACHABLE
        if not any(t.key == key and t.effect == "NoSchedule" for t in taints):
            taints.append(Taint(key, "", "NoSchedule"))
    return tuple(taints)


@dataclass
class NodeInfo:
    """A Node and what its assigned Pods use (the plain-loop view).

    Attributes:
        allocatable: integer units per resource (``pods`` included).
        requested: sum of assigned Pods' requests (``pods`` = number of Pods).
        nonzero_requested: ``[millicores, bytes]`` with the scoring defaults.
        used_ports: ``(protocol, hostIP, port)`` -> number of Pods using it.
    """

    name: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: dict[str, int]
    requested: dict[str, int] = field(default_factory=dict)
    nonzero_requested: list[int] = field(default_factory=lambda: [0, 0])
    used_ports: dict[tuple[str, str, int], int] = field(default_factory=dict)

    @classmethod
    def from_node(cls, node: Obj) -> NodeInfo:
        meta = node.get("metadata") or {}
        return cls(
            name=str(meta.get("name") or ""),
            labels=dict(meta.get("labels") or {}),
            taints=effective_taints(node),
            unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
            allocatable=node_allocatable(node),
        )

    def add_pod(self, pod: PodInfo, sign: int = 1) -> None:
        for k, v in pod.requests.items():
            self.requested[k] = self.requested.get(k, 0) + sign * v
        self.nonzero_requested[0] += sign * pod.nonzero[0]
        self.nonzero_requested[1] += sign * pod.nonzero[1]
        for p in pod.host_ports:
            n = self.used_ports.get(p, 0) + sign
            if n > 0:
                self.used_ports[p] = n
            else:
                self.used_ports.pop(p, None)
