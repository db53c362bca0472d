"""PodTopologySpread scoring for the default scheduler, with Kubernetes' system-default constraints.

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

Pure functions on plain values; the scheduler gathers the Services and controllers from its
informers, and both scheduling cores call :func:`spread_scores`.

Mirrors: kubernetes v1.32 pkg/scheduler/framework/plugins/podtopologyspread (plugin.go
systemDefaultConstraints; common.go buildDefaultConstraints, filterTopologySpreadConstraints,
matchNodeInclusionPolicies, countPodsMatchSelector; scoring.go initPreScoreState, PreScore,
Score, NormalizeScore) and plugins/helper/spread.go (DefaultSelector, GetPodServices).
Deviates: the ``DoNotSchedule`` filter half of the plugin is not implemented (a Pod's hard
constraints are not enforced); nodeInclusionPolicies and matchLabelKeys are always on (their
feature gates are on by default in v1.32).
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


def soft_constraints(pod: Obj, default: LabelSelector | None) -> Spread | None:
    """The Pod's soft constraints: its own ScheduleAnyway ones when it has any constraint,
    else the system defaults with selector ``default`` (None or empty: none). None when there
    is nothing to score.

    Raises:
        SelectorError: a constraint's labelSelector does not parse.
    """
    own = (pod.get("spec") or {}).get("topologySpreadConstraints") or []
    if own:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        out = []
        for c in own:
            if c.get("whenUnsatisfiable") != "ScheduleAnyway":
                continue
            sel = from_label_selector(c.get("labelSelector"))
            extra = {k: labels[k] for k in c.get("matchLabelKeys") or [] if k in labels}
            if extra:
                # a nil labelSelector with matchLabelKeys selects by those labels alone
                sel = LabelSelector(from_set(extra).requirements + sel.requirements)
            out.append(SpreadConstraint(int(c.get("maxSkew") or 1), str(c.get("topologyKey") or ""), sel,
                                        str(c.get("nodeAffinityPolicy") or "Honor"),
                                        str(c.get("nodeTaintsPolicy") or "Ignore")))
        return Spread(tuple(out)) if out else None
    if default is None or default.empty:
        return None
    return Spread(tuple(SpreadConstraint(skew, key, default) for key, skew in SYSTEM_DEFAULT_CONSTRAINTS),
                  system_defaulted=True)


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
            if (c.node_affinity_policy == "Honor" and not n.affinity_ok) or (
                    c.node_taints_policy == "Honor" and not n.taints_ok):
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
