"""HyperNodes as the scheduler sees them: a tree of network domains over the Ready nodes.

Every HyperNode knows its tier (lower = closer network), its parent, its children and its *real
nodes* (the transitive closure of its members down to Nodes). A virtual root,
:data:`CLUSTER_TOP_HYPERNODE`, one tier above the highest real tier, is the parent of every
parentless HyperNode and spans every node, so topology-aware allocation always starts there.

Members resolve as :mod:`pumice.api.volcano.topology` says. A HyperNode that
a second HyperNode claims as a member keeps its first parent (upstream: "already has a parent").

Mirrors: volcano pkg/scheduler/api/hyper_node_info.go (HyperNodesInfo, GetLCAHyperNode,
GetAncestors), framework/session.go (addClusterTopHyperNode, parseHyperNodesTiers,
HyperNodeTierNameMap) and util FindHyperNodeForNode.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pumice.api import Obj
from pumice.api.volcano.topology import member_hypernodes, member_nodes

log = logging.getLogger("pumice.scheduler.volcano")

CLUSTER_TOP_HYPERNODE = "<cluster-top-hypernode>"


@dataclass
class HyperNodeInfo:
    """One HyperNode. ``nodes``: its real node names, in the session's node order."""

    name: str
    tier: int
    tier_name: str = ""
    parent: str = ""
    children: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    members: list[Obj] = field(default_factory=list)


class HyperNodesInfo:
    """The HyperNode tree of one snapshot (virtual root included).

    Attributes:
        infos: name -> :class:`HyperNodeInfo`.
        tiers: the distinct tiers, ascending (the root's included).
        by_tier: tier -> HyperNode names (sorted).
        tier_names: ``spec.tierName`` -> tier.
        node_leaf: node name -> the HyperNode of the lowest tier containing it.
    """

    def __init__(self, infos: dict[str, HyperNodeInfo], node_order: list[str]) -> None:
        self.infos = infos
        self.node_order = node_order
        self.by_tier: dict[int, list[str]] = {}
        for hn in sorted(infos.values(), key=lambda h: h.name):
            self.by_tier.setdefault(hn.tier, []).append(hn.name)
        self.tiers = sorted(self.by_tier)
        self.tier_names = {h.tier_name: h.tier for h in infos.values() if h.tier_name}
        self.node_sets = {h.name: frozenset(h.nodes) for h in infos.values()}
        self.node_leaf: dict[str, str] = {}
        if self.tiers:
            for leaf in self.by_tier[self.tiers[0]]:
                for n in self.infos[leaf].nodes:
                    self.node_leaf.setdefault(n, leaf)

    def __contains__(self, name: object) -> bool:
        return name in self.infos

    def __getitem__(self, name: str) -> HyperNodeInfo:
        return self.infos[name]

    @property
    def root(self) -> HyperNodeInfo:
        return self.infos[CLUSTER_TOP_HYPERNODE]

    @property
    def real(self) -> list[HyperNodeInfo]:
        """The HyperNodes from objects (the virtual root left out), by name."""
        return [h for n, h in sorted(self.infos.items()) if n != CLUSTER_TOP_HYPERNODE]

    def ancestors(self, name: str) -> list[str]:
        """``name`` and its ancestors up to the root (``[]`` for an unknown name)."""
        out: list[str] = []
        seen: set[str] = set()
        cur = name
        while cur and cur in self.infos and cur not in seen:
            seen.add(cur)
            out.append(cur)
            cur = self.infos[cur].parent
        return out

    def lca(self, a: str, b: str) -> str:
        """The lowest common ancestor of ``a`` and ``b``; one empty gives the other; "" when
        they share none."""
        if not a:
            return b
        if not b:
            return a
        up = set(self.ancestors(a))
        for x in self.ancestors(b):
            if x in up:
                return x
        return ""

    def leaf_of(self, node: str) -> str:
        """The lowest-tier HyperNode that contains ``node`` ("" when none)."""
        return self.node_leaf.get(node, "")

    def lowest_containing(self, nodes: Iterable[str]) -> str:
        """The lowest-tier HyperNode whose real nodes include all of ``nodes`` ("" when none)."""
        want = set(nodes)
        if not want:
            return ""
        best = ""
        best_tier = 1 << 30
        for h in self.infos.values():
            if h.tier < best_tier and want <= self.node_sets[h.name]:
                best, best_tier = h.name, h.tier
        return best


def build_hypernodes(objects: Iterable[Obj], node_names: list[str], node_labels: Mapping[str, Mapping[str, str]]) -> HyperNodesInfo:
    """The tree from HyperNode objects over the given (Ready) nodes, virtual root added.

    Errors in one HyperNode (a second parent, a bad pattern) are logged and that member is
    skipped; the rest of the tree is built.
    """
    infos: dict[str, HyperNodeInfo] = {}
    for o in objects:
        md = o.get("metadata") or {}
        spec = o.get("spec") or {}
        try:
            tier = int(spec.get("tier") or 0)
        except (TypeError, ValueError):
            log.error("HyperNode %s: spec.tier %r is not an integer; skipped", md.get("name"), spec.get("tier"))
            continue
        name = str(md.get("name") or "")
        infos[name] = HyperNodeInfo(name, tier, str(spec.get("tierName") or ""), members=list(spec.get("members") or []))
    names = sorted(infos)
    ordered_labels = {n: node_labels.get(n, {}) for n in node_names}
    direct_nodes: dict[str, list[str]] = {}
    for name in names:
        hn = infos[name]
        own: list[str] = []
        for m in hn.members:
            if m.get("type") == "HyperNode":
                for k in member_hypernodes(m, names):
                    if k not in infos or k == name:
                        continue
                    child = infos[k]
                    if child.parent and child.parent != name:
                        log.error("HyperNode %s already has a parent %s; %s cannot also claim it", k, child.parent, name)
                        continue
                    if not child.parent:
                        child.parent = name
                        hn.children.append(k)
            else:
                own.extend(member_nodes(m, ordered_labels))
        direct_nodes[name] = own
    order = {n: i for i, n in enumerate(node_names)}

    def real(name: str, stack: frozenset[str]) -> set[str]:
        if name in stack:
            log.error("HyperNode %s is its own ancestor; the cycle is cut", name)
            return set()
        out = set(direct_nodes.get(name, []))
        for k in infos[name].children:
            out |= real(k, stack | {name})
        return out

    for name in names:
        infos[name].nodes = sorted(real(name, frozenset()), key=order.__getitem__)
    top = max((h.tier for h in infos.values()), default=0) + 1
    root = HyperNodeInfo(CLUSTER_TOP_HYPERNODE, max(top, 1), nodes=list(node_names))
    for name in names:
        if not infos[name].parent:
            infos[name].parent = CLUSTER_TOP_HYPERNODE
            root.children.append(name)
    infos[CLUSTER_TOP_HYPERNODE] = root
    return HyperNodesInfo(infos, list(node_names))
