"""deviceshare: GPU sharing fitted per card, not per Node (the gpushare devices).

With ``deviceshare.GPUSharingEnable: true`` a Pod that asks for ``volcano.sh/gpu-memory`` fits a
Node only when one of its cards has that much memory idle (a 0.5-card Pod cannot span two
half-free cards, though the Node's pooled ``volcano.sh/gpu-memory`` would allow it); with
``deviceshare.GPUNumberEnable: true`` a Pod that asks for ``volcano.sh/gpu-number`` needs that
many cards no Pod uses. The allocate handler takes the first fitting card(s) by id and gives the
Pod the annotations ``volcano.sh/gpu-index`` and ``volcano.sh/predicate-time`` through its
Binding; deallocation (eviction, a discarded statement) frees the cards. Card model and rules:
:mod:`pumice.scheduler.volcano.api.gpushare`. Failure reasons are upstream's: "GpuShare no
enough gpu memory on node <n>", "GpuNumber no enough gpu number on node <n>" (Unschedulable).

Arguments: ``deviceshare.GPUSharingEnable``, ``deviceshare.GPUNumberEnable`` (both default
false), ``deviceshare.SchedulePolicy`` and ``deviceshare.ScheduleWeight`` (accepted; upstream's
gpushare devices score every Node 0, so no node-order function is registered).

Mirrors: volcano pkg/scheduler/plugins/deviceshare/deviceshare.go (the predicate) and the device
allocate/release calls of plugins/predicates/predicates.go's event handlers.
Deviates: the vGPU (HAMi), Ascend NPU, node-lock and GPU-exclusivity parts are not
implemented (their arguments, e.g. ``deviceshare.VGPUEnable``, are ignored with a warning, as
a Volcano release without them would ignore them); both sharing modes may be on at once
(upstream exits; see the card model's docstring).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import numpy as np

from pumice.api.quantity import QuantityError
from pumice.scheduler.volcano.api.gpushare import (
    GPU_INDEX,
    PREDICATE_TIME,
    GPUDevices,
    gpu_index,
    gpu_memory_of_pod,
    gpu_number_of_pod,
)
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import Status, StatusCode, TaskStatus
from pumice.scheduler.volcano.framework.arguments import Arguments, arg, parser
from pumice.scheduler.volcano.framework.interface import Event, EventHandler
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "deviceshare"

log = logging.getLogger(__name__)

_BIG = np.iinfo(np.int64).max

_NOT_HOLDING = (TaskStatus.Releasing, TaskStatus.Pipelined)

_ROWS_KEY = ("deviceshare.rows",)

class DeviceShareArgs(Arguments, frozen=True):
    lenient_types = True  # upstream reads these with GetInt/GetBool/...: a wrong type keeps the default
    gpu_sharing: bool = arg("deviceshare.GPUSharingEnable", False)
    gpu_number: bool = arg("deviceshare.GPUNumberEnable", False)
    schedule_policy: str = arg("deviceshare.SchedulePolicy", "")
    schedule_weight: int = arg("deviceshare.ScheduleWeight", 0)


def node_memo(node: NodeInfo) -> tuple[GPUDevices | None, int, int]:
    """``(cards, largest idle memory of a card, idle cards)`` of ``node`` with the Pods its tasks
    put on them (not the Releasing, Pipelined or evicted ones, as upstream's NodeInfo.AddTask and
    the deallocate handler); kept in :attr:`NodeInfo.device_memo` until its tasks change (the live
    cache hands a session the NodeInfos the last one did not touch as the same objects). Do not
    change the cards: they are shared (copy them first)."""
    memo = node.device_memo
    if memo is not None:
        return memo  # type: ignore[no-any-return]
    try:
        devs = GPUDevices.from_node(node.node)
    except QuantityError as e:
        log.warning("Node %s: volcano.sh/gpu-memory or gpu-number capacity: %s; no GPU sharing there", node.name, e)
        devs = None
    if devs is not None:
        for key, t in node.tasks.items():
            if t.status in _NOT_HOLDING or key in node.evicted:
                continue
            ann = (t.pod.get("metadata") or {}).get("annotations") or {}
            try:
                devs.add_pod(key, t.pod, gpu_index({**ann, **t.pod_annotations}))
            except QuantityError as e:
                log.warning("Pod %s on Node %s: GPU limits: %s; not counted on its cards", key, node.name, e)
    memo = (devs, devs.max_idle_memory(), devs.idle_cards()) if devs is not None else (None, _BIG, _BIG)
    node.device_memo = memo
    return memo


def node_devices(node: NodeInfo) -> GPUDevices | None:
    """The cards of ``node`` (see :func:`node_memo`); None when it publishes none."""
    return node_memo(node)[0]


class DeviceSharePlugin:
    name = PLUGIN_NAME

    def __init__(self, args: DeviceShareArgs) -> None:
        self.args = args
        self.ssn: Session | None = None
        self._own: dict[str, GPUDevices] = {}
        self._requests: dict[str, tuple[int, int]] = {}
        self._pos: dict[str, int] = {}
        self._max_idle: np.ndarray | None = None
        self._idle_cards: np.ndarray | None = None

    # ----- requests and cards --------------------------------------------------------------
    def requests(self, task: TaskInfo) -> tuple[int, int]:
        """(gpu-memory, gpu-number) the task asks for, each 0 when its mode is off or the limit
        is malformed (logged)."""
        got = self._requests.get(task.uid)
        if got is None:
            try:
                mem = gpu_memory_of_pod(task.pod) if self.args.gpu_sharing else 0
                num = gpu_number_of_pod(task.pod) if self.args.gpu_number else 0
            except QuantityError as e:
                log.warning("Pod %s: GPU limits: %s; scheduled without GPU sharing", task.key, e)
                mem = num = 0
            got = self._requests[task.uid] = (mem, num)
        return got

    def devices(self, node: NodeInfo) -> GPUDevices | None:
        return self._own.get(node.name) or node_devices(node)

    def _mutable(self, node: NodeInfo) -> GPUDevices | None:
        own = self._own.get(node.name)
        if own is None:
            base = node_devices(node)
            if base is None:
                return None
            own = self._own[node.name] = base.copy()
        return own

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Per session node row: the largest idle card memory and the idle cards (no cards: no
        limit). The rows of the NodeInfos the last session left untouched (the same objects) are
        kept in the session's node memo and reused; the session changes its own copy."""
        if self._max_idle is None or self._idle_cards is None:
            assert self.ssn is not None
            ssn = self.ssn
            nodes = ssn.node_list
            kept = ssn.node_memo.get(_ROWS_KEY)
            ch = ssn.cluster.changes
            if (kept is not None and ch is not None and ch.nodes is not None and kept[4] == ch.generation - 1
                    and len(kept[0]) == len(nodes) and self._follow(kept, nodes, ch.nodes)):
                # the live cache named every Node that is not the object the last session had
                check = ssn.job_memo.on_mismatch
                if check is not None and any(a is not b for a, b in zip(kept[0], nodes, strict=True)):
                    check("deviceshare: a Node replaced since the last session was not named as changed")
            else:
                if kept is not None and (len(kept[0]) != len(nodes)
                                         or any(a is not b and a.name != b.name for a, b in zip(kept[0], nodes, strict=False))):
                    kept = None  # another node order: rebuild (the live cache drops its memo then anyway)
                if kept is None:
                    memos = [node_memo(n) for n in nodes]
                    kept = [list(nodes), np.fromiter((m[1] for m in memos), dtype=np.int64, count=len(nodes)),
                            np.fromiter((m[2] for m in memos), dtype=np.int64, count=len(nodes)),
                            {n.name: i for i, n in enumerate(nodes)}, 0]
                    ssn.node_memo[_ROWS_KEY] = kept
                else:
                    seen, max_idle, idle_cards = kept[0], kept[1], kept[2]
                    for i, (a, b) in enumerate(zip(seen, nodes, strict=True)):
                        if a is not b:
                            _devs, max_idle[i], idle_cards[i] = node_memo(b)
                            seen[i] = b
            kept[4] = ch.generation if ch is not None else 0
            self._pos = kept[3]
            self._max_idle, self._idle_cards = kept[1].copy(), kept[2].copy()
            for name, devs in self._own.items():
                self._refresh(self._pos.get(name), devs)
        return self._max_idle, self._idle_cards

    @staticmethod
    def _follow(kept: list[Any], nodes: list[NodeInfo], changed: Iterable[str]) -> bool:
        """Bring the kept rows (Nodes, largest idle card memory, idle cards, positions) up to date
        from the Nodes named ``changed``; False (nothing changed) when a name is not at its
        position any more."""
        seen, max_idle, idle_cards, pos = kept[0], kept[1], kept[2], kept[3]
        rows = []
        for name in changed:
            i = pos.get(name)
            if i is None or nodes[i].name != name:
                return False
            rows.append(i)
        for i in rows:
            b = nodes[i]
            if seen[i] is not b:
                _devs, max_idle[i], idle_cards[i] = node_memo(b)
                seen[i] = b
        return True

    def _refresh(self, i: int | None, devs: GPUDevices | None) -> None:
        if self._max_idle is None or self._idle_cards is None or devs is None or i is None:
            return
        self._max_idle[i] = devs.max_idle_memory()
        self._idle_cards[i] = devs.idle_cards()

    # ----- predicate -----------------------------------------------------------------------
    def predicate(self, task: TaskInfo, node: NodeInfo) -> list[Status]:
        mem, num = self.requests(task)
        if not mem and not num:
            return []
        devs = self.devices(node)
        if devs is None:
            return []
        if mem and not devs.fit_by_memory(mem):
            return [Status(StatusCode.Unschedulable, f"GpuShare no enough gpu memory on node {node.name}", PLUGIN_NAME)]
        if num and not devs.fit_by_number(num):
            return [Status(StatusCode.Unschedulable, f"GpuNumber no enough gpu number on node {node.name}", PLUGIN_NAME)]
        return []

    def batch(self, task: TaskInfo) -> tuple[np.ndarray, Any]:
        """(mask over the session's node list, statuses(i) for a failing node index)."""
        assert self.ssn is not None
        ssn = self.ssn
        mem, num = self.requests(task)
        if not mem and not num:
            mask = np.ones(len(ssn.node_list), dtype=bool)
        else:
            max_idle, idle_cards = self._arrays()
            mask = (max_idle >= mem) & (idle_cards >= num)

        def statuses(i: int) -> list[Status]:
            return self.predicate(task, ssn.node_list[i])

        return mask, statuses

    # ----- allocate / deallocate -----------------------------------------------------------
    def _target(self, task: TaskInfo) -> tuple[NodeInfo, GPUDevices, int, int] | None:
        """(node, the session's own cards of it, gpu-memory, gpu-number) for an event on a task
        that asks for a card on a Node that has cards; None otherwise."""
        assert self.ssn is not None
        mem, num = self.requests(task)
        node = self.ssn.nodes.get(task.node_name) if mem or num else None
        devs = self._mutable(node) if node is not None else None
        return None if node is None or devs is None else (node, devs, mem, num)

    def _on_allocate(self, ev: Event) -> None:
        assert self.ssn is not None
        task = ev.task
        target = self._target(task)
        if target is None:
            return
        node, devs, mem, num = target
        if (task.pod.get("spec") or {}).get("nodeName"):
            # already bound (an eviction taken back): its cards are the ones it holds
            ids = gpu_index((task.pod.get("metadata") or {}).get("annotations") or {})
        else:
            ids = devs.fit_by_memory(mem)[:1] if mem else devs.fit_by_number(num)
            if not ids:
                log.warning("deviceshare: no card of Node %s fits Pod %s (gpu-memory %d, gpu-number %d)",
                            node.name, task.key, mem, num)
                return
            ann = {PREDICATE_TIME: str(int(self.ssn.now * 1e9)), GPU_INDEX: ",".join(str(i) for i in ids)}
            _set_annotations(task, node, {**task.pod_annotations, **ann})
        devs.add_pod(task.key, task.pod, ids)
        self._refresh(self._pos.get(node.name), devs)

    def _on_deallocate(self, ev: Event) -> None:
        task = ev.task
        target = self._target(task)
        if target is None:
            return
        node, devs, _mem, _num = target
        devs.remove_pod(task.key)
        if GPU_INDEX in task.pod_annotations:
            _set_annotations(task, node, {k: v for k, v in task.pod_annotations.items()
                                          if k not in (GPU_INDEX, PREDICATE_TIME)})
        self._refresh(self._pos.get(node.name), devs)

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        if not (self.args.gpu_sharing or self.args.gpu_number):
            return
        ssn.add_predicate_fn(PLUGIN_NAME, self.predicate)
        ssn.batch_predicates[PLUGIN_NAME] = self.batch
        ssn.add_event_handler(EventHandler(allocate_func=self._on_allocate, deallocate_func=self._on_deallocate))

    def on_session_close(self, ssn: Session) -> None:
        self.ssn = None
        self._own = {}
        self._max_idle = self._idle_cards = None


def _set_annotations(task: TaskInfo, node: NodeInfo, annotations: dict[str, str]) -> None:
    """Give the job's task and the node's copy of it the same (new) annotation map."""
    task.pod_annotations = annotations
    held = node.tasks.get(task.key)
    if held is not None:
        held.pod_annotations = annotations
        node.device_memo = None  # derived from the tasks' annotations too


parse_arguments = parser(DeviceShareArgs)


new = DeviceSharePlugin
