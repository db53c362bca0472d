"""NodeInfo: a Node's resource accounting inside one session.

Mirrors: volcano pkg/scheduler/api/node_info.go NodeInfo (AddTask, RemoveTask, UpdateTask,
FutureIdle).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pumice.api import Obj
from pumice.api.meta import get_condition
from pumice.scheduler.volcano.api.resource import Dimension, Resource
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import COMPLETED_STATUSES, TaskStatus


class NodeError(RuntimeError):
    """A task cannot be added to or removed from a node (the node is left unchanged)."""


def node_is_ready(node: Obj) -> bool:
    """A Node without a Ready condition counts as ready; otherwise Ready must be "True"."""
    ready = get_condition(node, "Ready")
    return ready is None or ready.get("status") == "True"


@dataclass(eq=False)
class NodeInfo:
    """One node. ``idle = allocatable - used``; ``future_idle = idle + releasing - pipelined``.

    ``kube_requested`` and ``kube_nonzero`` (both (millicores, bytes)) are the Kubernetes node view
    that nodeorder's scores read: every Pod on the node whatever its status (Pipelined and
    Releasing included) except those evicted in this session, counted by request and by
    non-zero request (see :attr:`TaskInfo.nonzero_request`). Mirrors: volcano
    framework/util.go GenerateNodeMapAndSlice (``NewNodeInfo(node.Pods()...)``) kept current by
    the predicates plugin's allocate/deallocate event handlers.

    ``tasks`` maps ``<ns>/<pod>`` to a clone of the task, so later status changes of the job's
    copy cannot corrupt the node accounting.
    """

    name: str
    node: Obj = field(default_factory=dict)
    allocatable: Resource = field(default_factory=Resource)
    capacity: Resource = field(default_factory=Resource)
    idle: Resource = field(default_factory=Resource)
    used: Resource = field(default_factory=Resource)
    releasing: Resource = field(default_factory=Resource)
    pipelined: Resource = field(default_factory=Resource)
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    evicted: set[str] = field(default_factory=set)
    kube_requested: tuple[float, float] = (0.0, 0.0)
    kube_nonzero: tuple[float, float] = (0.0, 0.0)
    index: int = -1
    on_change: Callable[[NodeInfo], None] | None = None
    touched: bool = False
    """Set by every change of the accounting (add/remove/update a task, mark evicted): the live
    cache hands an untouched NodeInfo to the next session as it is, a touched one as a fresh copy."""
    touch_log: set[str] | None = None
    """Where a touched NodeInfo adds its name (the live cache's set of session Nodes to replace);
    None: nowhere."""
    device_memo: Any = None
    """What a device plugin derived from this node's tasks (deviceshare: its GPU cards); dropped by
    every change of the accounting. A copy of the NodeInfo shares it until either changes, so it
    must never be changed in place."""

    @classmethod
    def from_node(cls, node: Obj) -> NodeInfo:
        st = node.get("status") or {}
        alloc = Resource.from_list(st.get("allocatable") or st.get("capacity"))
        cap = Resource.from_list(st.get("capacity") or st.get("allocatable"))
        return cls(
            name=(node.get("metadata") or {}).get("name", ""),
            node=node,
            allocatable=alloc,
            capacity=cap,
            idle=alloc,
        )

    @property
    def labels(self) -> dict[str, str]:
        return (self.node.get("metadata") or {}).get("labels") or {}

    @property
    def taints(self) -> list[Obj]:
        return (self.node.get("spec") or {}).get("taints") or []

    @property
    def unschedulable(self) -> bool:
        return bool((self.node.get("spec") or {}).get("unschedulable"))

    def future_idle(self) -> Resource:
        return self.idle + self.releasing - self.pipelined

    def _changed(self) -> None:
        self.touched = True
        if self.touch_log is not None:
            self.touch_log.add(self.name)
        self.device_memo = None
        if self.on_change is not None:
            self.on_change(self)

    def add_task(self, task: TaskInfo) -> None:
        """Account ``task`` on this node by its status.

        Raises:
            NodeError: the task names another node, is already here, or is Binding and does not
                fit ``idle``.
        """
        if task.node_name and self.name and task.node_name != self.name:
            raise NodeError(f"task <{task.key}> already on different node <{task.node_name}>")
        if task.key in self.tasks:
            raise NodeError(f"task <{task.key}> already on node <{self.name}>")
        ti = task.clone()
        if ti.status is TaskStatus.Releasing:
            self.idle = self.idle - ti.resreq
            self.releasing = self.releasing + ti.resreq
            self.used = self.used + ti.resreq
        elif ti.status is TaskStatus.Pipelined:
            self.pipelined = self.pipelined + ti.resreq
        else:
            if ti.status is TaskStatus.Binding and not ti.resreq.less_equal(self.idle, Dimension.ZERO):
                raise NodeError(f"selected node {self.name} has not enough idle resource for task <{task.key}>")
            self.idle = self.idle - ti.resreq
            self.used = self.used + ti.resreq
        self.tasks[ti.key] = ti
        if ti.key not in self.evicted:
            self._kube_account(ti, 1)
        self._changed()

    def remove_task(self, task: TaskInfo) -> None:
        """Undo :meth:`add_task` for the stored copy. Raises NodeError when absent."""
        ti = self.tasks.pop(task.key, None)
        if ti is None:
            raise NodeError(f"failed to find task <{task.key}> on host <{self.name}>")
        if ti.status is TaskStatus.Releasing:
            self.releasing = self.releasing - ti.resreq
            self.idle = self.idle + ti.resreq
            self.used = self.used - ti.resreq
        elif ti.status is TaskStatus.Pipelined:
            self.pipelined = self.pipelined - ti.resreq
        else:
            self.idle = self.idle + ti.resreq
            self.used = self.used - ti.resreq
        if ti.key not in self.evicted:
            self._kube_account(ti, -1)
        self._changed()

    def _kube_account(self, ti: TaskInfo, sign: int) -> None:
        r = ti.resreq
        self.kube_requested = (self.kube_requested[0] + sign * r.milli_cpu, self.kube_requested[1] + sign * r.memory)
        c, m = ti.nonzero_request
        self.kube_nonzero = (self.kube_nonzero[0] + sign * c, self.kube_nonzero[1] + sign * m)

    def update_task(self, task: TaskInfo) -> None:
        self.remove_task(task)
        self.add_task(task)

    def pod_count(self) -> int:
        """Pods the kube-style predicates see: every task on the node except those evicted in
        this session (upstream's predicates drop a Pod from their NodeInfo on deallocate)."""
        return len(self.tasks) - len(self.evicted)

    def mark_evicted(self, key: str, evicted: bool) -> None:
        if evicted == (key in self.evicted):
            return
        if evicted:
            self.evicted.add(key)
        else:
            self.evicted.discard(key)
        ti = self.tasks.get(key)
        if ti is not None:
            self._kube_account(ti, -1 if evicted else 1)
        self._changed()


def add_running_task(node: NodeInfo, task: TaskInfo) -> None:
    """Snapshot helper: put an existing Pod on its node unless it is Succeeded/Failed."""
    if task.status in COMPLETED_STATUSES:
        return
    node.add_task(task)

