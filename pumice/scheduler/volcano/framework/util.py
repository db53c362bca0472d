"""Priority queue and node-sampling helpers.

Mirrors: volcano pkg/scheduler/util/priority_queue.go and scheduler_helper.go
(CalculateNumOfFeasibleNodesToFind).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from pumice.api import Obj
from pumice.api.meta import deep_copy

T = TypeVar("T")


class _Item(Generic[T]):
    __slots__ = ("less", "seq", "total", "value")

    def __init__(self, value: T, less: Callable[[T, T], bool], seq: int, total: bool) -> None:
        self.value = value
        self.less = less
        self.seq = seq
        self.total = total

    def __lt__(self, other: _Item[T]) -> bool:
        if self.less(self.value, other.value):
            return True
        if self.total and self.value is not other.value:
            return False
        if self.less(other.value, self.value):
            return False
        return self.seq < other.seq


class PriorityQueue(Generic[T]):
    """A binary heap ordered by ``less``; equal elements pop in insertion order.

    ``total=True`` promises that ``less`` orders distinct elements strictly (it has a final
    tie-break, as the session's job, queue and task orders do), which halves the comparisons.
    """

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = (), *, total: bool = False) -> None:
        self._less = less
        self._total = total
        self._heap: list[_Item[T]] = []
        self._seq = itertools.count()
        for it in items:
            self.push(it)

    def push(self, value: T) -> None:
        heapq.heappush(self._heap, _Item(value, self._less, next(self._seq), self._total))

    def pop(self) -> T:
        return heapq.heappop(self._heap).value

    def empty(self) -> bool:
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)

    def clone(self) -> PriorityQueue[T]:
        """An independent queue holding the same elements in the same order."""
        c: PriorityQueue[T] = PriorityQueue(self._less, total=self._total)
        c._heap = list(self._heap)
        c._seq = itertools.count(next(self._seq))
        return c


MIN_FEASIBLE_NODES = 100
MIN_PERCENTAGE_OF_NODES = 5


def num_feasible_nodes_to_find(num_all: int, percentage: int = 0) -> int:
    """How many feasible nodes to look for before stopping (upstream adaptive sampling)."""
    if num_all <= MIN_FEASIBLE_NODES:
        return num_all
    pct = percentage
    if pct <= 0:
        pct = max(MIN_PERCENTAGE_OF_NODES, 50 - num_all // 125)
    n = num_all * pct // 100
    return max(n, MIN_FEASIBLE_NODES)


def copy_status(status: Obj) -> Obj:
    """A copy of a PodGroup ``status`` a session may change without changing ``status``: the dict
    and its lists are copied; the condition dicts in a list are shared, because the scheduler
    replaces a condition (:meth:`Session.update_pod_group_condition`) and never edits one in
    place. Any other nested dict or list of non-flat items is copied by :func:`deep_copy`.

    The live cache's ``verify`` snapshot mode would report a shared condition changed in place
    (the next snapshot's job would differ from the full build's)."""
    out: Obj = dict(status)
    for k, v in out.items():
        if isinstance(v, list):
            for c in v:
                if type(c) is not dict:
                    out[k] = deep_copy(v)
                    break
            else:
                out[k] = v.copy()
        elif isinstance(v, dict):
            out[k] = deep_copy(v)
    return out
