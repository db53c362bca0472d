"""PodTopologySpread for the default scheduler: the DoNotSchedule filter, and scoring with
Kubernetes' system-default constraints.

A Pod's *soft* constraints are its own ``topologySpreadConstraints`` with ``whenUnsatisfiable:
ScheduleAnyway`` (``labelSelector`` plus the Pod's values of ``matchLabelKeys``). A Pod with no
constraints of its own gets the system defaults, ``kubernetes.io/hostname`` maxSkew 3 and
``topology.kubernetes.io/zone`` maxSkew 5, both ScheduleAnyway, whose selector is built from the
Services that select the Pod and the ReplicationController, ReplicaSet or StatefulSet that controls
it (:func:`default_selector`); with no such object the Pod gets no constraint at all.

Scoring (:func:`spread_scores`): every feasible Node gets, per constraint, the number of matching
Pods in its topology domain times ``log(domains + 2)`` plus ``maxSkew - 1``; the sum, rounded, is
normalized as ``100 * (max + min - s) / max`` over the feasible Nodes, so the emptiest domain
scores highest. The default profile weighs the plugin 2 (:data:`WEIGHT_POD_TOPOLOGY_SPREAD`).

Filtering (:func:`prefilter`, :meth:`FilterState.reason`): a Pod's ``whenUnsatisfiable:
DoNotSchedule`` constraints (:func:`hard_constraints`; the system defaults never filter). Before
the Nodes are filtered, the matching Pods are counted per topology domain over every Node that
has all the constraints' topology keys and that the constraint's nodeAffinityPolicy (default
Honor) and nodeTaintsPolicy (default Ignore) admit; the global minimum is the least-loaded
domain's count, or 0 while fewer than ``minDomains`` (default 1) domains are eligible. A Node
passes when it has every topology key (else "node(s) didn't match pod topology spread
constraints (missing required label)", unresolvable) and, per constraint, ``matching Pods in its
domain + (1 if the selector matches the Pod itself) - global minimum <= maxSkew`` (else "node(s)
didn't match pod topology spread constraints"). The filter runs after NodeResourcesFit.

Pure functions on plain values; the scheduler gathers the Services and controllers from its
informers, and both scheduling cores call :func:`spread_scores` and :func:`prefilter` (the
vectorized core computes the same counts with numpy).

Mirrors: kubernetes v1.32 pkg/scheduler/framework/plugins/podtopologyspread (plugin.go
systemDefaultConstraints; common.go buildDefaultConstraints, filterTopologySpreadConstraints,
matchNodeInclusionPolicies, countPodsMatchSelector; filtering.go calPreFilterState,
criticalPaths, minMatchNum, Filter; scoring.go initPreScoreState, PreScore, Score,
NormalizeScore) and plugins/helper/spread.go (DefaultSelector, GetPodServices).
Deviates: nodeInclusionPolicies, matchLabelKeys and minDomains are always on (their feature
gates are on by default in v1.32); the PreFilter extensions AddPod/RemovePod are not implemented
because pumice's default scheduler does not preempt (the state is computed afresh per cycle);
nodeTaintsPolicy Honor reads the Node's effective taints (its own plus the not-ready taint the
node lifecycle controller would add, see :func:`pumice.scheduler.default.podinfo.effective_taints`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pumice.api import Obj
from pumice.api.selectors import LabelSelector, SelectorError, from_label_selector, from_set

HOSTNAME_KEY = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"

SYSTEM_DEFAULT_CONSTRAINTS = ((HOSTNAME_KEY, 3), (ZONE_KEY, 5))
"""(topologyKey, maxSkew) of kube-scheduler's system defaulting, both ``ScheduleAnyway``."""

WEIGHT_POD_TOPOLOGY_SPREAD = 2
"""The plugin's weight in kube-scheduler's default profile."""

MAX_NODE_SCORE = 100

_RC = ("v1", "ReplicationController")
_SELECTOR_OWNERS = {("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")}


@dataclass(frozen=True)
class SpreadConstraint:
    """One soft constraint, its selector parsed; policies ``Honor`` or ``Ignore``."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"
    min_domains: int = 1

    def includes(self, node: SpreadNode) -> bool:
        """Whether Pods on ``node`` count for this constraint by its nodeAffinityPolicy and
        nodeTaintsPolicy (``Honor``: the incoming Pod's required node affinity, resp. its
        tolerations of NoSchedule/NoExecute taints, must admit the Node)."""
        return not ((self.node_affinity_policy == "Honor" and not node.affinity_ok)
                    or (self.node_taints_policy == "Honor" and not node.taints_ok))


@dataclass(frozen=True)
class Spread:
    """The constraints a Pod is scored with. ``system_defaulted``: they are the system defaults
    (then a Node lacking the zone label still gets its hostname score)."""

    constraints: tuple[SpreadConstraint, ...]
    system_defaulted: bool = False


@dataclass(frozen=True)
class SpreadNode:
    """What scoring reads from one Node: labels, whether the Pod may go there by its required
    node affinity and by its tolerations of NoSchedule/NoExecute taints, and the labels of the
    Pods counted there (non-terminating, of the Pod's namespace)."""

    name: str
    labels: Mapping[str, str]
    affinity_ok: bool
    taints_ok: bool
    pod_labels: Sequence[Mapping[str, str]]


def controller_ref(pod: Obj) -> Mapping[str, str] | None:
    """The Pod's ownerReference with ``controller: true`` (None when it has none)."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def selects_by_controller(ref: Mapping[str, str] | None) -> bool:
    """True when the controller is a kind whose selector defaulting reads (RC, RS, StatefulSet)."""
    if ref is None:
        return False
    key = (str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
    return key == _RC or key in _SELECTOR_OWNERS


def default_selector(pod: Obj, services: Iterable[Obj], controller: Obj | None) -> LabelSelector:
    """The selector of the system-default constraints: the union of the ``spec.selector`` of every
    Service in ``services`` that selects the Pod (a Service without a selector selects nothing),
    then the selector of ``controller``, the ReplicationController, ReplicaSet or StatefulSet named
    by the Pod's controller reference (pass None when there is none or it is not found). An
    :attr:`~pumice.api.selectors.LabelSelector.empty` result means no default constraints.
    """
    labels = (pod.get("metadata") or {}).get("labels") or {}
    merged: dict[str, str] = {}
    for svc in services:
        sel = (svc.get("spec") or {}).get("selector")
        if sel is None:
            continue
        if from_set(sel).matches(labels):
            merged.update({str(k): str(v) for k, v in sel.items()})
    selector = from_set(merged)
    ref = controller_ref(pod)
    if controller is None or ref is None or not selects_by_controller(ref):
        return selector
    spec = controller.get("spec") or {}
    if (str(ref.get("apiVersion")), str(ref.get("kind"))) == _RC:
        merged.update({str(k): str(v) for k, v in (spec.get("selector") or {}).items()})
        return from_set(merged)
    if spec.get("selector") is None:
        return selector
    try:
        other = from_label_selector(spec.get("selector"))
    except SelectorError:
        return selector
    return LabelSelector(selector.requirements + other.requirements)


def _own_constraints(pod: Obj, action: str) -> tuple[SpreadConstraint, ...]:
    """The Pod's own constraints whose ``whenUnsatisfiable`` is ``action``, selectors parsed and
    extended by the Pod's values of ``matchLabelKeys``; ``minDomains`` defaults to 1.

    Raises:
        SelectorError: a constraint's labelSelector does not parse.
    """
    labels = (pod.get("metadata") or {}).get("labels") or {}
    out = []
    for c in (pod.get("spec") or {}).get("topologySpreadConstraints") or []:
        if c.get("whenUnsatisfiable") != action:
            continue
        sel = from_label_selector(c.get("labelSelector"))
        extra = {k: labels[k] for k in c.get("matchLabelKeys") or [] if k in labels}
        if extra:
            # a nil labelSelector with matchLabelKeys selects by those labels alone
            sel = LabelSelector(from_set(extra).requirements + sel.requirements)
        min_domains = c.get("minDomains")
        out.append(SpreadConstraint(int(c.get("maxSkew") or 1), str(c.get("topologyKey") or ""), sel,
                                    str(c.get("nodeAffinityPolicy") or "Honor"),
                                    str(c.get("nodeTaintsPolicy") or "Ignore"),
                                    1 if min_domains is None else int(min_domains)))
    return tuple(out)


def soft_constraints(pod: Obj, default: LabelSelector | None) -> Spread | None:
    """The Pod's soft constraints: its own ScheduleAnyway ones when it has any constraint,
    else the system defaults with selector ``default`` (None or empty: none). None when there
    is nothing to score.

    Raises:
        SelectorError: a constraint's labelSelector does not parse.
    """
    if (pod.get("spec") or {}).get("topologySpreadConstraints"):
        own = _own_constraints(pod, "ScheduleAnyway")
        return Spread(own) if own else None
    if default is None or default.empty:
        return None
    return Spread(tuple(SpreadConstraint(skew, key, default) for key, skew in SYSTEM_DEFAULT_CONSTRAINTS),
                  system_defaulted=True)


def hard_constraints(pod: Obj) -> tuple[SpreadConstraint, ...]:
    """The Pod's ``DoNotSchedule`` constraints, which :func:`prefilter` and
    :meth:`FilterState.reason` enforce (empty: the filter passes every Node). The system defaults
    are all ScheduleAnyway, so a Pod without constraints of its own has none.

    Raises:
        SelectorError: a constraint's labelSelector does not parse.
    """
    return _own_constraints(pod, "DoNotSchedule")


def _count(node: SpreadNode, selector: LabelSelector) -> int:
    return sum(1 for labels in node.pod_labels if selector.matches(labels))


def _round_half_away(x: float) -> int:
    """Go's math.Round."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def spread_scores(spread: Spread, feasible: Sequence[SpreadNode], all_nodes: Iterable[SpreadNode]) -> list[int]:
    """Normalized 0..100 PodTopologySpread scores of ``feasible`` (in its order), counting
    matching Pods over ``all_nodes`` (every Node the scheduler knows). A feasible Node that lacks
    a topology key of the Pod's own constraints scores 0."""
    cons = spread.constraints
    require_all = not spread.system_defaulted

    def has_keys(labels: Mapping[str, str]) -> bool:
        return all(c.topology_key in labels for c in cons)

    ignored: set[str] = set()
    counts: list[dict[str, int]] = [{} for _ in cons]
    for n in feasible:
        if require_all and not has_keys(n.labels):
            ignored.add(n.name)
            continue
        for i, c in enumerate(cons):
            if c.topology_key != HOSTNAME_KEY:
                counts[i].setdefault(n.labels.get(c.topology_key, ""), 0)
    weights = [math.log((len(feasible) - len(ignored) if c.topology_key == HOSTNAME_KEY else len(counts[i])) + 2)
               for i, c in enumerate(cons)]
    for n in all_nodes:
        if require_all and not has_keys(n.labels):
            continue
        for i, c in enumerate(cons):
            if not c.includes(n):
                continue
            value = n.labels.get(c.topology_key, "")
            if value in counts[i]:
                counts[i][value] += _count(n, c.selector)
    raw: list[int | None] = []
    for n in feasible:
        if n.name in ignored:
            raw.append(None)
            continue
        s = 0.0
        for i, c in enumerate(cons):
            if c.topology_key not in n.labels:
                continue
            cnt = (_count(n, c.selector) if c.topology_key == HOSTNAME_KEY
                   else counts[i][n.labels[c.topology_key]])
            s += cnt * weights[i] + (c.max_skew - 1)
        raw.append(_round_half_away(s))
    valid = [r for r in raw if r is not None]
    lo = min(valid, default=0)
    hi = max([0, *valid])
    return [0 if r is None else MAX_NODE_SCORE if hi == 0 else MAX_NODE_SCORE * (hi + lo - r) // hi for r in raw]


# ----- the DoNotSchedule filter -------------------------------------------------------------

REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
"""Filter reason of a Node whose domain would exceed a constraint's maxSkew (Unschedulable:
preemption could help)."""
REASON_NODE_LABEL_NOT_MATCH = REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
"""Filter reason of a Node lacking a constraint's topology key (UnschedulableAndUnresolvable)."""

NO_DOMAIN_MIN = 2**31 - 1
"""The global minimum of a constraint no Node is eligible for (Go's math.MaxInt32)."""


class CriticalPaths:
    """The two domains with the fewest matching Pods of one constraint: ``values[k]`` holds
    ``counts[k]`` matching Pods, and ``counts[0]`` is the minimum after building from scratch.
    Both start empty with count :data:`NO_DOMAIN_MIN`."""

    __slots__ = ("counts", "values")

    def __init__(self) -> None:
        self.values = ["", ""]
        self.counts = [NO_DOMAIN_MIN, NO_DOMAIN_MIN]

    def update(self, value: str, count: int) -> None:
        """Record that domain ``value`` now has ``count`` matching Pods."""
        if value in self.values:
            self.counts[self.values.index(value)] = count
            if self.counts[0] > self.counts[1]:
                self.values.reverse()
                self.counts.reverse()
        elif count < self.counts[0]:
            self.values = [value, self.values[0]]
            self.counts = [count, self.counts[0]]
        elif count < self.counts[1]:
            self.values[1], self.counts[1] = value, count

    def pairs(self) -> list[tuple[str, int]]:
        """``[(value, count), (value, count)]``, least loaded first."""
        return list(zip(self.values, self.counts, strict=True))

    @property
    def min(self) -> int:
        return self.counts[0]


@dataclass
class FilterState:
    """PodTopologySpread's PreFilter state for one Pod (see :func:`prefilter`).

    Attributes:
        constraints: the Pod's DoNotSchedule constraints.
        self_match: per constraint, whether its selector matches the Pod's own labels.
        match_num: per constraint, domain value -> matching Pods in that domain, over the Nodes
            eligible for it (every eligible domain is present, with 0 when empty).
        critical: per constraint, the two least-loaded domains.
    """

    constraints: tuple[SpreadConstraint, ...]
    self_match: tuple[bool, ...]
    match_num: list[dict[str, int]]
    critical: list[CriticalPaths]

    def min_match(self, i: int) -> int:
        """The global minimum of constraint ``i``: 0 while fewer than minDomains domains are
        eligible, else the least-loaded domain's count."""
        if len(self.match_num[i]) < self.constraints[i].min_domains:
            return 0
        return self.critical[i].min

    def reason(self, labels: Mapping[str, str]) -> str | None:
        """The filter's verdict for a Node with ``labels`` (None: it fits). Constraints are
        checked in order: a missing topology key answers :data:`REASON_NODE_LABEL_NOT_MATCH`,
        ``matching Pods in the Node's domain + self_match - global minimum > maxSkew`` answers
        :data:`REASON_CONSTRAINTS_NOT_MATCH`."""
        for i, c in enumerate(self.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return REASON_NODE_LABEL_NOT_MATCH
            skew = self.match_num[i].get(value, 0) + int(self.self_match[i]) - self.min_match(i)
            if skew > c.max_skew:
                return REASON_CONSTRAINTS_NOT_MATCH
        return None


def prefilter(constraints: Sequence[SpreadConstraint], pod_labels: Mapping[str, str],
              all_nodes: Iterable[SpreadNode]) -> FilterState:
    """Count, per constraint, the Pods its selector matches in every topology domain, over every
    Node the scheduler knows that carries all the constraints' topology keys and that the
    constraint's node inclusion policies admit (:meth:`SpreadConstraint.includes`).
    ``all_nodes[].pod_labels`` are the counted Pods there (the incoming Pod's namespace, not
    terminating)."""
    cons = tuple(constraints)
    match_num: list[dict[str, int]] = [{} for _ in cons]
    for n in all_nodes:
        if not all(c.topology_key in n.labels for c in cons):
            continue
        for i, c in enumerate(cons):
            if not c.includes(n):
                continue
            value = n.labels[c.topology_key]
            match_num[i][value] = match_num[i].get(value, 0) + _count(n, c.selector)
    critical = []
    for counts in match_num:
        paths = CriticalPaths()
        for value, num in counts.items():
            paths.update(value, num)
        critical.append(paths)
    return FilterState(cons, tuple(c.selector.matches(pod_labels) for c in cons), match_num, critical)
