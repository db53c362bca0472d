"""The scheduling core: Nodes and assigned Pods in memory, and ``schedule(pod)`` -> a Node or a
FitError message. No I/O, no clock.

Two implementations with identical answers (a test checks it on seeded random clusters):

- :class:`LoopCore`: the plain reference, runs :mod:`plugins` Node by Node;
- :class:`pumice.scheduler.default.vector.VectorCore`: the same filters and scores as numpy column
  operations over all Nodes at once (the one the scheduler uses).

Both place Nodes in slots (the lowest free slot first), evaluate Nodes in slot order, and break a
tie between the best-scoring Nodes with a seeded ``random.Random`` choice among them.

Mirrors: kubernetes pkg/scheduler/schedule_one.go (findNodesThatFitPod, prioritizeNodes,
selectHost) and pkg/scheduler/backend/cache (assumed Pods count against their Node at once).
Deviates: every Node is scored (no percentageOfNodesToScore); the tie-break picks uniformly with
one ``randrange`` instead of reservoir sampling.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pumice.api import Obj
from pumice.scheduler.default import plugins
from pumice.scheduler.default.podinfo import NodeInfo, PodInfo
from pumice.scheduler.default.spread import (
    WEIGHT_POD_TOPOLOGY_SPREAD,
    SpreadNode,
    prefilter,
    spread_scores,
)


@dataclass(frozen=True)
class Decision:
    """Outcome of one scheduling attempt: ``node`` when it fits, else ``message`` (the FitError
    text) and ``reasons`` (reason -> number of Nodes)."""

    node: str | None
    message: str = ""
    reasons: tuple[tuple[str, int], ...] = ()


class CoreBase:
    """Slot bookkeeping and Pod-to-Node accounting shared by both cores."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self._slot: dict[str, int] = {}
        self._names: list[str | None] = []
        self._free: list[int] = []
        self._pods: dict[str, tuple[str, PodInfo]] = {}
        self._node_pods: dict[str, dict[str, PodInfo]] = {}

    # -- slots --------------------------------------------------------------------------------
    def _take_slot(self, name: str) -> tuple[int, bool]:
        if name in self._slot:
            return self._slot[name], False
        if self._free:
            s = heapq.heappop(self._free)
            self._names[s] = name
        else:
            s = len(self._names)
            self._names.append(name)
        self._slot[name] = s
        return s, True

    def _release_slot(self, name: str) -> int | None:
        s = self._slot.pop(name, None)
        if s is not None:
            self._names[s] = None
            heapq.heappush(self._free, s)
        return s

    @property
    def node_names(self) -> list[str]:
        return [n for n in self._names if n is not None]

    def has_node(self, name: str) -> bool:
        return name in self._slot

    # -- Pods ---------------------------------------------------------------------------------
    def add_pod(self, pod: PodInfo, node: str) -> None:
        """Count ``pod`` against ``node`` (an assumed or bound Pod). Re-adding moves it."""
        if pod.uid in self._pods:
            self.remove_pod(pod.uid)
        self._pods[pod.uid] = (node, pod)
        self._node_pods.setdefault(node, {})[pod.uid] = pod
        if node in self._slot:
            self._account(self._slot[node], pod, 1)

    def remove_pod(self, uid: str) -> None:
        entry = self._pods.pop(uid, None)
        if entry is None:
            return
        node, pod = entry
        self._node_pods.get(node, {}).pop(uid, None)
        if node in self._slot:
            self._account(self._slot[node], pod, -1)

    def pod_info(self, uid: str) -> PodInfo | None:
        """The counted Pod's facts (None when it is not counted)."""
        entry = self._pods.get(uid)
        return entry[1] if entry else None

    def pod_node(self, uid: str) -> str | None:
        entry = self._pods.get(uid)
        return entry[0] if entry else None

    # -- Nodes --------------------------------------------------------------------------------
    def set_node(self, node: Obj) -> None:
        """Add or replace a Node (its Pods keep counting against it)."""
        name = str(node["metadata"]["name"])
        slot, _ = self._take_slot(name)
        self._store_node(slot, node)
        for pod in self._node_pods.get(name, {}).values():
            self._account(slot, pod, 1)

    def remove_node(self, name: str) -> None:
        slot = self._release_slot(name)
        if slot is not None:
            self._clear_node(slot)

    # -- implementation hooks ----------------------------------------------------------------
    def _store_node(self, slot: int, node: Obj) -> None:
        raise NotImplementedError

    def _clear_node(self, slot: int) -> None:
        raise NotImplementedError

    def _account(self, slot: int, pod: PodInfo, sign: int) -> None:
        raise NotImplementedError

    def schedule(self, pod: PodInfo) -> Decision:
        raise NotImplementedError

    def _pick(self, candidates: list[int]) -> str:
        slot = candidates[self.rng.randrange(len(candidates))] if len(candidates) > 1 else candidates[0]
        name = self._names[slot]
        assert name is not None
        return name


class LoopCore(CoreBase):
    """The plain-loop reference core (benchmark baseline)."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self._infos: list[NodeInfo | None] = []

    def _store_node(self, slot: int, node: Obj) -> None:
        info = NodeInfo.from_node(node)
        while len(self._infos) <= slot:
            self._infos.append(None)
        self._infos[slot] = info

    def _clear_node(self, slot: int) -> None:
        self._infos[slot] = None

    def _account(self, slot: int, pod: PodInfo, sign: int) -> None:
        info = self._infos[slot]
        if info is not None:
            info.add_pod(pod, sign)

    def _spread_nodes(self, pod: PodInfo) -> dict[int, SpreadNode]:
        """Every Node (by slot) as PodTopologySpread sees it for ``pod``."""
        nodes: dict[int, SpreadNode] = {}
        for slot, info in enumerate(self._infos):
            if info is None:
                continue
            nodes[slot] = SpreadNode(
                info.name, info.labels, pod.matches_node_selection(info.labels, info.name),
                plugins.first_untolerated_taint(pod, info.taints) is None,
                [p.labels for p in self._node_pods.get(info.name, {}).values()
                 if p.namespace == pod.namespace and not p.terminating])
        return nodes

    def _spread_scores(self, pod: PodInfo, feasible: Sequence[int]) -> list[int]:
        """PodTopologySpread's normalized scores of the ``feasible`` slots (in their order) for a
        Pod with :attr:`PodInfo.spread`: the reference :func:`spread_scores` over every Node."""
        assert pod.spread is not None
        nodes = self._spread_nodes(pod)
        return spread_scores(pod.spread, [nodes[s] for s in feasible], nodes.values())

    def node_info(self, name: str) -> NodeInfo | None:
        s = self._slot.get(name)
        return None if s is None else self._infos[s]

    def schedule(self, pod: PodInfo) -> Decision:
        feasible: list[tuple[int, NodeInfo]] = []
        reasons: Counter[str] = Counter()
        unresolvable = 0
        total = 0
        spread_state = (prefilter(pod.spread_filter, pod.labels, self._spread_nodes(pod).values())
                        if pod.spread_filter else None)
        for slot, info in enumerate(self._infos):
            if info is None:
                continue
            total += 1
            failed = plugins.run_filters(pod, info)
            if not failed and pod.volume_reasons is not None:
                failed = list(pod.volume_reasons.get(info.name, ()))
            if not failed and spread_state is not None:
                why = spread_state.reason(info.labels)
                failed = [why] if why else []
            if failed:
                reasons.update(failed)
                if not plugins.is_resolvable(failed):
                    unresolvable += 1
            else:
                feasible.append((slot, info))
        if not feasible:
            msg = plugins.fit_error_message(total, reasons, unresolvable)
            return Decision(None, msg, tuple(sorted(reasons.items())))
        taint_scores = plugins.normalize_reverse(
            [plugins.intolerable_prefer_no_schedule(pod, info) for _, info in feasible])
        spread = (self._spread_scores(pod, [slot for slot, _ in feasible]) if pod.spread is not None
                  else [0] * len(feasible))
        best = -1
        candidates: list[int] = []
        for (slot, info), ts, ss in zip(feasible, taint_scores, spread, strict=True):
            score = (plugins.WEIGHT_LEAST_ALLOCATED * plugins.least_allocated(pod, info)
                     + plugins.WEIGHT_BALANCED_ALLOCATION * plugins.balanced_allocation(pod, info)
                     + plugins.WEIGHT_TAINT_TOLERATION * ts
                     + WEIGHT_POD_TOPOLOGY_SPREAD * ss)
            if score > best:
                best, candidates = score, [slot]
            elif score == best:
                candidates.append(slot)
        return Decision(self._pick(candidates))
