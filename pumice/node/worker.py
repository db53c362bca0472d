"""One Pod on one Node: sandbox, volumes, init containers, containers, restarts, probes, status,
graceful termination.

A :class:`PodWorker` runs as one task per Pod plus one supervisor task per regular container.
Status is computed from what the worker observed and written (a merge patch of ``status``) only
when it changed.

Mirrors: kubernetes pkg/kubelet/pod_workers.go (one worker per Pod, terminating -> terminated),
pkg/kubelet/kuberuntime/kuberuntime_manager.go (SyncPod: sandbox, init containers, containers,
back-off), pkg/kubelet/status/generate.go and kubelet_pods.go (getPhase, conditions),
pkg/kubelet/prober (probe workers). Deviates: no image pulls; one sequential init pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pumice._util.clock import Clock, parse_rfc3339, rfc3339
from pumice._util.errors import FATAL_TYPES
from pumice.api import Obj
from pumice.api.scheme import POD
from pumice.node import podspec
from pumice.node.runtime.base import Container, ContainerRuntime, RuntimeError_, Sandbox, StartRequest
from pumice.node.serviceaccount import request_token, token_sources
from pumice.node.volumes import VolumeError, container_mounts, setup_volumes, token_key

if TYPE_CHECKING:
    from pumice.client.base import KubeClient

log = logging.getLogger(__name__)


KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled")


class WorkerHost(Protocol):
    """What a Pod worker needs from its agent."""

    client: KubeClient
    clock: Clock
    runtime: ContainerRuntime
    backoff_base: float
    backoff_max: float
    record_events: bool

    def node_allocatable(self, node: str) -> Mapping[str, str]: ...
    def host_ip(self) -> str: ...
    def base_env(self, pod: Obj, container: Obj) -> dict[str, str]: ...
    def hosts_for(self, pod: Obj, sandbox: Sandbox) -> str | None: ...
    def event(self, pod: Obj, type_: str, reason: str, message: str) -> None: ...
    def state_changed(self) -> None: ...
    def pod_dir(self, pod: Obj) -> Path: ...
    def worker_finished(self, worker: PodWorker) -> None: ...
    def watch(self, task: asyncio.Task[Any]) -> None:
        """Watch ``task`` (a worker's own): a FATAL_TYPES error ending it fails the agent; any other
        is logged with the task's name."""
    def retry_final_delete(self, pod: Obj) -> None:
        """The worker's final delete of ``pod`` failed: send it again later until the Pod is gone."""


@dataclass
class ContainerRecord:
    """What the kubelet knows of one container (status source).

    ``state`` is ``waiting``, ``running`` or ``terminated``; times are epoch seconds.
    """

    name: str
    image: str
    init: bool = False
    sidecar: bool = False
    state: str = "waiting"
    reason: str = "ContainerCreating"
    message: str = ""
    exit_code: int = 0
    started_at: float = 0.0
    finished_at: float = 0.0
    restart_count: int = 0
    ready: bool = False
    started: bool = False
    last: Obj | None = None
    current: Container | None = None
    backoff: float = 0.0
    start_backoff: float = 0.0
    kill_reason: str = ""
    ever_started: bool = False
    ephemeral: bool = False

    def terminated_state(self) -> Obj:
        t: Obj = {"exitCode": self.exit_code, "reason": self.reason, "startedAt": rfc3339(self.started_at),
                  "finishedAt": rfc3339(self.finished_at), "containerID": self.container_id()}
        if self.message:
            t["message"] = self.message
        return {"terminated": t}

    def container_id(self) -> str:
        return f"pumice://{self.name}-{self.restart_count}"

    def status(self) -> Obj:
        if self.state == "running":
            state: Obj = {"running": {"startedAt": rfc3339(self.started_at)}}
        elif self.state == "terminated":
            state = self.terminated_state()
        else:
            w: Obj = {"reason": self.reason}
            if self.message:
                w["message"] = self.message
            state = {"waiting": w}
        out: Obj = {
            "name": self.name,
            "image": self.image,
            "imageID": "",
            "ready": self.ready,
            "restartCount": self.restart_count,
            "started": self.started if self.state == "running" else False,
            "state": state,
            "lastState": self.last or {},
        }
        if self.state != "waiting" or self.ever_started:
            out["containerID"] = self.container_id()
        return out


def _probe_settings(probe: Obj) -> tuple[float, float, float, int, int]:
    return (
        float(probe.get("initialDelaySeconds", 0)),
        float(probe.get("periodSeconds", 10) or 10),
        float(probe.get("timeoutSeconds", 1) or 1),
        int(probe.get("successThreshold", 1) or 1),
        int(probe.get("failureThreshold", 3) or 3),
    )


@dataclass
class PodWorker:
    """Runs one Pod. Create with the admitted Pod; feed updates with :meth:`update`."""

    host: WorkerHost
    pod: Obj
    node: str
    sandbox: Sandbox | None = None
    records: dict[str, ContainerRecord] = field(default_factory=dict)
    start_time: float = 0.0
    phase: str = "Pending"
    reason: str = ""
    message: str = ""
    initialized: bool = False
    terminal: bool = False
    restored: Obj | None = None  # adopted state from the agent's state file
    _written: Obj | None = None
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None
    _supervisors: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    _status_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _volumes: dict[str, str] = field(default_factory=dict)
    _killing: bool = False
    _removed: bool = False
    _bg: set[asyncio.Task[None]] = field(default_factory=set)

    def __post_init__(self) -> None:
        spec = self.pod.get("spec") or {}
        for c in spec.get("initContainers") or []:
            sidecar = c.get("restartPolicy") == "Always"
            self.records[c["name"]] = ContainerRecord(c["name"], c.get("image", ""), init=True, sidecar=sidecar,
                                                      reason="PodInitializing" if not sidecar else "ContainerCreating")
        for c in spec.get("containers") or []:
            reason = "PodInitializing" if spec.get("initContainers") else "ContainerCreating"
            self.records[c["name"]] = ContainerRecord(c["name"], c.get("image", ""), reason=reason)
        self._written = dict(self.pod.get("status") or {})

    # -- identity --------------------------------------------------------------------------------

    @property
    def uid(self) -> str:
        return str(self.pod["metadata"]["uid"])

    @property
    def namespace(self) -> str:
        return str(self.pod["metadata"].get("namespace", ""))

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])

    @property
    def restart_policy(self) -> str:
        return str((self.pod.get("spec") or {}).get("restartPolicy") or "Always")

    def deleting(self) -> bool:
        return bool(self.pod["metadata"].get("deletionTimestamp"))

    def pod_dir_path(self) -> Path:
        return self.sandbox.pod_dir if self.sandbox is not None else self.host.pod_dir(self.pod)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"pod {self.namespace}/{self.name}")
        self.host.watch(self._task)

    def update(self, pod: Obj) -> None:
        """A newer version of the Pod. A running regular container whose image changed is stopped
        and started again with the new image (the only container field a Pod update may change).

        Mirrors: kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions
        ("Container %s definition changed", restart regardless of restartPolicy)."""
        old = self.pod
        self.pod = pod
        if not self.deleting():
            before = {c["name"]: c.get("image", "") for c in (old.get("spec") or {}).get("containers") or []}
            for c in self._spec_containers(False):
                rec = self.records.get(c["name"])
                image = c.get("image", "")
                if rec is None or before.get(c["name"], image) == image:
                    continue
                rec.image = image
                if rec.current is not None and self.sandbox is not None:
                    rec.kill_reason = "DefinitionChanged"
                    self.host.event(self.pod, "Normal", "Killing",
                                    f"Container {rec.name} definition changed, will be restarted")
                    t = asyncio.get_running_loop().create_task(self._stop_container(c, rec, self._grace()))
                    self._bg.add(t)
                    t.add_done_callback(self._bg.discard)
            self._start_ephemeral()
        self._wake.set()

    def _start_ephemeral(self) -> None:
        """Start the ephemeral containers added since the last look, once the Pod's regular
        containers run (each runs once in the Pod's sandbox and is never restarted).

        Mirrors: kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions
        (EphemeralContainersToStart) and SyncPod step 6."""
        if self.sandbox is None or not self.initialized or self.deleting() or self.terminal:
            return
        before = {st.get("name"): st for st in (self.pod.get("status") or {}).get("ephemeralContainerStatuses") or []}
        for c in (self.pod.get("spec") or {}).get("ephemeralContainers") or []:
            if c.get("name") in self.records:
                continue
            rec = ContainerRecord(c["name"], c.get("image", ""), ephemeral=True)
            self.records[c["name"]] = rec
            ended = ((before.get(c["name"]) or {}).get("state") or {}).get("terminated")
            if ended is not None:  # it ran before this agent started (a restart): not run again
                rec.state, rec.reason, rec.exit_code = "terminated", str(ended.get("reason", "")), ended.get("exitCode", 0)
                rec.started_at = parse_rfc3339(ended["startedAt"]) if ended.get("startedAt") else 0.0
                rec.finished_at = parse_rfc3339(ended["finishedAt"]) if ended.get("finishedAt") else 0.0
                rec.ever_started = True
                continue
            t = asyncio.get_running_loop().create_task(self._run_ephemeral(c, rec),
                                                       name=f"ephemeral {self.namespace}/{self.name}/{c['name']}")
            self._bg.add(t)
            t.add_done_callback(self._bg.discard)
            self.host.watch(t)

    async def _run_ephemeral(self, c: Obj, rec: ContainerRecord) -> None:
        try:
            while not self.deleting() and not self.terminal:
                if await self._run_once(c, rec) is not None:
                    break
            await self.sync_status()
        except FATAL_TYPES:
            raise  # not carried on: the agent ends (WorkerHost.watch)
        except Exception:
            log.exception("ephemeral container %s of %s/%s failed", rec.name, self.namespace, self.name)

    def removed(self) -> None:
        """The Pod object is gone from the API (force deletion): stop at once."""
        self._removed = True
        # the Pod is the informer's object, shared with other readers: marked on a copy
        md = dict(self.pod["metadata"])
        md.setdefault("deletionTimestamp", rfc3339(self.host.clock.now()))
        md["deletionGracePeriodSeconds"] = 0
        self.pod = {**self.pod, "metadata": md}
        self._wake.set()

    async def cancel(self) -> None:
        for t in [*self._supervisors.values(), *([self._task] if self._task else [])]:
            t.cancel()
        for t in [*self._supervisors.values(), *([self._task] if self._task else [])]:
            with contextlib.suppress(BaseException):
                await t

    # -- main flow -------------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._run_inner()
        except asyncio.CancelledError:
            raise  # the agent stops: the Pod is stopped or kept by the agent itself
        except FATAL_TYPES:
            raise  # not carried on: the agent ends (WorkerHost.watch)
        except Exception:
            log.exception("pod worker %s/%s failed", self.namespace, self.name)
        self.host.worker_finished(self)

    def _spec_containers(self, init: bool) -> list[Obj]:
        spec = self.pod.get("spec") or {}
        return list(spec.get("initContainers" if init else "containers") or [])

    def _container_spec(self, name: str) -> Obj:
        for c in podspec.all_containers(self.pod):
            if c["name"] == name:
                return c
        raise KeyError(name)

    async def _run_inner(self) -> None:
        clock = self.host.clock
        if not self.start_time:
            self.start_time = clock.now()
        if self.deleting():
            await self._terminate()
            return
        if self.restored is None and not getattr(self.host.runtime, "starts_at_once", False):
            # the admission status (Pending, containers ContainerCreating); a runtime whose
            # sandbox and containers start at the same instant would replace it before anyone
            # could see it, so only its next status is written (as the kubelet's status manager,
            # which writes a Pod's latest status, coalesces updates that come before its write)
            await self.sync_status()
        if not await self._setup_sandbox():
            return
        if not self.initialized:
            if self._spec_containers(True):
                await self.sync_status()
            ok = await self._run_init_containers()
            if not ok:
                return
            self.initialized = True
            self.host.state_changed()
        else:  # adopted after a restart: its sidecars are supervised again
            for c in self._spec_containers(True):
                if self.records[c["name"]].sidecar:
                    self._supervisors[c["name"]] = asyncio.get_running_loop().create_task(self._supervise(c))
        for c in self._spec_containers(False):
            self._supervisors[c["name"]] = asyncio.get_running_loop().create_task(self._supervise(c))
        self._start_ephemeral()
        # wait for completion or deletion
        while True:
            if self.deleting():
                await self._terminate()
                return
            if all(t.done() for t in self._supervisors.values()):
                await self._finish()
                return
            left = self._deadline_left()
            if left is not None and left <= 0:
                await self._deadline_exceeded()
                return
            self._wake.clear()
            # only the containers still supervised: a finished supervisor (a container that ended
            # for good while another runs, as a SidecarMode RayJob's submitter beside ray-head)
            # would end every wait at once, a busy loop that also froze a simulation's clock
            woken = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait([woken, *(t for t in self._supervisors.values() if not t.done())], timeout=left,
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                # also when this worker is cancelled (the agent stopping): a waiter left pending is
                # "Task was destroyed but it is pending!" once collected (trial 14 F-5)
                woken.cancel()

    def _deadline_left(self) -> float | None:
        """Seconds until ``spec.activeDeadlineSeconds`` (counted from startTime) runs out."""
        deadline = (self.pod.get("spec") or {}).get("activeDeadlineSeconds")
        if deadline is None:
            return None
        return self.start_time + float(deadline) - self.host.clock.now()

    async def _deadline_exceeded(self) -> None:
        """Mirrors: kubernetes pkg/kubelet/active_deadline.go (reason DeadlineExceeded)."""
        self.host.event(self.pod, "Normal", "DeadlineExceeded",
                        "Pod was active on the node longer than the specified deadline")
        await self.stop_all(self._grace())
        self.phase, self.terminal = "Failed", True
        self.reason, self.message = "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
        await self._finish()

    async def _setup_sandbox(self) -> bool:
        host = self.host
        pod_dir = host.pod_dir(self.pod)
        while self.sandbox is None:
            if self.deleting():
                await self._terminate()
                return False
            try:
                self.sandbox = await host.runtime.create_sandbox(self.pod, pod_dir)
                host.state_changed()
            except RuntimeError_ as e:
                host.event(self.pod, "Warning", e.reason, e.message)
                self.message = e.message
                if e.reason == "PortConflict":
                    self.phase, self.reason, self.terminal = "Failed", e.reason, True
                    await self.sync_status()
                    return False
                await self.sync_status()
                await self._sleep_or_wake(5.0)
        hosts = host.hosts_for(self.pod, self.sandbox)
        if hosts is not None:
            host.runtime.update_hosts(self.sandbox, hosts)
        if host.runtime.name != "process":
            return True
        while True:
            try:
                lookup = await self._lookup_table()
                self._volumes = setup_volumes(self.pod, pod_dir, lookup, host.node_allocatable(self.node))
                self.message = ""
                return True
            except (VolumeError, podspec.EnvError, OSError) as e:
                msg = f"MountVolume.SetUp failed: {e}"
                host.event(self.pod, "Warning", "FailedMount", msg)
                if str(e).startswith("volume") and "unsupported" in str(e):
                    self.phase, self.reason, self.message = "Failed", "UnsupportedVolume", str(e)
                    self.terminal = True
                    await self.sync_status()
                    await self._cleanup_sandbox()
                    return False
                if await self._sleep_or_wake(2.0) and self.deleting():
                    await self._terminate()
                    return False
            if self.deleting():
                await self._terminate()
                return False

    async def _sleep_or_wake(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; True when woken by an update."""
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
            return True
        except TimeoutError:
            return False

    async def _lookup_table(self) -> Callable[[str, str], Obj | None]:
        """Fetch every ConfigMap/Secret the Pod references (env, envFrom, volumes)."""
        from pumice.api.scheme import CONFIG_MAP, PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, SECRET
        from pumice.client.base import is_not_found

        wanted: set[tuple[str, str]] = set()
        for c in podspec.all_containers(self.pod):
            for src in c.get("envFrom") or []:
                if "configMapRef" in src:
                    wanted.add(("configmaps", src["configMapRef"].get("name", "")))
                if "secretRef" in src:
                    wanted.add(("secrets", src["secretRef"].get("name", "")))
            for e in c.get("env") or []:
                vf = e.get("valueFrom") or {}
                if "configMapKeyRef" in vf:
                    wanted.add(("configmaps", vf["configMapKeyRef"].get("name", "")))
                if "secretKeyRef" in vf:
                    wanted.add(("secrets", vf["secretKeyRef"].get("name", "")))
        claims: set[str] = set()
        for v in (self.pod.get("spec") or {}).get("volumes") or []:
            if "persistentVolumeClaim" in v:
                claims.add(str((v["persistentVolumeClaim"] or {}).get("claimName", "")))
            if "configMap" in v:
                wanted.add(("configmaps", v["configMap"].get("name", "")))
            if "secret" in v:
                wanted.add(("secrets", v["secret"].get("secretName", "")))
            for s in (v.get("projected") or {}).get("sources") or []:
                if "configMap" in s:
                    wanted.add(("configmaps", s["configMap"].get("name", "")))
                if "secret" in s:
                    wanted.add(("secrets", s["secret"].get("name", "")))
        table: dict[tuple[str, str], Obj | None] = {}
        for src in token_sources(self.pod):
            key = token_key(src)
            if ("serviceaccounttokens", key) in table:
                continue
            try:
                table[("serviceaccounttokens", key)] = {"token": await request_token(self.host.client, self.pod, src)}
            except Exception as e:
                raise podspec.EnvError(f"cannot request a ServiceAccount token: {e}") from e
        for claim in sorted(claims):
            pvc = await self._get_or_none(PERSISTENT_VOLUME_CLAIM, claim, self.namespace)
            table[("persistentvolumeclaims", claim)] = pvc
            pv_name = ((pvc or {}).get("spec") or {}).get("volumeName")
            if pv_name:
                table[("persistentvolumes", pv_name)] = await self._get_or_none(PERSISTENT_VOLUME, pv_name, None)
        for kind, name in sorted(wanted):
            try:
                table[(kind, name)] = await self.host.client.get(
                    CONFIG_MAP if kind == "configmaps" else SECRET, name, self.namespace)
            except Exception as e:
                if not is_not_found(e):
                    raise podspec.EnvError(f"cannot read {kind[:-1]} {name!r}: {e}") from e
                table[(kind, name)] = None
        return lambda kind, name: table.get((kind, name))

    async def _get_or_none(self, kind: Any, name: str, namespace: str | None) -> Obj | None:
        from pumice.client.base import is_not_found

        try:
            obj: Obj = await self.host.client.get(kind, name, namespace)
            return obj
        except Exception as e:
            if is_not_found(e):
                return None
            raise podspec.EnvError(f"cannot read {kind.plural} {name!r}: {e}") from e

    async def _run_init_containers(self) -> bool:
        """Run init containers in order (sidecars start and stay). False when the Pod failed or
        is being deleted."""
        for c in self._spec_containers(True):
            rec = self.records[c["name"]]
            if rec.sidecar:
                self._supervisors[c["name"]] = asyncio.get_running_loop().create_task(self._supervise(c))
                continue
            if rec.state == "terminated" and rec.exit_code == 0:
                continue
            while True:
                if self.deleting():
                    await self._terminate()
                    return False
                code = await self._run_init_once(c, rec)
                if self.deleting():
                    await self._terminate()
                    return False
                if code is None:
                    continue
                if code == 0:
                    break
                if self.restart_policy == "Never":
                    self.phase, self.terminal = "Failed", True
                    await self.sync_status()
                    await self._finish()
                    return False
                if not await self._backoff(rec):
                    await self._terminate()
                    return False
        return True

    async def _run_init_once(self, c: Obj, rec: ContainerRecord) -> int | None:
        """:meth:`_run_once` for an init container, watching for deletion meanwhile: a graceful or
        forced deletion stops the init container (an init container that never ends, like
        KubeRay's wait-gcs-ready once the head is gone, must not keep the Pod terminating)."""
        run = asyncio.get_running_loop().create_task(self._run_once(c, rec))
        try:
            while not run.done():
                self._wake.clear()
                if self.deleting():
                    await self.stop_all(0.0 if self._removed else self._grace())
                    break
                waiter = asyncio.ensure_future(self._wake.wait())
                try:
                    await asyncio.wait([run, waiter], return_when=asyncio.FIRST_COMPLETED)
                finally:  # also when cancelled: see _run_inner
                    waiter.cancel()
            return await run
        finally:
            if not run.done():
                run.cancel()

    async def _build(self, c: Obj, rec: ContainerRecord) -> StartRequest | None:
        host = self.host
        try:
            lookup = await self._lookup_table()
            env = podspec.container_env(self.pod_with_ips(), c, lookup, base=host.base_env(self.pod, c),
                                        node_allocatable=host.node_allocatable(self.node))
            argv = podspec.command_line(c, env)
            mounts = container_mounts(c, self._volumes) if host.runtime.name == "process" else []
        except (podspec.EnvError, VolumeError) as e:
            rec.state, rec.reason, rec.message = "waiting", "CreateContainerConfigError", str(e)
            host.event(self.pod, "Warning", "Failed", f"Error: {e}")
            await self.sync_status()
            return None
        return StartRequest(c, argv, env, mounts, rec.restart_count, init=rec.init and not rec.sidecar)

    def pod_with_ips(self) -> Obj:
        """The Pod with status.podIP/hostIP filled in (downward API sees them before they are written)."""
        status = dict(self.pod.get("status") or {})
        if self.sandbox is not None:
            status["podIP"] = self.sandbox.ip
            status["podIPs"] = [{"ip": self.sandbox.ip}]
        status["hostIP"] = self.host.host_ip()
        status["hostIPs"] = [{"ip": self.host.host_ip()}]
        return {**self.pod, "status": status}

    async def _run_once(self, c: Obj, rec: ContainerRecord) -> int | None:
        """Start the container (or adopt the running instance) and wait for it to end.
        Returns the exit code, or None when it could not start (already waited a retry delay)."""
        host = self.host
        assert self.sandbox is not None
        adopted = rec.current is not None
        if rec.current is None:
            req = await self._build(c, rec)
            if req is None:
                await self._sleep_or_wake(2.0)
                return None
            try:
                rec.current = await host.runtime.start(self.sandbox, self.pod, req)
            except RuntimeError_ as e:
                rec.state, rec.reason, rec.message = "waiting", e.reason, e.message
                log.warning("container %s of Pod %s/%s could not start: %s: %s", rec.name, self.namespace,
                            self.name, e.reason, e.message)
                host.event(self.pod, "Warning", "Failed", f"Error: {e.message}")
                await self.sync_status()
                # Start failures back off like crashes do (base, doubling to max), instead of
                # retrying (and writing an Event) every few seconds.
                rec.start_backoff = (host.backoff_base if rec.start_backoff == 0
                                     else min(host.backoff_max, rec.start_backoff * 2))
                await self._sleep_or_wake(rec.start_backoff)
                return None
            host.event(self.pod, "Normal", "Created", f"Created container {rec.name}")
            host.event(self.pod, "Normal", "Started", f"Started container {rec.name}")
            host.state_changed()
        cur = rec.current
        rec.state, rec.reason, rec.message = "running", "", ""
        rec.started_at, rec.ever_started = cur.started_at, True
        spec_probe = c.get("startupProbe")
        # an adopted container keeps what its probes found before the agent restarted
        rec.started = spec_probe is None or (adopted and rec.started)
        rec.ready = ((c.get("readinessProbe") is None) and rec.started and not rec.init) or (adopted and rec.ready)
        rec.kill_reason = ""
        probes = self._start_probes(c, rec) if not (rec.init and not rec.sidecar) else []
        post = ((c.get("lifecycle") or {}).get("postStart") or {})
        if post and not adopted:  # the hook ran when it started
            ok, msg = await self._hook(c, rec, post)
            if not ok:
                host.event(self.pod, "Warning", "FailedPostStartHook", msg)
                rec.kill_reason = "FailedPostStartHook"
                await host.runtime.signal(cur, signal.SIGTERM)
        await self.sync_status()
        try:
            code = await host.runtime.wait(self.sandbox, self.pod, cur)
        finally:
            for t in probes:
                t.cancel()
        rec.current = None
        rec.state = "terminated"
        rec.exit_code = code
        rec.finished_at = host.clock.now()
        rec.reason = "Completed" if code == 0 else "Error"
        if code == 137 and not rec.kill_reason and not self._killing:
            rec.reason = "OOMKilled" if self._oom_killed() else "Error"
        rec.message = ""
        rec.ready = False
        rec.started = False
        host.state_changed()
        # A container that restarts reports through the back-off step; the last one to end reports
        # with the Pod's terminal phase (in _finish), so each transition is written once.
        others = any(r.current is not None for r in self.records.values() if r is not rec)
        if (rec.init and not rec.sidecar) or others or self.deleting():
            await self.sync_status()
        return code

    def _oom_killed(self) -> bool:
        return False

    async def _backoff(self, rec: ContainerRecord) -> bool:
        """Wait the CrashLoopBackOff delay before the next restart (immediate for the first one,
        then base, doubling to max; reset after 2*max of running). False when deleted meanwhile."""
        host = self.host
        ran = rec.finished_at - rec.started_at
        if ran >= 2 * host.backoff_max:
            rec.backoff = 0.0
        delay = rec.backoff
        rec.backoff = host.backoff_base if rec.backoff == 0 else min(host.backoff_max, rec.backoff * 2)
        rec.last = rec.terminated_state()
        rec.restart_count += 1
        if delay > 0:
            rec.state, rec.reason = "waiting", "CrashLoopBackOff"
            rec.message = (f"back-off {delay:g}s restarting failed container={rec.name} "
                           f"pod={self.name}_{self.namespace}({self.uid})")
            host.event(self.pod, "Warning", "BackOff", "Back-off restarting failed container "
                       f"{rec.name} in pod {self.name}_{self.namespace}({self.uid})")
            await self.sync_status()
            deadline = host.clock.monotonic() + delay
            while (left := deadline - host.clock.monotonic()) > 0:
                await self._sleep_or_wake(left)
                if self.deleting():
                    return False
        else:
            rec.state, rec.reason, rec.message = "waiting", "ContainerCreating", ""
        return not self.deleting()

    async def _supervise(self, c: Obj) -> None:
        rec = self.records[c["name"]]
        if rec.state == "terminated" and rec.current is None and self.restored is not None:
            if not self._should_restart(rec.exit_code, rec):
                return
            if not await self._backoff(rec):
                return
        while not self.deleting():
            c = self._container_spec(c["name"])
            code = await self._run_once(c, rec)
            if code is None:
                continue
            changed = rec.kill_reason == "DefinitionChanged"
            if changed and not (self._killing or self.deleting()):
                rec.last = rec.terminated_state()
                rec.restart_count += 1
                rec.state, rec.reason, rec.message = "waiting", "ContainerCreating", ""
                continue
            if self._killing or self.deleting() or not self._should_restart(code, rec):
                return
            if not await self._backoff(rec):
                return

    def _should_restart(self, code: int, rec: ContainerRecord) -> bool:
        if rec.sidecar:
            return True
        policy = self.restart_policy
        return policy == "Always" or (policy == "OnFailure" and code != 0)

    # -- probes and hooks ------------------------------------------------------------------------

    def _start_probes(self, c: Obj, rec: ContainerRecord) -> list[asyncio.Task[None]]:
        loop = asyncio.get_running_loop()
        tasks = []
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            probe = c.get(kind)
            if probe:
                tasks.append(loop.create_task(self._probe_loop(c, rec, kind, probe)))
        return tasks

    async def _probe_once(self, c: Obj, rec: ContainerRecord, probe: Obj, timeout: float) -> tuple[bool, str]:
        rt = self.host.runtime
        assert self.sandbox is not None
        if "exec" in probe:
            cur = rec.current
            if cur is None:
                return False, "container not running"
            env = self.host.base_env(self.pod, c)
            with contextlib.suppress(Exception):
                env = podspec.container_env(self.pod_with_ips(), c, await self._lookup_table(), base=env,
                                            node_allocatable=self.host.node_allocatable(self.node))
            code, out = await rt.exec(self.sandbox, self.pod, cur, probe["exec"].get("command") or [], env, timeout)
            if code == -1:
                return False, f"command timed out: {out}"
            return code == 0, out.strip()
        if "httpGet" in probe:
            return await rt.probe_http(self.sandbox, self.pod, c, probe["httpGet"], timeout)
        if "tcpSocket" in probe:
            return await rt.probe_tcp(self.sandbox, self.pod, c, probe["tcpSocket"], timeout)
        if "grpc" in probe:
            return await rt.probe_tcp(self.sandbox, self.pod, c, {"port": probe["grpc"].get("port")}, timeout)
        return True, ""

    async def _probe_loop(self, c: Obj, rec: ContainerRecord, kind: str, probe: Obj) -> None:
        """Mirrors: kubernetes pkg/kubelet/prober/worker.go (doProbe)."""
        clock = self.host.clock
        delay, period, timeout, succ_th, fail_th = _probe_settings(probe)
        if kind == "startupProbe":
            succ_th = 1
        if kind != "startupProbe":
            while not rec.started:
                await clock.sleep(min(period, 1.0))
        await clock.sleep(delay)
        successes = failures = 0
        label = {"startupProbe": "Startup", "livenessProbe": "Liveness", "readinessProbe": "Readiness"}[kind]
        while rec.current is not None:
            ok, msg = await self._probe_once(c, rec, probe, timeout)
            if ok:
                successes, failures = successes + 1, 0
            else:
                successes, failures = 0, failures + 1
                self.host.event(self.pod, "Warning", "Unhealthy", f"{label} probe failed: {msg}")
            if kind == "readinessProbe":
                ready = rec.ready
                if ok and successes >= succ_th:
                    ready = True
                elif not ok and failures >= fail_th:
                    ready = False
                if ready != rec.ready:
                    rec.ready = ready
                    await self.sync_status()
            elif kind == "startupProbe":
                if ok:
                    rec.started = True
                    rec.ready = c.get("readinessProbe") is None
                    await self.sync_status()
                    return
                if failures >= fail_th:
                    await self._kill_unhealthy(c, rec, probe, f"Container {rec.name} failed startup probe, will be restarted")
                    return
            elif kind == "livenessProbe" and not ok and failures >= fail_th:
                await self._kill_unhealthy(c, rec, probe, f"Container {rec.name} failed liveness probe, will be restarted")
                return
            await clock.sleep(period)

    async def _kill_unhealthy(self, c: Obj, rec: ContainerRecord, probe: Obj, message: str) -> None:
        cur = rec.current
        if cur is None or self.sandbox is None:
            return
        self.host.event(self.pod, "Normal", "Killing", message)
        rec.kill_reason = "Unhealthy"
        grace = probe.get("terminationGracePeriodSeconds")
        if grace is None:
            grace = (self.pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        await self._stop_container(c, rec, float(grace))

    async def _hook(self, c: Obj, rec: ContainerRecord, handler: Obj, timeout: float = 30.0) -> tuple[bool, str]:
        rt = self.host.runtime
        assert self.sandbox is not None
        if "exec" in handler and rec.current is not None:
            env = self.host.base_env(self.pod, c)
            code, out = await rt.exec(self.sandbox, self.pod, rec.current, handler["exec"].get("command") or [],
                                      env, timeout)
            return code == 0, f"exec hook exited {code}: {out.strip()}"
        if "httpGet" in handler:
            return await rt.probe_http(self.sandbox, self.pod, c, handler["httpGet"], timeout)
        if "sleep" in handler:
            await self.host.clock.sleep(float(handler["sleep"].get("seconds", 0)))
            return True, ""
        return True, ""

    async def _stop_container(self, c: Obj, rec: ContainerRecord, grace: float) -> None:
        """preStop hook, SIGTERM, wait ``grace`` seconds in total, then SIGKILL.

        Mirrors: kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer."""
        cur = rec.current
        if cur is None or self.sandbox is None:
            return
        clock = self.host.clock
        deadline = clock.monotonic() + grace
        pre = (c.get("lifecycle") or {}).get("preStop")
        if pre and grace > 0:
            try:
                ok, msg = await asyncio.wait_for(self._hook(c, rec, pre, timeout=grace), grace)
                if not ok:
                    self.host.event(self.pod, "Warning", "FailedPreStopHook", msg)
            except TimeoutError:
                self.host.event(self.pod, "Warning", "FailedPreStopHook", "PreStop hook timed out")
        if rec.current is not cur:
            return
        await self.host.runtime.signal(cur, signal.SIGTERM)
        while rec.current is cur and (left := deadline - clock.monotonic()) > 0:
            await clock.sleep(min(left, 0.05))
        if rec.current is cur:
            await self.host.runtime.kill(self.sandbox, cur)

    # -- ending ----------------------------------------------------------------------------------

    def _grace(self) -> float:
        md = self.pod["metadata"]
        g = md.get("deletionGracePeriodSeconds")
        if g is None:
            g = (self.pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        return float(g)

    async def stop_all(self, grace: float) -> None:
        """Stop every running container (sidecars last), then sweep the sandbox."""
        self._killing = True
        regular = [c for c in self._spec_containers(False)]
        sidecars = [c for c in self._spec_containers(True) if self.records[c["name"]].sidecar]
        for group in (regular + [c for c in self._spec_containers(True) if not self.records[c["name"]].sidecar],
                      sidecars):
            await asyncio.gather(*(self._stop_container(c, self.records[c["name"]], grace) for c in group
                                   if self.records[c["name"]].current is not None))
        for t in self._supervisors.values():
            if not t.done():
                with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(t), 5.0)
        for t in self._supervisors.values():
            t.cancel()

    async def _terminate(self) -> None:
        """Graceful deletion: stop containers, tear down the sandbox, report the terminal phase,
        then delete the Pod object with gracePeriodSeconds=0."""
        from pumice.client.base import is_conflict, is_not_found

        grace = 0.0 if self._removed else self._grace()
        if any(r.current is not None for r in self.records.values()):
            self.host.event(self.pod, "Normal", "Killing", "Stopping containers")
        await self.stop_all(grace)
        await self._cleanup_sandbox()
        if self._removed:
            return
        if not self.terminal:
            self.terminal = True
            self.phase = self._phase(final=True)
        await self.sync_status()
        try:
            await self.host.client.delete(POD, self.name, self.namespace, grace_period_seconds=0,
                                          preconditions={"uid": self.uid})
        except FATAL_TYPES:
            raise
        except Exception as e:
            if not (is_not_found(e) or is_conflict(e)):
                log.warning("final delete of %s/%s failed: %s; retrying", self.namespace, self.name, e)
                self.host.retry_final_delete(self.pod)

    async def _finish(self) -> None:
        """All containers ended for good: report the terminal phase and tear down the sandbox."""
        self.terminal = True
        if self.phase not in ("Succeeded", "Failed"):
            self.phase = self._phase(final=True)
        for t in self._supervisors.values():
            t.cancel()
        await self._cleanup_sandbox()
        await self.sync_status()
        # a deletion may have arrived meanwhile
        if self.deleting():
            await self._terminate()

    async def _cleanup_sandbox(self) -> None:
        self._killing = True
        if self.sandbox is not None:
            for rec in self.records.values():
                if rec.current is not None:
                    await self.host.runtime.kill(self.sandbox, rec.current)
            await self.host.runtime.remove_sandbox(self.sandbox)
            self.host.state_changed()

    # -- status ----------------------------------------------------------------------------------

    def _phase(self, final: bool = False) -> str:
        """Mirrors: kubernetes pkg/kubelet/kubelet_pods.go getPhase."""
        if self.phase in ("Succeeded", "Failed") and self.terminal:
            return self.phase
        inits = [r for r in self.records.values() if r.init and not r.sidecar]
        for r in inits:
            if r.state == "terminated" and r.exit_code != 0 and self.restart_policy == "Never":
                return "Failed"
        if not self.initialized and not final:
            return "Pending"
        mains = [r for r in self.records.values() if not r.init and not r.ephemeral]
        running = sum(r.state == "running" for r in mains)
        never = sum(r.state == "waiting" and not r.ever_started for r in mains)
        terminated = [r for r in mains if r.state == "terminated"]
        failed = sum(r.exit_code != 0 for r in terminated)
        if final:
            if not self.initialized:
                return "Failed"
            if any(r.ever_started is False for r in mains):
                return "Failed"
            return "Failed" if any(r.exit_code != 0 or r.state != "terminated" for r in mains) else "Succeeded"
        if never:
            return "Pending"
        if running:
            return "Running"
        if len(terminated) == len(mains):
            policy = self.restart_policy
            if policy == "Always":
                return "Running"
            if policy == "OnFailure":
                return "Succeeded" if failed == 0 else "Running"
            return "Failed" if failed else "Succeeded"
        return "Running"

    def compute_status(self) -> Obj:
        now = rfc3339(self.host.clock.now())
        old = self.pod.get("status") or {}
        prev = self._written or old
        if not self.terminal:
            self.phase = self._phase()
        init_recs = [self.records[c["name"]] for c in self._spec_containers(True)]
        main_recs = [self.records[c["name"]] for c in self._spec_containers(False)]
        terminal = self.phase in ("Succeeded", "Failed")
        if terminal:
            for r in (*init_recs, *main_recs):
                r.ready = False
        incomplete_init = [r.name for r in init_recs if not r.sidecar and not (r.state == "terminated" and r.exit_code == 0)]
        unready = [r.name for r in main_recs if not r.ready] + [r.name for r in init_recs if r.sidecar and not r.ready]

        def cond(ctype: str, ok: bool, reason: str = "", message: str = "") -> Obj:
            c: Obj = {"type": ctype, "status": "True" if ok else "False"}
            if not ok and reason:
                c["reason"] = reason
                if message:
                    c["message"] = message
            for pc in prev.get("conditions") or []:
                if pc.get("type") == ctype and pc.get("status") == c["status"]:
                    c["lastTransitionTime"] = pc.get("lastTransitionTime", now)
                    break
            else:
                c["lastTransitionTime"] = now
            c["lastProbeTime"] = None
            return c

        initialized = self.initialized or not incomplete_init
        conditions = [
            cond("PodReadyToStartContainers", self.sandbox is not None and not terminal),
            cond("Initialized", initialized, "ContainersNotInitialized" if not terminal or not initialized else "PodCompleted",
                 f"containers with incomplete status: [{' '.join(incomplete_init)}]"),
            cond("ContainersReady", not unready and not terminal,
                 "PodCompleted" if terminal else "ContainersNotReady",
                 "" if terminal else f"containers with unready status: [{' '.join(unready)}]"),
            cond("Ready", not unready and not terminal, "PodCompleted" if terminal else "ContainersNotReady",
                 "" if terminal else f"containers with unready status: [{' '.join(unready)}]"),
            cond("PodScheduled", True),
        ]
        if initialized and terminal:
            conditions[1]["status"] = "True"
            conditions[1].pop("reason", None)
            conditions[1].pop("message", None)
        foreign = [c for c in old.get("conditions") or [] if c.get("type") not in KUBELET_CONDITIONS]
        status: Obj = {
            "phase": self.phase,
            "conditions": conditions + foreign,
            "hostIP": self.host.host_ip(),
            "hostIPs": [{"ip": self.host.host_ip()}],
            "startTime": rfc3339(self.start_time),
            "containerStatuses": [r.status() for r in main_recs],
            "qosClass": old.get("qosClass") or _qos_class(self.pod),
        }
        if init_recs:
            status["initContainerStatuses"] = [r.status() for r in init_recs]
        ephemeral = [r for r in self.records.values() if r.ephemeral]
        if ephemeral:
            status["ephemeralContainerStatuses"] = [r.status() for r in ephemeral]
        if self.sandbox is not None:
            status["podIP"] = self.sandbox.ip
            status["podIPs"] = [{"ip": self.sandbox.ip}]
        elif prev.get("podIP"):
            status["podIP"] = prev["podIP"]
            status["podIPs"] = prev.get("podIPs") or [{"ip": prev["podIP"]}]
        if self.reason:
            status["reason"] = self.reason
        if self.message and (terminal or self.reason):
            status["message"] = self.message
        return status

    async def sync_status(self) -> None:
        """Write status when it differs from what was last written."""
        async with self._status_lock:
            if self._removed:
                return
            status = self.compute_status()
            if status == self._written:
                return
            patch: Obj = dict(status)
            for k in (self._written or {}):
                if k not in status:
                    patch[k] = None
            try:
                updated = await self.host.client.patch(POD, self.name, {"status": patch}, self.namespace,
                                                       subresource="status")
            except Exception as e:
                from pumice.client.base import is_not_found

                if is_not_found(e):
                    self._removed = True
                    return
                log.warning("status update of %s/%s failed: %s", self.namespace, self.name, e)
                return
            self._written = status
            if isinstance(updated, dict) and updated.get("metadata", {}).get("uid") == self.uid:
                self.pod = {**self.pod, "status": updated.get("status", status)}


def _qos_class(pod: Obj) -> str:
    """Mirrors: kubernetes pkg/apis/core/v1/helper/qos/qos.go GetPodQOS (cpu and memory only)."""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for c in podspec.all_containers(pod):
        res = c.get("resources") or {}
        req = {k: v for k, v in (res.get("requests") or {}).items() if k in ("cpu", "memory")}
        lim = {k: v for k, v in (res.get("limits") or {}).items() if k in ("cpu", "memory")}
        requests.update(req)
        limits.update(lim)
        if set(lim) != {"cpu", "memory"}:
            guaranteed = False
        for k, v in req.items():
            if k in lim and podspec.quantity.parse_quantity(v) != podspec.quantity.parse_quantity(lim[k]):
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"
