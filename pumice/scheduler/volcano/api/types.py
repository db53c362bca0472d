"""Scheduler enums, status groups, votes and fit errors.

Mirrors: volcano pkg/scheduler/api/types.go, unschedule_info.go, and the PodGroup constants of
volcano.sh/apis scheduling/v1beta1.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class TaskStatus(enum.IntEnum):
    """A task's scheduler-side status (upstream bit flags, names are the upstream strings)."""

    Pending = 1 << 0
    Allocated = 1 << 1
    Pipelined = 1 << 2
    Binding = 1 << 3
    Bound = 1 << 4
    Running = 1 << 5
    Releasing = 1 << 6
    Succeeded = 1 << 7
    Failed = 1 << 8
    Unknown = 1 << 9

    def __str__(self) -> str:
        return self.name


ALLOCATED_STATUSES = frozenset({TaskStatus.Bound, TaskStatus.Binding, TaskStatus.Running, TaskStatus.Allocated})
SCHEDULED_STATUSES = frozenset({TaskStatus.Running, TaskStatus.Bound, TaskStatus.Failed, TaskStatus.Succeeded})
PREEMPTABLE_STATUSES = frozenset({TaskStatus.Bound, TaskStatus.Running})
COMPLETED_STATUSES = frozenset({TaskStatus.Failed, TaskStatus.Succeeded})


def allocated_status(s: TaskStatus) -> bool:
    return s in ALLOCATED_STATUSES


# PodGroup condition types and reasons (volcano.sh/apis scheduling/v1beta1).
POD_GROUP_READY = "pod group is ready"
POD_GROUP_NOT_READY = "pod group is not ready"

# Pod condition reasons.
POD_REASON_UNSCHEDULABLE = "Unschedulable"
POD_REASON_SCHEDULABLE = "Schedulable"
POD_REASON_SCHEDULER_ERROR = "SchedulerError"

# Fit-error texts.
NODE_POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"
NODE_RESOURCE_FIT_FAILED = "node(s) resource fit failed"
ALL_NODE_UNAVAILABLE_MSG = "all nodes are unavailable"

# Well-known keys (the wire strings are defined in pumice.api.volcano.constants).
SLA_WAITING_TIME_KEY = "sla-waiting-time"


class Vote(enum.IntEnum):
    """Plugin verdicts for voted extension points (plugins/util Permit/Abstain/Reject)."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


class StatusCode(enum.IntEnum):
    """Kubernetes-style filter status codes (api/types.go)."""

    Success = 0
    Error = 1
    Unschedulable = 2
    UnschedulableAndUnresolvable = 3
    Wait = 4
    Skip = 5


@dataclass(frozen=True)
class Status:
    code: StatusCode
    reason: str
    plugin: str = ""


@dataclass
class FitError:
    """Why one task does not fit one node. ``str()`` is the upstream message."""

    task_namespace: str
    task_name: str
    node_name: str
    statuses: list[Status] = field(default_factory=list)

    def reasons(self) -> list[str]:
        return [s.reason for s in self.statuses if s.reason]

    def unresolvable(self) -> bool:
        return any(s.code is StatusCode.UnschedulableAndUnresolvable for s in self.statuses)

    def __str__(self) -> str:
        return (
            f"task {self.task_namespace}/{self.task_name} on node {self.node_name} fit failed: "
            + ", ".join(self.reasons())
        )


class FitErrors:
    """Per-node fit errors of one task; ``str()`` is the upstream histogram message
    ("0/3 nodes are unavailable: 1 Insufficient cpu, 2 node(s) had untolerated taint ...").

    Keeps the reason histogram, the number of nodes and the UnschedulableAndUnresolvable node
    names rather than every FitError, so vectorized predicates can add many nodes at once.

    Mirrors: volcano pkg/scheduler/api/unschedule_info.go FitErrors.
    """

    def __init__(self) -> None:
        self.hist: dict[str, int] = {}
        self.node_names: set[str] = set()
        self.unresolvable: set[str] = set()
        self.err = ""

    def set_error(self, err: str) -> None:
        self.err = err

    def set_node_error(self, node_name: str, fe: FitError) -> None:
        if node_name in self.node_names:
            return
        fe.node_name = node_name
        self.node_names.add(node_name)
        for r in fe.reasons():
            self.hist[r] = self.hist.get(r, 0) + 1
        if fe.unresolvable():
            self.unresolvable.add(node_name)

    def set_nodes_error(self, node_names: list[str], err: str) -> None:
        """The same plain error (code Error: neither reason of the histogram is unresolvable) on
        every node of ``node_names``, as allocate and backfill record a failed pre-predicate
        (upstream's SetNodeError with an error that is not a FitError, for each node)."""
        for n in node_names:
            if n not in self.node_names:
                self.node_names.add(n)
                self.hist[err] = self.hist.get(err, 0) + 1

    def add_bulk(self, node_names: list[str], reasons: list[list[str]], unresolvable: list[bool]) -> None:
        for n, rs, u in zip(node_names, reasons, unresolvable, strict=True):
            if n in self.node_names:
                continue
            self.node_names.add(n)
            for r in rs:
                self.hist[r] = self.hist.get(r, 0) + 1
            if u:
                self.unresolvable.add(n)

    def unresolvable_nodes(self) -> set[str]:
        return set(self.unresolvable)

    def __str__(self) -> str:
        err = self.err or f"0/{len(self.node_names)} nodes are unavailable"
        if not self.node_names:
            return err
        return f"{err}: " + ", ".join(sorted(f"{v} {k}" for k, v in self.hist.items())) + "."


@dataclass(frozen=True)
class ValidateResult:
    """JobValid verdict: ``passed`` false with an upstream reason and message."""

    passed: bool
    reason: str = ""
    message: str = ""


def insufficient_reason(names: list[str]) -> str:
    return f"Insufficient {names[0]}" if names else ""


class EvictionKind(enum.IntEnum):
    """Which gang-aware eviction asks (upstream api.EvictionKind)."""

    UNKNOWN = 0
    GANG_PREEMPT = 1
    GANG_RECLAIM = 2


@dataclass(frozen=True)
class EvictionContext:
    """What a UnifiedEvictable plugin is asked about: the kind of eviction, the preemptor /
    reclaimer job (a JobInfo) and the candidate HyperNode domain. Mirrors: api.EvictionContext."""

    kind: EvictionKind
    job: object
    hypernode: str = ""
