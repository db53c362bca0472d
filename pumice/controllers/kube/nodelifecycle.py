"""Node lifecycle: mark Nodes whose heartbeat stopped, taint them, evict their Pods.

Every ``monitor_period`` seconds, for each Node: the heartbeat is the Node's Lease in
``kube-node-lease`` (``spec.renewTime``) or its Ready condition's ``lastHeartbeatTime``; the time
a new heartbeat was *observed* (on this controller's clock, as upstream does to avoid clock skew)
is compared with ``grace_period`` (50 s, v1.32's node-monitor-grace-period).

- heartbeat expired: conditions Ready, MemoryPressure, DiskPressure, PIDPressure become
  ``Unknown`` with reason ``NodeStatusUnknown`` and message ``Kubelet stopped posting node
  status.``; taints ``node.kubernetes.io/unreachable`` NoSchedule and NoExecute are added, and the
  Node's Pods get Ready=False;
- Ready=False reported by the kubelet: ``node.kubernetes.io/not-ready`` NoSchedule + NoExecute;
- Ready=True again: those taints are removed.

Eviction (the NoExecute taint manager): a Pod on a Node with NoExecute taints is deleted at once
when one of them is not tolerated; else, per taint, the first toleration that tolerates it is
taken, and the Pod is deleted the smallest ``tolerationSeconds`` of those after the taints'
earliest ``timeAdded``, or never when none of those has ``tolerationSeconds``. The 300 s most
Pods get comes from the DefaultTolerationSeconds admission plugin
(:class:`pumice.apiserver.admission.DefaultTolerationSeconds`), as upstream.

Mirrors: kubernetes pkg/controller/nodelifecycle/node_lifecycle_controller.go (monitorNodeHealth,
tryUpdateNodeHealth, markNodeAsReachable, doNoExecuteTaintingPass) and
pkg/controller/tainteviction/taint_eviction.go (getMinTolerationTime, processPodOnNode).
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING

from pumice._util.clock import Clock, parse_rfc3339, rfc3339
from pumice.api import Obj, meta
from pumice.api.scheme import LEASE, NODE, POD
from pumice.api.taints import TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE
from pumice.client.base import ApiError, KubeClient, is_not_found, patch_status_conditions
from pumice.client.informer import Informer
from pumice.runtime.events import EventRecorder
from pumice.runtime.manager import Manager

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions


log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
TAINT_UNREACHABLE = TAINT_NODE_UNREACHABLE
TAINT_NOT_READY = TAINT_NODE_NOT_READY
GRACE_PERIOD = 50.0
MONITOR_PERIOD = 5.0
_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
NODE_NAME_INDEX = "pumice.kube/node-name"


def _node_name_indexer(pod: Obj) -> list[str]:
    node = (pod.get("spec") or {}).get("nodeName")
    return [str(node)] if node else []


def _tolerates(tol: Obj, taint: Obj) -> bool:
    if tol.get("effect") and tol["effect"] != taint.get("effect"):
        return False
    if tol.get("key") and tol["key"] != taint.get("key"):
        return False
    if tol.get("operator") == "Exists":
        return True
    return (tol.get("value") or "") == (taint.get("value") or "")


def eviction_delay(pod: Obj, taints: list[Obj]) -> float | None:
    """Seconds after the taints were added when the Pod must go: 0 = now, None = never.

    Only the NoExecute ``taints`` count. Each must be tolerated (else 0); the first toleration
    that tolerates it is the one used (GetMatchingTolerations); the smallest ``tolerationSeconds``
    of the used ones counts, 0 for a value <= 0, None when none of them has one
    (getMinTolerationTime). No defaults are added here: the admission plugin gave them.
    """
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    used = []
    for taint in taints:
        if taint.get("effect") != "NoExecute":
            continue
        tol = next((t for t in tolerations if _tolerates(t, taint)), None)
        if tol is None:
            return 0.0
        used.append(tol)
    if not used:
        return None
    secs = [int(t["tolerationSeconds"]) for t in used if t.get("tolerationSeconds") is not None]
    if not secs:
        return None
    return float(max(0, min(secs)))


class NodeLifecycleController:
    """Watches heartbeats and evicts Pods from unreachable Nodes (see module docstring)."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> NodeLifecycleController:
        """Build the controller and add it to ``mgr`` as a runnable."""
        inf = mgr.informers
        nl = cls(mgr.client, nodes=inf.informer(NODE), leases=inf.informer(LEASE, LEASE_NAMESPACE),
                 pods=inf.informer(POD), clock=mgr.clock, recorder=mgr.event_recorder("node-controller"),
                 grace_period=opts.node_grace_period, monitor_period=opts.node_monitor_period)
        mgr.add_runnable(nl.run, name="nodelifecycle")
        return nl

    def __init__(self, client: KubeClient, *, nodes: Informer, leases: Informer, pods: Informer, clock: Clock,
                 recorder: EventRecorder, grace_period: float = GRACE_PERIOD,
                 monitor_period: float = MONITOR_PERIOD) -> None:
        self.client = client
        self.nodes = nodes
        self.leases = leases
        self.pods = pods
        self.clock = clock
        self.recorder = recorder
        self.grace_period = grace_period
        self.monitor_period = monitor_period
        self._seen: dict[str, tuple[str, float]] = {}
        pods.add_indexer(NODE_NAME_INDEX, _node_name_indexer)

    def pods_on(self, node_name: str) -> list[Obj]:
        return self.pods.store.by_index(NODE_NAME_INDEX, node_name)

    def _heartbeat(self, node: Obj) -> str:
        name = node["metadata"]["name"]
        lease = self.leases.store.get(LEASE_NAMESPACE, name)
        beats = []
        if lease is not None and (lease.get("spec") or {}).get("renewTime"):
            beats.append(str(lease["spec"]["renewTime"]))
        ready = meta.get_condition(node, "Ready")
        if ready is not None and ready.get("lastHeartbeatTime"):
            beats.append(str(ready["lastHeartbeatTime"]))
        return max(beats, key=lambda b: parse_rfc3339(b)) if beats else ""

    def expired(self, node: Obj) -> bool:
        """Whether no new heartbeat has been observed for ``grace_period`` seconds."""
        name = node["metadata"]["name"]
        beat = self._heartbeat(node)
        now = self.clock.monotonic()
        seen = self._seen.get(name)
        if seen is None or seen[0] != beat:
            self._seen[name] = (beat, now)
            return False
        return now - seen[1] > self.grace_period

    async def monitor_once(self) -> None:
        """One monitoring pass over every Node."""
        now = rfc3339(self.clock.now())
        names = set()
        for node in self.nodes.store.list():
            names.add(node["metadata"]["name"])
            try:
                node = await self._update_health(node, now)
                await self._sync_taints(node, now)
                await self._evict(node)
            except ApiError as e:
                if not is_not_found(e):
                    log.info("node lifecycle: %s: %s", node["metadata"]["name"], e)
        for gone in set(self._seen) - names:
            self._seen.pop(gone)

    async def _update_health(self, node: Obj, now: str) -> Obj:
        if not self.expired(node):
            return node
        conds = copy.deepcopy((node.get("status") or {}).get("conditions") or [])
        changed = False
        for ctype in _CONDITIONS:
            c = meta.find_condition(conds, ctype)
            if c is None:
                if ctype != "Ready":
                    continue
                c = {"type": ctype}
                conds.append(c)
            if c.get("status") == "Unknown":
                continue
            c.update({"status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status.",
                      "lastTransitionTime": now})
            c.setdefault("lastHeartbeatTime", c.get("lastHeartbeatTime"))
            changed = True
        if not changed:
            return node
        new = copy.deepcopy(node)
        new.setdefault("status", {})["conditions"] = conds
        updated = await self.client.update_status(new)
        self.recorder.event(node, "Normal", "NodeNotReady", f"Node {node['metadata']['name']} status is now: NodeNotReady")
        await self._mark_pods_not_ready(node["metadata"]["name"], now)
        return updated

    async def _mark_pods_not_ready(self, node_name: str, now: str) -> None:
        for pod in self.pods_on(node_name):
            conds = copy.deepcopy((pod.get("status") or {}).get("conditions") or [])
            ready = meta.find_condition(conds, "Ready")
            if ready is not None and ready.get("status") != "False":
                ready.update({"status": "False", "lastTransitionTime": now})
                await patch_status_conditions(self.client, POD, pod, conds)

    async def _sync_taints(self, node: Obj, now: str) -> None:
        ready = (meta.get_condition(node, "Ready") or {}).get("status")
        want_key = TAINT_UNREACHABLE if ready == "Unknown" else TAINT_NOT_READY if ready == "False" else None
        taints = list((node.get("spec") or {}).get("taints") or [])
        ours = {TAINT_UNREACHABLE, TAINT_NOT_READY}
        keep = [t for t in taints if t.get("key") not in ours or t.get("key") == want_key]
        if want_key is not None:
            for effect in ("NoSchedule", "NoExecute"):
                if not any(t.get("key") == want_key and t.get("effect") == effect for t in keep):
                    t: Obj = {"key": want_key, "effect": effect}
                    if effect == "NoExecute":
                        t["timeAdded"] = now
                    keep.append(t)
        if keep != taints:
            new = copy.deepcopy(node)
            new.setdefault("spec", {})["taints"] = keep or None
            if not keep:
                new["spec"].pop("taints")
            await self.client.update(new)

    async def _evict(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        live = self.nodes.store.get(None, name) or node
        taints = [t for t in (live.get("spec") or {}).get("taints") or [] if t.get("effect") == "NoExecute"]
        if not taints:
            return
        added = min((parse_rfc3339(str(t["timeAdded"])) for t in taints if t.get("timeAdded")),
                    default=self.clock.now())
        for pod in self.pods_on(name):
            if pod["metadata"].get("deletionTimestamp"):
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            delay = eviction_delay(pod, taints)
            if delay is None or added + delay > self.clock.now():
                continue
            md = pod["metadata"]
            self.recorder.event(pod, "Normal", "TaintManagerEviction",
                                f"Marking for deletion Pod {md.get('namespace')}/{md['name']}")
            try:
                await self.client.delete(POD, md["name"], md.get("namespace"), preconditions={"uid": md.get("uid", "")})
            except ApiError as e:
                if not is_not_found(e) and e.code != 409:
                    raise

    async def run(self) -> None:
        """Monitor every ``monitor_period`` seconds until cancelled."""
        await self.nodes.wait_synced()
        await self.leases.wait_synced()
        await self.pods.wait_synced()
        while True:
            await self.monitor_once()
            await self.clock.sleep(self.monitor_period)
