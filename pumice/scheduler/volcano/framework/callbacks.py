"""One typed callback table per extension point.

A plugin registers a function for an extension point under its own name; the session's
dispatchers walk the table tier by tier (in configured order), skipping plugins whose switch for
that point is off. Each table knows its function type, so a plugin registering a job-order
function with the wrong shape is a type error, not a runtime surprise.

Mirrors: volcano pkg/scheduler/framework/session.go (the ``jobOrderFns``... maps) and
session_plugins.go (the walk over ``ssn.Tiers`` with ``isEnabled``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.sub_job_info import SubJobInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import EvictionContext, Status, ValidateResult
from pumice.scheduler.volcano.framework.extension_points import POINTS, ExtensionPoint

if TYPE_CHECKING:
    from pumice.scheduler.volcano.conf import Tier

F = TypeVar("F")

JobCompareFn = Callable[[JobInfo, JobInfo], int]
QueueCompareFn = Callable[[QueueInfo, QueueInfo], int]
VictimQueueCompareFn = Callable[[QueueInfo, QueueInfo, QueueInfo], int]
TaskCompareFn = Callable[[TaskInfo, TaskInfo], int]
PredicateFn = Callable[[TaskInfo, NodeInfo], list[Status]]
PrePredicateFn = Callable[[TaskInfo], "str | None"]
NodeOrderFn = Callable[[TaskInfo, NodeInfo], float]
BatchNodeOrderFn = Callable[[TaskInfo, Sequence[NodeInfo]], Any]
"""Returns scores aligned with the nodes (a sequence or an ndarray)."""
BestNodeFn = Callable[[TaskInfo, dict[float, list[NodeInfo]]], "NodeInfo | None"]
VictimsFn = Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo], int]]
"""(preemptor, candidates) -> (victims, Vote)."""
UnifiedEvictableFn = Callable[[EvictionContext, list[TaskInfo]], tuple[list[TaskInfo], int]]
"""(gang eviction context, candidates) -> (allowed victims, Vote)."""
QueueFn = Callable[[QueueInfo], bool]
AllocatableFn = Callable[[QueueInfo, TaskInfo], bool]
PreemptiveFn = Callable[[QueueInfo, list[TaskInfo]], bool]
JobBoolFn = Callable[[JobInfo], bool]
JobVoteFn = Callable[[JobInfo], int]
"""Returns a Vote (-1 reject, 0 abstain, 1 permit)."""
JobNotifyFn = Callable[[JobInfo], None]
JobValidFn = Callable[[JobInfo], "ValidateResult | None"]
VictimTasksFn = Callable[[list[TaskInfo]], list[TaskInfo]]
HyperNodeOrderFn = Callable[["JobInfo | SubJobInfo", Sequence[str]], dict[str, float]]
"""(job or sub-job, candidate HyperNode names) -> score per HyperNode."""
HyperNodeGradientFn = Callable[[JobInfo, str, str], "list[list[str]] | None"]
"""(job, search root HyperNode, purpose ``allocate``|``evict``) -> HyperNode names by gradient
(lowest tier first); None: this plugin has no opinion."""
SubJobGradientFn = Callable[[SubJobInfo, str, str], "list[list[str]] | None"]
"""The same for one sub-job, searched under the HyperNode chosen for its job."""
SubJobBoolFn = Callable[[SubJobInfo], bool]
SubJobVoteFn = Callable[[SubJobInfo], int]
SubJobCompareFn = Callable[[SubJobInfo, SubJobInfo], int]


class CallbackTable(Generic[F]):
    """The functions plugins registered for one extension point, keyed by plugin name.

    ``tiered()`` gives, per configured tier, the ``(plugin, fn)`` pairs whose switch is on, in
    configured order; ``flat()`` the same functions in one list, ``names()`` their plugins. All
    are cached until the next :meth:`add`.
    """

    __slots__ = ("_flat", "_names", "_tiered", "_tiers", "fns", "point")

    def __init__(self, point: ExtensionPoint, tiers: Sequence[Tier]) -> None:
        self.point = point
        self._tiers = tiers
        self.fns: dict[str, F] = {}
        self._tiered: list[list[tuple[str, F]]] | None = None
        self._flat: list[F] | None = None
        self._names: list[str] | None = None

    def add(self, plugin: str, fn: F) -> None:
        self.fns[plugin] = fn
        self._tiered = None
        self._flat = None
        self._names = None

    def tiered(self) -> list[list[tuple[str, F]]]:
        if self._tiered is None:
            switch = self.point.switch
            out: list[list[tuple[str, F]]] = []
            for tier in self._tiers:
                row: list[tuple[str, F]] = []
                for opt in tier.plugins:
                    fn = self.fns.get(opt.name)
                    if fn is None or (switch is not None and not opt.enabled(switch)):
                        continue
                    row.append((opt.name, fn))
                out.append(row)
            self._tiered = out
        return self._tiered

    def flat(self) -> list[F]:
        if self._flat is None:
            self._flat = [fn for tier in self.tiered() for _, fn in tier]
        return self._flat

    def names(self) -> list[str]:
        """The plugins of :meth:`flat`'s functions, in order (the caller must not change it)."""
        if self._names is None:
            self._names = [n for tier in self.tiered() for n, _ in tier]
        return self._names

    def clear(self) -> None:
        """Forget every registered function (see :meth:`Callbacks.clear`)."""
        self.fns.clear()
        self._tiered = None
        self._flat = None
        self._names = None


@dataclass
class Callbacks:
    """Every extension point's table; field names are the points' upstream names in snake case."""

    job_order: CallbackTable[JobCompareFn]
    queue_order: CallbackTable[QueueCompareFn]
    victim_queue_order: CallbackTable[VictimQueueCompareFn]
    task_order: CallbackTable[TaskCompareFn]
    predicate: CallbackTable[PredicateFn]
    pre_predicate: CallbackTable[PrePredicateFn]
    node_order: CallbackTable[NodeOrderFn]
    batch_node_order: CallbackTable[BatchNodeOrderFn]
    best_node: CallbackTable[BestNodeFn]
    preemptable: CallbackTable[VictimsFn]
    reclaimable: CallbackTable[VictimsFn]
    overused: CallbackTable[QueueFn]
    allocatable: CallbackTable[AllocatableFn]
    preemptive: CallbackTable[PreemptiveFn]
    job_ready: CallbackTable[JobBoolFn]
    job_pipelined: CallbackTable[JobVoteFn]
    job_enqueueable: CallbackTable[JobVoteFn]
    job_enqueued: CallbackTable[JobNotifyFn]
    job_valid: CallbackTable[JobValidFn]
    job_starving: CallbackTable[JobBoolFn]
    victim_tasks: CallbackTable[VictimTasksFn]
    hyper_node_order: CallbackTable[HyperNodeOrderFn]
    hyper_node_gradient_for_job: CallbackTable[HyperNodeGradientFn]
    hyper_node_gradient_for_sub_job: CallbackTable[SubJobGradientFn]
    unified_evictable: CallbackTable[UnifiedEvictableFn]
    sub_job_ready: CallbackTable[SubJobBoolFn]
    sub_job_pipelined: CallbackTable[SubJobVoteFn]
    sub_job_order: CallbackTable[SubJobCompareFn]
    reclaim_fits: CallbackTable[AllocatableFn]
    """pumice's own point: after the evictions so far, does the reclaimer's queue have quota room
    for the task? The reclaim action keeps evicting while a function says no (upstream reclaim
    evicts only until the node has room; with nothing registered pumice does the same)."""

    @classmethod
    def for_tiers(cls, tiers: Sequence[Tier]) -> Callbacks:
        """The tables for a session over ``tiers``, each made when first used (a session's
        plugins register for a few of the points, and its actions ask for a few more)."""
        if cls not in _FIELD_POINTS:  # once per class: the field names and their points do not change
            _FIELD_POINTS[cls] = {f.name: POINTS[_point_name(f.name)] for f in fields(cls)}
        out = object.__new__(cls)
        out.__dict__[_TIERS] = tiers
        return out

    def __getattr__(self, name: str) -> CallbackTable[Any]:
        # called only for a table not made yet (see for_tiers)
        fill = self.__dict__
        point = _FIELD_POINTS.get(type(self), {}).get(name)
        if point is None or _TIERS not in fill:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        table: CallbackTable[Any] = CallbackTable(point, fill[_TIERS])
        fill[name] = table
        return table

    def clear(self) -> None:
        """Empty every table: plugins register closures over their session, so a table that
        keeps them keeps the session in a reference cycle (see :meth:`Session.release`)."""
        for name, table in self.__dict__.items():  # (a table without functions caches none either)
            if name != _TIERS and table.fns:
                table.clear()

    def by_point(self, point: str) -> CallbackTable[Any]:
        """The table of the extension point named ``point`` (upstream camelCase, e.g. ``jobOrder``).

        Raises:
            KeyError: an unknown extension point.
        """
        if point not in POINTS:
            raise KeyError(f"unknown extension point {point!r}")
        table: CallbackTable[Any] = getattr(self, _attr_name(point))
        return table


_FIELD_POINTS: dict[type, dict[str, ExtensionPoint]] = {}
"""Per :class:`Callbacks` class: field name -> its extension point."""

_TIERS = "_tiers"
"""Where :meth:`Callbacks.for_tiers` keeps the tiers its tables are made for."""


def _point_name(attr: str) -> str:
    head, *rest = attr.split("_")
    return head + "".join(p.capitalize() for p in rest)


def _attr_name(point: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in point)
