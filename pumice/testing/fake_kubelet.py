"""A fake node agent for tests and benchmarks: Nodes that run bound Pods instantly.

:class:`FakeKubelet` registers Nodes (Ready, with allocatable and a heartbeat Lease in
``kube-node-lease``), and for every Pod bound to one of them:

- marks it Running and Ready (podIP, hostIP, startTime, container statuses ``running``);
- finishes graceful deletion (deletes with grace period 0 once a deletionTimestamp appears);
- makes its containers exit when asked (:meth:`FakeKubelet.exit_pod`) or after an
  ``exit_policy(pod) -> (delay_seconds, exit_code) | None``: restartPolicy ``Never`` (or exit 0
  with ``OnFailure``) ends the Pod Succeeded/Failed; otherwise the container restarts
  (``restartCount + 1``, ``lastState.terminated``).

Heartbeats renew each Node's Lease every ``heartbeat_period`` seconds; :meth:`stop_heartbeat`
silences one Node (for node lifecycle tests). Time comes from the given clock.

It is not the real node agent (``pumice.node``): no processes, no probes, no volumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Callable, Sequence
from typing import Any

from pumice._util.clock import Clock, default_clock, rfc3339, rfc3339_micro
from pumice.api import Obj
from pumice.api.meta import get_condition
from pumice.api.scheme import LEASE, NODE, POD
from pumice.client.base import ApiError, KubeClient, is_already_exists, is_not_found
from pumice.client.informer import Informer, SharedInformerFactory

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"

ExitPolicy = Callable[[Obj], "tuple[float, int] | None"]


def node_object(name: str, *, index: int = 0, cpu: str = "8", memory: str = "32Gi", pods: int = 110,
                labels: dict[str, str] | None = None, extra: dict[str, str] | None = None,
                taints: list[Obj] | None = None) -> Obj:
    """A Node as a kubelet registers it (status included)."""
    alloc = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": "100Gi", **(extra or {})}
    spec: Obj = {"podCIDR": f"10.244.{index % 256}.0/24"}
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                              "kubernetes.io/arch": "amd64", **(labels or {})}},
        "spec": spec,
        "status": {"capacity": dict(alloc), "allocatable": alloc,
                   "addresses": [{"type": "InternalIP", "address": f"10.0.{index // 250}.{index % 250 + 1}"}]},
    }


class FakeKubelet:
    """Fake node agent (see module docstring).

    Args:
        client: API client.
        nodes: how many Nodes to register (``fake-node-0`` ...) or their names.
        cpu, memory, pods: each Node's allocatable.
        clock: time source (heartbeats, timestamps, exit delays).
        informers: a shared informer factory to reuse (one is created otherwise).
        heartbeat_period: seconds between Lease renewals (None: no Leases).
        exit_policy: ``pod -> (delay, exit code)`` for Pods that should exit by themselves.
        concurrency: status writes in flight at once.
    """

    def __init__(self, client: KubeClient, *, nodes: int | Sequence[str] = 3, cpu: str = "8", memory: str = "32Gi",
                 pods: int = 110, clock: Clock | None = None, informers: SharedInformerFactory | None = None,
                 heartbeat_period: float | None = 10.0, exit_policy: ExitPolicy | None = None,
                 concurrency: int = 64) -> None:
        self.client = client
        self.clock = clock or default_clock()
        names = [f"fake-node-{i}" for i in range(nodes)] if isinstance(nodes, int) else list(nodes)
        self.node_specs: dict[str, Obj] = {}
        for n in names:
            self.node_specs[n] = node_object(n, index=len(self.node_specs), cpu=cpu, memory=memory, pods=pods)
        self.informers = informers or SharedInformerFactory(client, clock=self.clock)
        self._own_informers = informers is None
        self.heartbeat_period = heartbeat_period
        self.exit_policy = exit_policy
        self._sem = asyncio.Semaphore(concurrency)
        self._silent: set[str] = set()
        self._started: set[str] = set()
        self._finishing: set[str] = set()
        self._ips: dict[str, int] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._pods: Informer | None = None
        self.running_count = 0

    # -- Nodes ----------------------------------------------------------------------------------
    async def _register(self, node: Obj) -> None:
        now = rfc3339(self.clock.now())
        node = copy.deepcopy(node)
        node["status"]["conditions"] = [
            {"type": t, "status": "False", "reason": r, "message": m, "lastHeartbeatTime": now,
             "lastTransitionTime": now}
            for t, r, m in (("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"))
        ] + [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
              "lastHeartbeatTime": now, "lastTransitionTime": now}]
        try:
            created = await self.client.create(node)
        except ApiError as e:
            if not is_already_exists(e):
                raise
            created = await self.client.get(NODE, node["metadata"]["name"])
        if (created.get("status") or {}).get("conditions") != node["status"]["conditions"]:
            created = copy.deepcopy(created)
            created["status"] = node["status"]
            await self.client.update_status(created)
        if self.heartbeat_period is not None:
            await self._renew(node["metadata"]["name"], create=True)

    async def add_node(self, name: str, *, cpu: str = "8", memory: str = "32Gi", pods: int = 110,
                       labels: dict[str, str] | None = None, extra: dict[str, str] | None = None) -> Obj:
        """Register one more Node (e.g. "a Node with room appears")."""
        node = node_object(name, index=len(self.node_specs), cpu=cpu, memory=memory, pods=pods, labels=labels,
                           extra=extra)
        self.node_specs[name] = node
        await self._register(node)
        return node

    async def _renew(self, name: str, *, create: bool = False) -> None:
        now = rfc3339_micro(self.clock.now())
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
                 "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": now}}
        try:
            live = await self.client.get(LEASE, name, LEASE_NAMESPACE)
        except ApiError as e:
            if not is_not_found(e):
                raise
            await self.client.create(lease)
            return
        live = copy.deepcopy(live)
        live.setdefault("spec", {})["renewTime"] = now
        await self.client.update(live)

    def stop_heartbeat(self, name: str) -> None:
        """Stop renewing ``name``'s Lease (the Node looks dead to the node lifecycle controller)."""
        self._silent.add(name)

    def resume_heartbeat(self, name: str) -> None:
        self._silent.discard(name)

    async def _heartbeat_loop(self) -> None:
        assert self.heartbeat_period is not None
        while True:
            await self.clock.sleep(self.heartbeat_period)
            for name in list(self.node_specs):
                if name in self._silent:
                    continue
                with contextlib.suppress(ApiError):
                    await self._renew(name)
                    await self._report_ready(name)

    async def _report_ready(self, name: str) -> None:
        """Post Ready=True again when someone else (the node lifecycle controller) changed it."""
        node = await self.client.get(NODE, name)
        ready = get_condition(node, "Ready")
        if ready is not None and ready.get("status") == "True":
            return
        now = rfc3339(self.clock.now())
        node = copy.deepcopy(node)
        for c in node.setdefault("status", {}).setdefault("conditions", []):
            healthy = "True" if c.get("type") == "Ready" else "False"
            if c.get("status") != healthy:
                c.update({"status": healthy, "lastTransitionTime": now, "reason": "KubeletReady" if healthy == "True"
                          else c.get("reason", ""), "message": "kubelet is posting ready status"
                          if healthy == "True" else c.get("message", "")})
            c["lastHeartbeatTime"] = now
        await self.client.update_status(node)

    # -- Pods ------------------------------------------------------------------------------------
    def _mine(self, pod: Obj) -> bool:
        return (pod.get("spec") or {}).get("nodeName") in self.node_specs

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_pod(self, pod: Obj) -> None:
        if not self._mine(pod):
            return
        md = pod["metadata"]
        uid = md.get("uid", "")
        if md.get("deletionTimestamp"):
            if uid not in self._finishing:
                self._finishing.add(uid)
                self._spawn(self._finish_deletion(pod))
            return
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if phase == "Pending" and uid not in self._started:
            self._started.add(uid)
            self._spawn(self._start(pod))

    def _on_delete(self, pod: Obj) -> None:
        uid = pod["metadata"].get("uid", "")
        self._started.discard(uid)
        self._finishing.discard(uid)

    def _pod_ip(self, pod: Obj) -> str:
        node = pod["spec"]["nodeName"]
        idx = list(self.node_specs).index(node)
        n = self._ips.get(node, 0) + 1
        self._ips[node] = n
        return f"10.{244 + idx // 256}.{idx % 256}.{n % 254 + 1}"

    def _host_ip(self, node: str) -> str:
        return str(self.node_specs[node]["status"]["addresses"][0]["address"])

    async def _start(self, pod: Obj) -> None:
        md = pod["metadata"]
        now = rfc3339(self.clock.now())
        containers = (pod.get("spec") or {}).get("containers") or []
        ip = self._pod_ip(pod)
        status = {
            "phase": "Running", "hostIP": self._host_ip(pod["spec"]["nodeName"]), "podIP": ip, "podIPs": [{"ip": ip}],
            "startTime": now, "qosClass": "BestEffort",
            "conditions": [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
                           for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                     "PodScheduled")],
            "containerStatuses": [
                {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": True, "started": True,
                 "restartCount": 0, "containerID": f"fake://{md.get('uid', '')}/{c['name']}",
                 "state": {"running": {"startedAt": now}}}
                for c in containers],
        }
        async with self._sem:
            try:
                await self.client.patch(POD, md["name"], {"status": status}, md.get("namespace"), subresource="status")
            except ApiError as e:
                if not is_not_found(e):
                    log.info("fake kubelet: starting %s/%s failed: %s", md.get("namespace"), md["name"], e)
                    self._started.discard(md.get("uid", ""))
                return
        self.running_count += 1
        if self.exit_policy is not None:
            decision = self.exit_policy(pod)
            if decision is not None:
                delay, code = decision
                self._spawn(self._exit_later(md.get("namespace", ""), md["name"], delay, code))

    async def _exit_later(self, namespace: str, name: str, delay: float, code: int) -> None:
        await self.clock.sleep(delay)
        with contextlib.suppress(ApiError):
            await self.exit_pod(namespace, name, code)

    async def exit_pod(self, namespace: str, name: str, code: int = 0) -> Obj:
        """Make every container of a running Pod exit with ``code``.

        Returns the Pod as written. Raises ApiError (404) when the Pod is gone.
        """
        pod = await self.client.get(POD, name, namespace)
        now = rfc3339(self.clock.now())
        policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
        restart = policy == "Always" or (policy == "OnFailure" and code != 0)
        st = copy.deepcopy(pod.get("status") or {})
        term = {"exitCode": code, "reason": "Completed" if code == 0 else "Error", "startedAt": st.get("startTime", now),
                "finishedAt": now, "containerID": ""}
        for cs in st.get("containerStatuses") or []:
            term["containerID"] = cs.get("containerID", "")
            if restart:
                cs["restartCount"] = int(cs.get("restartCount") or 0) + 1
                cs["lastState"] = {"terminated": dict(term)}
                cs["state"] = {"running": {"startedAt": now}}
            else:
                cs["state"] = {"terminated": dict(term)}
                cs["ready"] = False
                cs["started"] = False
        if not restart:
            st["phase"] = "Succeeded" if code == 0 else "Failed"
            for c in st.get("conditions") or []:
                if c.get("type") in ("Ready", "ContainersReady"):
                    c.update({"status": "False", "reason": "PodCompleted", "lastTransitionTime": now})
        patched: Obj = await self.client.patch(POD, name, {"status": st}, namespace, subresource="status")
        if restart and self.exit_policy is not None:
            decision = self.exit_policy(patched)
            if decision is not None:
                self._spawn(self._exit_later(namespace, name, decision[0], decision[1]))
        return patched

    async def _finish_deletion(self, pod: Obj) -> None:
        md = pod["metadata"]
        async with self._sem:
            try:
                await self.client.delete(POD, md["name"], md.get("namespace"), grace_period_seconds=0,
                                         preconditions={"uid": md.get("uid", "")})
            except ApiError as e:
                if not is_not_found(e) and e.code != 409:
                    log.info("fake kubelet: deleting %s/%s failed: %s", md.get("namespace"), md["name"], e)
                    self._finishing.discard(md.get("uid", ""))

    # -- lifecycle --------------------------------------------------------------------------------
    async def start(self) -> None:
        """Register the Nodes and their Leases, then start following Pods."""
        if self.heartbeat_period is not None:
            try:
                await self.client.create({"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": LEASE_NAMESPACE}})
            except ApiError as e:
                if not is_already_exists(e):
                    raise
        for node in list(self.node_specs.values()):
            await self._register(node)
        self._pods = self.informers.informer(POD)
        self._pods.add_event_handler(self._on_pod, lambda _o, n: self._on_pod(n), self._on_delete)
        await self.informers.start()
        await self.informers.wait_for_cache_sync([self._pods])
        if self.heartbeat_period is not None:
            self._spawn(self._heartbeat_loop())

    async def stop(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        for t in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        if self._own_informers:
            await self.informers.stop()

    async def __aenter__(self) -> FakeKubelet:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
