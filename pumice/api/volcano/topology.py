"""HyperNode membership, shared by the scheduler (its tree) and the controllers (``nodeCount``,
discovery): which Nodes and HyperNodes a ``spec.members[]`` entry names.

``type: Node``: ``exactMatch`` (a node name), ``regexMatch`` (a pattern searched in node names,
as Go's ``regexp.MatchString``), ``labelMatch`` (a label selector over node labels);
``type: HyperNode``: ``exactMatch`` or ``regexMatch`` over HyperNode names.

Mirrors: volcano pkg/scheduler/api/hyper_node_info.go and pkg/controllers/hypernode/utils
(member resolution).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from pumice.api import Obj
from pumice.api.selectors import SelectorError, from_label_selector


def _regex(member: Obj) -> re.Pattern[str] | None:
    pattern = str((((member.get("selector") or {}).get("regexMatch")) or {}).get("pattern") or "")
    try:
        return re.compile(pattern)
    except re.error:
        return None


def member_nodes(member: Obj, node_labels: Mapping[str, Mapping[str, str]]) -> list[str]:
    """The node names (in ``node_labels`` order) a ``type: Node`` member selects; [] for a bad
    pattern or selector, or another member type."""
    if member.get("type", "Node") != "Node":
        return []
    sel = member.get("selector") or {}
    if sel.get("exactMatch") is not None:
        n = str((sel.get("exactMatch") or {}).get("name") or "")
        return [n] if n in node_labels else []
    if sel.get("regexMatch") is not None:
        rx = _regex(member)
        return [n for n in node_labels if rx.search(n)] if rx is not None else []
    if sel.get("labelMatch") is not None:
        try:
            ls = from_label_selector(sel.get("labelMatch"))
        except SelectorError:
            return []
        return [n for n, lab in node_labels.items() if ls.matches(lab)]
    return []


def member_hypernodes(member: Obj, names: Iterable[str]) -> list[str]:
    """The HyperNode names a ``type: HyperNode`` member selects (exact or regex)."""
    if member.get("type") != "HyperNode":
        return []
    sel = member.get("selector") or {}
    if sel.get("exactMatch") is not None:
        want = str((sel.get("exactMatch") or {}).get("name") or "")
        return [want] if want in set(names) else []
    if sel.get("regexMatch") is not None:
        rx = _regex(member)
        return [n for n in names if rx.search(n)] if rx is not None else []
    return []


def real_node_count(hypernodes: Mapping[str, Obj], node_labels: Mapping[str, Mapping[str, str]]) -> dict[str, int]:
    """HyperNode name -> number of distinct Nodes it spans through its members, recursively
    (``status.nodeCount``); a cycle is cut."""
    names = sorted(hypernodes)
    memo: dict[str, set[str]] = {}

    def nodes_of(name: str, stack: frozenset[str]) -> set[str]:
        if name in memo:
            return memo[name]
        if name in stack:
            return set()
        out: set[str] = set()
        for m in ((hypernodes[name].get("spec") or {}).get("members") or []):
            out.update(member_nodes(m, node_labels))
            for k in member_hypernodes(m, names):
                if k != name:
                    out |= nodes_of(k, stack | {name})
        memo[name] = out
        return out

    return {n: len(nodes_of(n, frozenset())) for n in names}
