"""Column view of every node's accounting, for vectorized predicates and scores.

Rows follow the session's node list; columns are resource dimensions (cpu millicores, memory
bytes, pods, then scalars). Rows are refreshed lazily: a NodeInfo change marks its row dirty.
Row-wise results (a value per row computed from that row alone, e.g. a resource fit or a
resource score for one request) are kept across tasks and sessions and brought up to date only
for the rows written since (:meth:`NodeArrays.rowwise`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.resource import CPU, MEMORY, MIN_RESOURCE, PODS, Resource


class NodeArrays:
    """``idle``, ``future_idle``, ``used``, ``allocatable`` as (nodes x dims) float arrays,
    ``pod_count`` per node and the Kubernetes node view ``kube_requested`` / ``kube_nonzero``
    as (nodes x 2: cpu, memory)."""

    def __init__(self, nodes: Sequence[NodeInfo], extra_dims: Iterable[str] = ()) -> None:
        dims = [CPU, MEMORY, PODS]
        for n in nodes:
            for k in n.allocatable.scalars:
                if k not in dims:
                    dims.append(k)
        self.node_dims = list(dims)
        dims = _with_extra(dims, extra_dims)
        self.dims = dims
        self.col = {d: i for i, d in enumerate(dims)}
        self.nodes = list(nodes)
        rows, cols = len(self.nodes), len(dims)
        # column-major: a resource column over all nodes is contiguous for the per-column tests
        self.idle = np.zeros((rows, cols), order="F")
        self.future_idle = np.zeros((rows, cols), order="F")
        self.used = np.zeros((rows, cols), order="F")
        self.allocatable = np.zeros((rows, cols), order="F")
        self.has_dim = np.zeros((rows, cols), dtype=bool, order="F")
        self.all_rows = np.arange(rows)
        self.pod_count = np.zeros(rows)
        # the Kubernetes node view nodeorder scores (see NodeInfo.kube_requested/kube_nonzero)
        self.kube_requested = np.zeros((rows, 2))
        self.kube_nonzero = np.zeros((rows, 2))
        self.prefer_no_schedule = np.array(
            [any(t.get("effect") == "PreferNoSchedule" for t in n.taints) for n in self.nodes], dtype=bool
        )
        self.any_prefer_no_schedule = bool(self.prefer_no_schedule.any())
        """Some node has a PreferNoSchedule taint (fixed: :meth:`reuse` keeps arrays only over
        Nodes with the same taints)."""
        self._dirty: set[int] = set()
        self._written: list[int] = []
        """The rows :meth:`_refresh` wrote, in order (the log :meth:`rowwise` catches up from);
        ``_written[0]`` is entry number ``_written_base`` of the whole log."""
        self._written_base = 0
        self._rowwise: dict[Hashable, tuple[np.ndarray, int, dict[bytes, Any]]] = {}
        """key -> (values over every row, the log position they are up to date with, value by
        row content)."""
        self._fixed: list[bytes] = [b""] * rows
        """Per row: the bytes of what :meth:`_set_row` writes (allocatable, has_dim) and its
        PreferNoSchedule flag."""
        self._content: list[bytes] = [b""] * rows
        """Per row: the bytes of everything these arrays hold for it (see :meth:`rowwise`)."""
        for i, node in enumerate(self.nodes):
            self._set_row(i, node)
        self.alloc_positive = bool((self.allocatable[:, 0] > 0).all()) and bool((self.allocatable[:, 1] > 0).all())
        """Every node has some allocatable CPU and memory (fixed: :meth:`reuse` keeps arrays only
        over Nodes with the same allocatable)."""
        self.generation = -1
        """The live cache's snapshot generation these arrays were last brought up to date for."""

    def _set_row(self, i: int, node: NodeInfo, fixed_kept: bool = False) -> None:
        """Write row ``i`` from ``node``. ``fixed_kept``: the row's allocatable, dimensions and
        PreferNoSchedule flag are those of ``node`` already (its last NodeInfo had the very same
        allocatable Resource and equal taints), so only what moves is written."""
        node.index = i
        if fixed_kept:
            self._refresh(i)
            node.on_change = self._mark
            return
        self.allocatable[i] = self._vec(node.allocatable)
        self.has_dim[i, :2] = True
        for k in node.allocatable.scalars:
            self.has_dim[i, self.col[k]] = True
        self._fixed[i] = b"".join((self.allocatable[i].tobytes(), self.has_dim[i].tobytes(),
                                   self.prefer_no_schedule[i:i + 1].tobytes()))
        self._refresh(i)
        node.on_change = self._mark

    @classmethod
    def reuse(cls, prev: NodeArrays | None, nodes: Sequence[NodeInfo], extra_dims: Iterable[str] = (),
              candidates: Iterable[int] | None = None) -> NodeArrays:
        """The arrays ``NodeArrays(nodes, extra_dims)`` would build, made by bringing ``prev`` (the
        previous session's, over the same Nodes) up to date: rows whose NodeInfo is the same object
        as before are kept, the others are rebuilt. Builds afresh when ``prev`` is None or does
        not fit (other Node names, another column set, or a replaced Node with another
        allocatable or taints). The result is equal to a fresh build either way; the cost is
        O(Nodes replaced) instead of O(Nodes). ``candidates``: the rows that may hold another
        NodeInfo than ``prev`` has (e.g. the live cache's Nodes changed since the last session);
        None: every row is looked at."""
        if prev is None or len(prev.nodes) != len(nodes) or _with_extra(prev.node_dims, extra_dims) != prev.dims:
            return cls(nodes, extra_dims)
        if candidates is None:
            replaced = [i for i, (old, new) in enumerate(zip(prev.nodes, nodes, strict=True)) if old is not new]
        else:
            replaced = sorted(i for i in candidates if prev.nodes[i] is not nodes[i])
        olds = {i: prev.nodes[i] for i in replaced}
        for i in replaced:
            old, new = olds[i], nodes[i]
            if old.name != new.name or not _same(old.allocatable, new.allocatable) or old.taints != new.taints:
                return cls(nodes, extra_dims)
        if candidates is None:
            prev.nodes = list(nodes)
        else:  # every other row holds the same NodeInfo already: only the replaced ones change
            for i in replaced:
                prev.nodes[i] = nodes[i]
        prev._dirty.clear()
        for i in replaced:
            prev._set_row(i, nodes[i], fixed_kept=olds[i].allocatable is nodes[i].allocatable)
        return prev

    def _vec(self, r: Resource) -> np.ndarray:
        v = np.zeros(len(self.dims))
        v[0] = r.milli_cpu
        v[1] = r.memory
        for k, x in r.scalars.items():
            c = self.col.get(k)
            if c is not None:
                v[c] = x
        return v

    def _mark(self, node: NodeInfo) -> None:
        self._dirty.add(node.index)

    def _refresh(self, i: int) -> None:
        node = self.nodes[i]
        idle, future_idle, used = self._vec(node.idle), self._vec(node.future_idle()), self._vec(node.used)
        self.idle[i] = idle
        self.future_idle[i] = future_idle
        self.used[i] = used
        self.pod_count[i] = node.pod_count()
        self.kube_requested[i] = node.kube_requested
        self.kube_nonzero[i] = node.kube_nonzero
        self._content[i] = b"".join((self._fixed[i], idle.tobytes(), future_idle.tobytes(), used.tobytes(),
                                     self.pod_count[i:i + 1].tobytes(), self.kube_requested[i].tobytes(),
                                     self.kube_nonzero[i].tobytes()))
        self._written.append(i)

    def sync(self) -> None:
        if self._dirty:
            for i in self._dirty:
                self._refresh(i)
            self._dirty.clear()

    def rowwise(self, key: Hashable, compute: Callable[[np.ndarray | None], np.ndarray]) -> np.ndarray:
        """``compute(None)``: one value per row (shape (nodes,)), kept under ``key`` and brought
        up to date for only the rows written since it was last asked for.

        ``compute(rows)`` must give, for each of ``rows`` (sorted session node indices), exactly
        the value ``compute(None)`` gives that row, and that value must be a function of the
        row's data in these arrays and of what ``key`` stands for, nothing else (numpy's
        elementwise operations give the same floats on a subset). So a row written since is
        given the value an earlier row with the same bytes in every array got under ``key``, and
        ``compute`` runs only for contents not seen before. Anything read across rows (a
        maximum, a normalization, other nodes' Pods) must not go through here. ``key`` names
        everything the values depend on besides the rows (e.g. the request). A Node added,
        removed or with another allocatable makes new arrays (:meth:`reuse`): they start empty.

        Returns a read-only array (replaced, never changed in place, when rows are written).
        """
        self.sync()
        if len(self._written) > 4 * len(self.nodes) + 64:  # keep the last nodes' worth of the log
            keep = len(self.nodes) + 64
            self._written_base += len(self._written) - keep
            del self._written[:-keep]
        base = self._written_base
        end = base + len(self._written)
        got = self._rowwise.get(key)
        if got is not None:
            vals, pos, by_content = got
            if pos == end:
                return vals
            if pos >= base and end - pos <= len(self.nodes) // 8:
                rows = sorted(set(self._written[pos - base:]))
                content = self._content
                if len(by_content) > 4 * len(self.nodes):
                    by_content.clear()
                missing = [i for i in rows if content[i] not in by_content]
                if missing:
                    for i, v in zip(missing, compute(np.array(missing, dtype=np.intp)).tolist(), strict=True):
                        by_content[content[i]] = v
                vals = vals.copy()
                vals[rows] = [by_content[content[i]] for i in rows]
                vals.setflags(write=False)
                self._rowwise[key] = (vals, end, by_content)
                return vals
        elif len(self._rowwise) >= ROWWISE_KEYS:
            self._rowwise.clear()  # (keys are requests: a few in a trace, many only in a test)
        vals = np.array(compute(None))
        vals.setflags(write=False)
        self._rowwise[key] = (vals, end, {} if got is None else got[2])
        return vals

    def fits(self, req: Resource, which: str = "future_idle", rows: np.ndarray | None = None) -> np.ndarray:
        """Boolean mask: ``req.less_equal(node.<which>, ZERO)`` for every node (or ``rows``).

        ``l <= r`` within MIN_RESOURCE is exactly ``r > l - MIN_RESOURCE``, one comparison per
        requested column. Over every node the mask is :meth:`rowwise`'s (read-only; kept per
        request and brought up to date for the rows written since); over ``rows``, a new array.
        """
        arr = self.future_idle if which == "future_idle" else self.idle
        cols: list[tuple[int, float]] = [(0, req.milli_cpu), (1, req.memory)]
        for k, x in req.scalars.items():
            c = self.col.get(k)
            if c is None:
                if x >= MIN_RESOURCE:
                    return np.zeros(arr.shape[0] if rows is None else len(rows), dtype=bool)
                continue
            cols.append((c, x))

        def compute(at: np.ndarray | None) -> np.ndarray:
            ok: np.ndarray | None = None
            for c, x in cols:  # cols starts with cpu and memory: ok is a fresh mask after the first
                col = arr[:, c] if at is None else arr[at, c]
                if ok is None:
                    ok = col > x - MIN_RESOURCE
                else:
                    ok &= col > x - MIN_RESOURCE
            assert ok is not None
            return ok

        mask = self.rowwise(("fits", which, *cols), compute)
        return mask if rows is None else mask[rows]


ROWWISE_KEYS = 256
"""At most this many :meth:`NodeArrays.rowwise` results are kept (all are dropped beyond)."""


def _with_extra(dims: list[str], extra_dims: Iterable[str]) -> list[str]:
    out = list(dims)
    for k in extra_dims:
        if k not in out:
            out.append(k)
    return out


def _same(a: Resource, b: Resource) -> bool:
    return a is b or (a.milli_cpu == b.milli_cpu and a.memory == b.memory and dict(a.scalars) == dict(b.scalars))
