"""The node agent (kubelet): registers Nodes, runs the Pods bound to them, reports their status,
serves their logs.

One agent hosts one or more logical Nodes over one container runtime:

- ``process``: Pods are local processes (one shim per container); as root each Pod gets its own
  network namespace on the instance's bridge (see :mod:`pumice.node.network`), with an egress
  proxy and an API server forwarder on the bridge address.
- ``simulated``: nothing runs; lifecycles play out on the project clock
  (:mod:`pumice.node.runtime.simulated`), thousands of Nodes per process.

Data dir layout (process runtime)::

    <data_dir>/state.json                                  adopted Pods (see :meth:`NodeAgent._save_state`)
    <data_dir>/bin/pod-init                                generated container init script
    <data_dir>/pods/<ns>_<pod>_<uid>/<container>/<n>.log   CRI-format log of instance n (restartCount)
    <data_dir>/pods/<ns>_<pod>_<uid>/<container>/<n>.exit  its exit code
    <data_dir>/pods/<ns>_<pod>_<uid>/volumes/<volume>/     emptyDir, configMap, secret, ... contents
    <data_dir>/pods/<ns>_<pod>_<uid>/tmp/                  the Pod's private /tmp

Mirrors: kubernetes pkg/kubelet (kubelet.go syncLoop, lifecycle/predicate.go admission,
nodestatus/setters.go, nodelease/controller.go, server/server.go logs).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import itertools
import json
import logging
import os
import pwd
import shutil
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pumice._util.clock import Clock, default_clock, parse_rfc3339, rfc3339, rfc3339_micro
from pumice._util.errors import FATAL_TYPES, watch_task
from pumice._util.files import remove_tree, scan_tree
from pumice.api import Obj, meta, quantity
from pumice.api.scheme import ENDPOINTS, LEASE, NAMESPACE, NODE, POD, SERVICE
from pumice.api.selectors import from_set
from pumice.client.base import ApiError, KubeClient, create_unless_exists, is_not_found
from pumice.client.informer import Informer
from pumice.node import podspec
from pumice.node.logs import LogServer
from pumice.node.metrics import UsageSampler
from pumice.node.network import HostNetwork, NetnsNetwork, NetworkError, hosts_content, run
from pumice.node.provisioner import LocalPathProvisioner
from pumice.node.proxy import EgressProxy, TcpForwarder, package_index_hosts
from pumice.node.runtime.base import Container, ContainerRuntime, RuntimeError_, Sandbox
from pumice.node.runtime.process import DEFAULT_PATH, MemoryCgroups, ProcessRuntime, stdin_socket_path
from pumice.node.runtime.simulated import ANNOTATION_CPU_USAGE, ANNOTATION_MEMORY_USAGE, SimulatedRuntime
from pumice.node.services import ServiceDirectory
from pumice.node.streaming import ExecTarget, ForwardTarget, StreamServer, nsenter_prefix
from pumice.node.worker import ContainerRecord, PodWorker

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
KUBELET_VERSION = "v1.32.3"
PROXY_PORT = 3128
STATUS_SYNC_PERIOD = 10.0
"""Seconds between tries of a rejected Pod's status write that failed (kubelet status_manager.go
syncPeriod: the status manager keeps a status until the API has it and retries every 10 s)."""


class AgentError(Exception):
    """Bad agent configuration (the message says what to change)."""


def check_node_capacity(resource: str, q: str) -> None:
    """A Node capacity given by hand (``--node-cpu``, ``--node-memory``) must be a positive
    quantity that a kubelet can report: the kubelet builds its capacity from int64 amounts
    (cpu as ``NewMilliQuantity(cores*1000)``, memory as ``NewQuantity(bytes)``), so ``1e400``
    cpu could never be a Node's.

    Raises:
        AgentError: ``'1e400' is more than a Node can have (at most 9223372036854775807m cpu)``,
            or ``'0' is not a positive quantity``.
    """
    if not quantity.is_quantity(q) or quantity.parse_quantity(q) <= 0:
        raise AgentError(f"{q!r} is not a positive quantity")
    if resource == "cpu" and quantity.milli_value(q) > quantity.INT64_MAX:
        raise AgentError(f"{q!r} is more than a Node can have (at most {quantity.INT64_MAX}m cpu)")
    if resource != "cpu" and quantity.value(q) > quantity.INT64_MAX:
        raise AgentError(f"{q!r} is more than a Node can have (at most {quantity.INT64_MAX} bytes of {resource})")


@dataclass
class NodeState:
    """One logical Node: its published capacity and what its admitted Pods request."""

    name: str
    capacity: dict[str, str]
    labels: dict[str, str]
    taints: list[Obj]
    admitted: dict[str, dict[str, int]] = field(default_factory=dict)
    index: int = 0
    _units: dict[str, int] | None = None

    @property
    def allocatable(self) -> dict[str, str]:
        return dict(self.capacity)

    def units(self) -> dict[str, int]:
        if self._units is None:
            self._units = {k: (quantity.milli_value(v) if k == "cpu" else quantity.value(v))
                           for k, v in self.capacity.items()}
        return self._units


def pod_dir_name(namespace: str, name: str, uid: str) -> str:
    """``<namespace>_<name>_<uid>``, with a name longer than 64 characters cut to 55 plus ``-`` and
    8 hex digits of its sha256, so that the directory name (at most 63 + 64 + 36 + 2 = 165
    bytes) always fits the file-system limit of 255 for any valid Pod name (253)."""
    if len(name) > 64:
        name = name[:55] + "-" + hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{namespace}_{name}_{uid}"


def event_name(object_name: str, suffix: str) -> str:
    """``<object name>.<suffix>`` within the 253-character name limit (the object name is cut)."""
    return f"{object_name[:252 - len(suffix)]}.{suffix}"


def _typed_handlers(inf: Informer, fn: Callable[[str, Obj], None]) -> None:
    """Feed an informer's add/update/delete callbacks to ``fn(type, obj)``."""
    inf.add_event_handler(lambda o: fn("ADDED", o), lambda _o, n: fn("MODIFIED", n), lambda o: fn("DELETED", o))


def needs_final_delete(pod: Obj) -> bool:
    """Whether a deleting, terminal Pod still needs the agent's final delete (gracePeriodSeconds=0,
    this uid). Not when its ``deletionGracePeriodSeconds`` is 0 already: the API server removed it
    at once when it had no finalizers (its MODIFIED event and its DELETED one come from the same
    request) and removes it when the last finalizer goes otherwise, so a grace-0 delete changes
    nothing then (a 404, or the same object). The kubelet's status manager learns the same with
    the GET it makes first (``Pod does not exist on the server``); the agent skips the request.

    Mirrors: kubernetes pkg/kubelet/status/status_manager.go (syncPod, canBeDeleted) and
    staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go
    (updateForGracefulDeletionAndFinalizers: a grace period of 0 without finalizers deletes).
    """
    return (pod.get("metadata") or {}).get("deletionGracePeriodSeconds") != 0


def _rmtree_logged(path: Path) -> None:
    """Remove a Pod's directory (``<ns>_<name>_<uid>``: logs, volumes, private /tmp with e.g. Ray's
    runtime_env virtualenvs, tens of thousands of files) with the files unlinked in parallel
    (:func:`pumice._util.files.remove_tree`); what cannot be removed is logged with the directory
    and the first error."""
    errors = remove_tree(scan_tree(path))
    if errors:
        log.warning("removing Pod files %s left %d entries, e.g. %s", path, len(errors), errors[0])


#: The reason of the Warning Event on a Pod whose usage annotation is refused (pumice's own: the
#: annotations are the simulated runtime's, with no upstream counterpart).
REASON_INVALID_SIMULATED_USAGE = "InvalidSimulatedUsage"


def simulated_usage_annotation(ann: Mapping[str, str], key: str) -> tuple[Fraction | None, str | None]:
    """One usage annotation of a simulated Pod (``pumice.io/sim-cpu-usage``: cores;
    ``pumice.io/sim-memory-usage``: bytes): ``(value, None)``; ``(None, None)`` when absent;
    ``(None, why)`` for a value that is no quantity (``ParseQuantity`` refuses surrounding
    spaces too), is negative (a usage below zero is no usage) or is too large: more than int64
    nanocores of cpu or int64 bytes of memory, the units metrics.k8s.io reports (``"1e400"``
    overflowed the agent's float and failed every metrics read). A refused value is treated as
    absent, not reported as metrics."""
    if key not in ann:
        return None, None
    raw = ann[key]
    try:
        if raw != raw.strip():
            raise quantity.QuantityError(raw)
        value = quantity.parse_quantity(raw)
    except quantity.QuantityError:
        return None, f"annotation {key}: {raw!r} is not a quantity"
    if value < 0:
        return None, f"annotation {key}: {raw!r} is negative"
    if value * (10**9 if key == ANNOTATION_CPU_USAGE else 1) > quantity.INT64_MAX:
        return None, f"annotation {key}: {raw!r} is too large"
    return value, None


def _pgid(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except OSError:
        return -1


def _machine_memory() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 * 1024**3


def _default_image_envs() -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    return {"rayproject/ray": venv_bin, "*ray*": venv_bin, "python": venv_bin}


@dataclass(frozen=True)
class AgentConfig:
    """What a node agent runs and how (every setting of :class:`NodeAgent`; the CLIs build one).

    Attributes:
        runtime: ``"process"`` or ``"simulated"``.
        data_dir: state, logs and Pod directories (process runtime; anywhere, /tmp included: paths
            under /tmp that Pods need are bound into their private /tmp).
        nodes: how many logical Nodes this agent hosts.
        node_cpu, node_memory: per-Node capacity (quantities); default: the machine's.
        node_gpus: ``nvidia.com/gpu`` capacity per Node.
        node_pods: ``pods`` capacity per Node.
        node_name_prefix: names are ``<prefix>-<i>`` when ``nodes > 1``; one Node is named after
            the machine's hostname unless ``node_names`` is given.
        labels, taints: extra Node labels and taints.
        clock: project clock (default: the process-wide one).
        image_envs: image prefix (or fnmatch pattern) -> directory put first on PATH.
        network: ``auto`` (netns as root, host otherwise), ``netns`` or ``host``.
        pod_cidr: Pod addresses (netns mode; the first address goes on the bridge). Default: the
            bridge's range when it exists, else a free /22 of 10.244.0.0/16 derived from the
            bridge name (:func:`pumice.node.network.choose_instance_network`).
        bridge: bridge name (netns mode; default ``pumice-<8 hex of sha256(network_scope)>``).
        network_scope: what names this instance's network (default: the data dir); agents with
            the same scope (or ``bridge``) share one bridge and Pod range.
        pod_egress: ``proxy`` (HTTP(S) proxy on the bridge, package indexes only), ``nat``
            (masquerade; changes ip_forward and iptables, restored at stop) or ``none``.
        apiserver_url_for_pods: the API server URL as seen from the agent's host; Pods get it as
            KUBERNETES_SERVICE_HOST/PORT (forwarded from the bridge address in netns mode).
        keep_pods: leave Pods running when the agent stops (adopted again at the next start).
        seed: seed of the simulated runtime's jitter.
        sim_start_latency, sim_start_jitter, sim_image_durations: simulated runtime timings
            (seconds).
        backoff_base, backoff_max: CrashLoopBackOff delays (seconds; upstream 10 and 300).
        lease_renew_interval: Lease heartbeat period (seconds; upstream 10); None disables.
        record_events: write Events (default: all on the process runtime; on the simulated
            runtime only Warning ones, the failures a user can act on; False: none).
        egress_allow: hosts the egress proxy lets Pods reach (default: the package indexes).
        stop_grace: cap on each Pod's grace period when the agent stops (seconds).
        usage_period: seconds between the usage samples ``kubectl top`` reads (after a first one
            at start and one 2 s later); metrics-server's default resolution is 15.
        provision_volumes: run the local-path provisioner (:mod:`pumice.node.provisioner`) for
            the claims of ``pumice.dev/local-path`` StorageClasses: directories under
            ``<data_dir>/pv/`` with the process runtime, PersistentVolumes only with the simulated
            one (whose Pods mount nothing), so a StatefulSet's claims bind on either runtime.
    """

    runtime: Literal["process", "simulated"] = "process"
    data_dir: Path | str = "pumice-data"
    nodes: int = 1
    node_cpu: str | int | None = None
    node_memory: str | int | None = None
    node_gpus: int = 0
    node_pods: int = 110
    node_name_prefix: str = "pumice-node"
    node_names: list[str] | None = None
    labels: Mapping[str, str] | None = None
    taints: list[Obj] | None = None
    clock: Clock | None = None
    image_envs: Mapping[str, str] | None = None
    network: Literal["auto", "netns", "host"] = "auto"
    pod_cidr: str | None = None
    bridge: str | None = None
    network_scope: str | None = None
    pod_egress: Literal["proxy", "nat", "none"] = "proxy"
    apiserver_url_for_pods: str | None = None
    keep_pods: bool = False
    seed: int = 0
    sim_start_latency: float = 1.0
    sim_start_jitter: float = 0.0
    sim_image_durations: Mapping[str, float] | None = None
    backoff_base: float = 10.0
    backoff_max: float = 300.0
    lease_renew_interval: float | None = 10.0
    record_events: bool | None = None
    egress_allow: list[str] | None = None
    stop_grace: float = 35.0
    usage_period: float = 15.0
    instance_type: str | None = None
    provision_volumes: bool = True

    def check(self) -> None:
        """Raises:
            AgentError: an unknown runtime, network mode or egress mode, or fewer than 1 Node."""
        if self.runtime not in ("process", "simulated"):
            raise AgentError(f"unknown runtime {self.runtime!r} (process or simulated)")
        if self.network not in ("auto", "netns", "host"):
            raise AgentError(f"unknown network mode {self.network!r} (auto, netns or host)")
        if self.pod_egress not in ("proxy", "nat", "none"):
            raise AgentError(f"unknown pod egress {self.pod_egress!r} (proxy, nat or none)")
        if self.nodes < 1:
            raise AgentError("nodes must be at least 1")


class NodeAgent:
    """The node agent. See the module docstring.

    Args:
        client: API client.
        config: every setting (:class:`AgentConfig`); or give them as keyword arguments, which
            build the config (``NodeAgent(client, runtime="simulated", nodes=3)``).
    """

    def __init__(self, client: KubeClient, config: AgentConfig | None = None, **settings: Any) -> None:
        if config is not None and settings:
            raise TypeError("give an AgentConfig or keyword settings, not both")
        cfg = config if config is not None else AgentConfig(**settings)
        cfg.check()
        self.config = cfg
        self.client = client
        self._init_settings(cfg)
        self.nodes: dict[str, NodeState] = self._build_nodes(cfg)
        self._init_state()

    def _init_settings(self, cfg: AgentConfig) -> None:
        self.runtime_kind = cfg.runtime
        self.data_dir = Path(cfg.data_dir).resolve()
        self.clock: Clock = cfg.clock or default_clock()
        self.image_envs = dict(cfg.image_envs) if cfg.image_envs is not None else _default_image_envs()
        self.network_mode = cfg.network
        self.pod_cidr = cfg.pod_cidr  # the chosen range once the network is up
        self.bridge = cfg.bridge
        self.network_scope = cfg.network_scope
        self.pod_egress = cfg.pod_egress
        self.apiserver_url_for_pods = cfg.apiserver_url_for_pods
        self.keep_pods = cfg.keep_pods
        self.seed = cfg.seed
        self.backoff_base = cfg.backoff_base
        self.backoff_max = cfg.backoff_max
        self.lease_renew_interval = cfg.lease_renew_interval
        self.record_events = (cfg.runtime == "process") if cfg.record_events is None else cfg.record_events
        self.record_warnings = True if cfg.record_events is None else cfg.record_events
        self.egress_allow = cfg.egress_allow
        self.stop_grace = cfg.stop_grace
        self.usage_period = cfg.usage_period
        self.provision_volumes = cfg.provision_volumes
        self._sim = dict(start_latency=cfg.sim_start_latency, start_jitter=cfg.sim_start_jitter,
                         image_durations=cfg.sim_image_durations)

    def _build_nodes(self, cfg: AgentConfig) -> dict[str, NodeState]:
        """The logical Nodes: names, capacity (the machine's unless given), labels and taints.

        Raises:
            AgentError: names that do not match ``nodes``, or a capacity that is no quantity.
        """
        node_names = cfg.node_names
        if node_names is None:
            if cfg.nodes == 1:
                node_names = [socket.gethostname().split(".")[0].lower() or cfg.node_name_prefix]
            else:
                node_names = [f"{cfg.node_name_prefix}-{i}" for i in range(cfg.nodes)]
        if len(node_names) != cfg.nodes or len(set(node_names)) != cfg.nodes:
            raise AgentError("node_names must list `nodes` distinct names")
        cpu = str(cfg.node_cpu if cfg.node_cpu is not None else (os.cpu_count() or 1))
        mem = str(cfg.node_memory if cfg.node_memory is not None else f"{_machine_memory() // 1024}Ki")
        capacity = {"cpu": cpu, "memory": mem, "pods": str(cfg.node_pods)}
        for resource, q in (("cpu", cpu), ("memory", mem)):
            try:
                check_node_capacity(resource, q)
            except AgentError as e:
                raise AgentError(f"bad node capacity: {e}") from None
        # a kubelet always reports its node filesystem as ephemeral-storage; simulated Nodes report the
        # data dir's too, so that Pods requesting it fit there as on a real Node (trial 15 F-5)
        try:
            st = os.statvfs(self.data_dir if self.data_dir.exists() else self.data_dir.parent)
        except OSError as e:
            log.warning("node capacity: no ephemeral-storage (statvfs of %s: %s)", self.data_dir, e)
        else:
            capacity["ephemeral-storage"] = str(st.f_blocks * st.f_frsize)
        if cfg.node_gpus:
            capacity["nvidia.com/gpu"] = str(cfg.node_gpus)
        nodes: dict[str, NodeState] = {}
        for index, n in enumerate(node_names):
            lbl = {
                "kubernetes.io/hostname": n,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
            }
            if cfg.instance_type:
                lbl["node.kubernetes.io/instance-type"] = cfg.instance_type
            lbl.update(cfg.labels or {})
            nodes[n] = NodeState(n, dict(capacity), lbl, list(cfg.taints or []), index=index)
        return nodes

    def _init_state(self) -> None:
        self.runtime: ContainerRuntime
        self.network: NetnsNetwork | HostNetwork | None = None
        self.directory = ServiceDirectory()
        self.workers: dict[str, PodWorker] = {}
        self.finished: dict[str, PodWorker | None] = {}
        self._final_deleting: set[str] = set()  # uids whose final delete is being sent or retried
        self._tasks: list[asyncio.Task[Any]] = []
        self._bg: set[asyncio.Task[Any]] = set()
        self._fatal: asyncio.Future[BaseException] | None = None  # what a Pod worker or _bg task died of
        self._log_server: LogServer | None = None
        self._proxy: EgressProxy | None = None
        self._forwarder: TcpForwarder | None = None
        self._kube_host = ""
        self._kube_port = 0
        self._state_dirty = False
        self._state: dict[str, Obj] = {}
        self._hosts_pending = False
        self._event_seq = itertools.count()
        self._usage_warned: dict[str, set[str]] = {}  # Pod uid -> the refused usage annotations warned of
        self._started = False
        self._nat_rule: list[str] | None = None
        self._ip_forward_before: str | None = None
        self.kubelet_port = 0
        self.pods_synced = asyncio.Event()
        self._informers: list[Informer] = []

    # -- WorkerHost ------------------------------------------------------------------------------

    def node_allocatable(self, node: str) -> Mapping[str, str]:
        return self.nodes[node].allocatable

    def host_ip(self) -> str:
        if self.network is not None:
            return self.network.host_ip
        return "10.0.0.1"

    def _image_dir(self, image: str) -> str | None:
        import fnmatch

        for pat, d in self.image_envs.items():
            if image.startswith(pat) or fnmatch.fnmatch(image, pat):
                return d
        return None

    def base_env(self, pod: Obj, container: Obj) -> dict[str, str]:
        """The kubelet-provided environment of a container (before its own env/envFrom)."""
        hostname = (pod.get("spec") or {}).get("hostname") or meta.name(pod)
        if self.runtime_kind == "simulated":
            return {"HOSTNAME": hostname}
        d = self._image_dir(container.get("image", ""))
        env = {
            "PATH": f"{d}:{DEFAULT_PATH}" if d else DEFAULT_PATH,
            "HOME": pwd.getpwuid(os.getuid()).pw_dir,
            "HOSTNAME": hostname,
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }
        for k, v in os.environ.items():
            if k.startswith(("PIP_", "UV_")) or k in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "TZ"):
                env[k] = v
        if self._kube_host:
            h, p = self._kube_host, str(self._kube_port)
            env.update({
                "KUBERNETES_SERVICE_HOST": h,
                "KUBERNETES_SERVICE_PORT": p,
                "KUBERNETES_SERVICE_PORT_HTTPS": p,
                "KUBERNETES_PORT": f"tcp://{h}:{p}",
                f"KUBERNETES_PORT_{p}_TCP": f"tcp://{h}:{p}",
                f"KUBERNETES_PORT_{p}_TCP_PROTO": "tcp",
                f"KUBERNETES_PORT_{p}_TCP_PORT": p,
                f"KUBERNETES_PORT_{p}_TCP_ADDR": h,
            })
        if self._proxy is not None and isinstance(self.network, NetnsNetwork):
            url = f"http://{self.network.gateway}:{self._proxy.port}"
            no_proxy = ",".join(["localhost", "127.0.0.1", "::1", "0.0.0.0", self.network.cidr, self.network.gateway,
                                 ".svc", ".cluster.local", "kubernetes", *([self._kube_host] if self._kube_host else [])])
            env.update({"HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
                        "NO_PROXY": no_proxy, "no_proxy": no_proxy})
        return env

    def hosts_for(self, pod: Obj, sandbox: Sandbox) -> str | None:
        if self.runtime_kind == "simulated":
            return None
        spec = pod.get("spec") or {}
        hostname = spec.get("hostname") or meta.name(pod)
        fqdn = ""
        if spec.get("subdomain"):
            fqdn = f"{hostname}.{spec['subdomain']}.{meta.namespace(pod)}.svc.cluster.local"
        return hosts_content(sandbox.ip, hostname, fqdn, self.directory.entries(meta.namespace(pod)),
                             spec.get("hostAliases") or [])

    def event(self, pod: Obj, type_: str, reason: str, message: str) -> None:
        if not (self.record_events or (type_ == "Warning" and self.record_warnings)):
            return
        md = pod.get("metadata") or {}
        now = rfc3339(self.clock.now())
        node = (pod.get("spec") or {}).get("nodeName", "")
        ev = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": event_name(str(md.get("name")), f"{int(self.clock.now() * 1e3):x}{next(self._event_seq):04x}"),
                         "namespace": md.get("namespace", "default")},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": md.get("name"),
                               "namespace": md.get("namespace"), "uid": md.get("uid")},
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": "kubelet", "host": node},
            "reportingComponent": "kubelet",
            "reportingInstance": node,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        self._spawn(self._create_event(ev))

    async def _create_event(self, ev: Obj) -> None:
        """Create one Event; a failure is logged and the Event dropped, as client-go's event
        recorder does (an Event is best effort and never holds up the Pod it is about)."""
        try:
            await self.client.create(ev)
        except FATAL_TYPES:
            raise  # not dropped and carried on: the agent ends (see watch)
        except Exception as e:
            obj = ev["involvedObject"]
            log.warning("node agent: could not record Event %s %r for pod %s/%s: %s",
                        ev["reason"], ev["message"], obj.get("namespace"), obj.get("name"), e)

    def _spawn(self, coro: Any) -> None:
        t = asyncio.get_running_loop().create_task(coro, name=f"node-agent {coro.__name__}")
        self._bg.add(t)
        t.add_done_callback(self._bg.discard)
        self.watch(t)

    def watch(self, task: asyncio.Task[Any]) -> None:
        """See :meth:`pumice.node.worker.WorkerHost.watch`. A Pod worker's or a background task's
        end follows :func:`pumice._util.errors.watch_task`: a FATAL_TYPES error (MemoryError)
        ends the ``node-agent pods`` task with it, and the agent fails (:meth:`wait_stopped`); any
        other exception (e.g. an API timeout a task did not catch) is logged with the task's name
        and traceback, and the agent runs on, as the kubelet does."""
        watch_task(task, owner="node agent", logger=log, on_fatal=self._task_failed)

    def _task_failed(self, e: BaseException) -> None:
        if self._fatal is not None and not self._fatal.done():
            self._fatal.set_result(e)

    async def _watch_pods(self) -> None:
        assert self._fatal is not None
        raise await self._fatal

    def state_changed(self) -> None:
        self._state_dirty = True

    def pod_dir(self, pod: Obj) -> Path:
        md = pod["metadata"]
        return self.data_dir / "pods" / pod_dir_name(md.get("namespace", ""), md["name"], md["uid"])

    def worker_finished(self, worker: PodWorker) -> None:
        node = self.nodes.get(worker.node)
        if node is not None:
            node.admitted.pop(worker.uid, None)
        if self.workers.get(worker.uid) is worker:
            del self.workers[worker.uid]
            self.finished[worker.uid] = worker if self.runtime_kind == "process" else None
        self.state_changed()

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def tasks(self) -> list[asyncio.Task[Any]]:
        """The agent's own long-running tasks that :meth:`start` started (named ``node-agent
        <part>``: the local-path provisioner, the Lease heartbeat, ...), for a caller to watch: one
        that ended with an exception has stopped that part of the agent for good, so the agent
        has failed (:meth:`wait_stopped` raises it; ``pumice simulate`` ends the run)."""
        return list(self._tasks)

    async def run(self, stop_event: asyncio.Event | None = None) -> None:
        """Start, run until ``stop_event`` is set (or cancelled), then stop.

        Raises:
            AgentError: see :meth:`start`.
            BaseException: what one of :attr:`tasks` ended with (see :meth:`wait_stopped`),
                after the agent has stopped.
        """
        await self.start()
        try:
            await self.wait_stopped(stop_event or asyncio.Event())
        finally:
            await self.stop()

    async def wait_stopped(self, stop_event: asyncio.Event) -> None:
        """Return when ``stop_event`` is set; raise the exception of the first of :attr:`tasks`
        that fails before (logged with the task's name), as a component of ``pumice up`` that
        fails ends it. A task that ends without an exception is no failure."""
        stop = asyncio.ensure_future(stop_event.wait())
        waiting: set[asyncio.Future[Any]] = {stop, *self._tasks}
        try:
            while not stop.done():
                done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    if isinstance(t, asyncio.Task) and not t.cancelled() and (e := t.exception()) is not None:
                        log.error("node agent: %s failed: %s: %s", t.get_name(), type(e).__name__, e)
                        raise e
        finally:
            stop.cancel()

    async def start(self) -> None:
        """Set up the runtime and network, register the Nodes, start watching Pods.

        Raises:
            AgentError: the configuration cannot work on this machine.
        """
        if self._started:
            return
        self._started = True
        try:
            await self._start()
        except BaseException:
            try:
                await self.stop()
            except Exception:
                log.exception("node agent: stopping after a failed start failed too (the start's error follows)")
            raise

    async def _start(self) -> None:
        root = os.geteuid() == 0
        if self.runtime_kind == "simulated":
            self.runtime = SimulatedRuntime(self.clock, seed=self.seed, pod_cidr=self.pod_cidr or "10.244.0.0/16",
                                            **self._sim)  # type: ignore[arg-type]
        else:
            mode = self.network_mode
            if mode == "auto":
                mode = "netns" if root and shutil.which("ip") and shutil.which("unshare") else "host"
            if mode == "netns" and not root:
                raise AgentError("--network netns needs root (or run with --network host)")
            self.data_dir.mkdir(parents=True, exist_ok=True)
            if mode == "netns":
                network = NetnsNetwork(self.pod_cidr, default_via_gateway=self.pod_egress == "nat",
                                       scope=str(self.data_dir), bridge=self.bridge,
                                       bridge_scope=self.network_scope or str(self.data_dir))
                try:
                    await network.ensure_bridge()
                except NetworkError as e:
                    raise AgentError(str(e)) from None
                self.network = network
                self.pod_cidr = network.cidr
            else:
                self.network = HostNetwork()
            self.runtime = ProcessRuntime(self.data_dir, self.network, self.clock, root=root,
                                          pod_paths=list(self.image_envs.values()))
            self._load_state()
            await self._start_servers()
            self.directory.api_address = self._kube_host if mode == "netns" else ""
        await self._register_nodes()
        loop = asyncio.get_running_loop()
        self._fatal = loop.create_future()
        self._tasks.append(loop.create_task(self._watch_pods(), name="node-agent pods"))
        self._start_informers()
        if self.runtime_kind == "process":
            self._tasks.append(loop.create_task(self._state_loop(), name="node-agent state"))
            self._tasks.append(loop.create_task(self._gc_orphans(), name="node-agent orphan collector"))
        if self.provision_volumes:
            provisioner = LocalPathProvisioner(self.client, self.data_dir / "pv", self.clock,
                                               record_events=self.record_events,
                                               make_dirs=self.runtime_kind == "process")
            self._tasks.append(loop.create_task(provisioner.run(), name="node-agent local-path provisioner"))
        if self.lease_renew_interval:
            self._tasks.append(loop.create_task(self._heartbeat_loop(), name="node-agent heartbeat"))

    def _start_informers(self) -> None:
        """Pods (of this agent's Nodes when it hosts one simulated Node) and, for the process
        runtime, Services and Endpoints (hosts files).
        Handlers are adapters to ``(type, obj)`` callbacks; a Pod whose uid changed under the same
        name (deleted and re-created while the watch was down) is a delete of the old one and an
        add of the new one, as the kubelet keys Pods by uid."""
        single = len(self.nodes) == 1
        fs = f"spec.nodeName={next(iter(self.nodes))}" if single and self.runtime_kind == "simulated" else None
        pods = Informer(self.client, POD, clock=self.clock, field_selector=fs)

        def pod_update(old: Obj, new: Obj) -> None:
            if meta.uid(old) != meta.uid(new):
                self._on_pod("DELETED", old)
                self._on_pod("ADDED", new)
            else:
                self._on_pod("MODIFIED", new)

        pods.add_event_handler(lambda o: self._on_pod("ADDED", o), pod_update, lambda o: self._on_pod("DELETED", o))
        self._informers = [pods]
        if self.runtime_kind == "process":
            for kind, fn in ((SERVICE, self._on_service), (ENDPOINTS, self._on_endpoints)):
                inf = Informer(self.client, kind, clock=self.clock)
                _typed_handlers(inf, fn)
                self._informers.append(inf)
        for inf in self._informers:
            inf.start()
            assert inf.task is not None
            self._tasks.append(inf.task)  # ends only with a MemoryError: the agent fails (wait_stopped)

        async def synced() -> None:
            await pods.wait_synced()
            self.pods_synced.set()

        self._tasks.append(asyncio.get_running_loop().create_task(synced(), name="node-agent pods synced"))

    async def stop(self) -> None:
        """Stop watching; stop every Pod (unless ``keep_pods``; the simulated runtime stops none
        and writes nothing: its Pods resume as they were at the next start) and remove the
        network. A no-op when not started; safe after a failed :meth:`start`."""
        if not self._started:
            return
        for inf in self._informers:
            await inf.stop()
        self._informers = []
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except asyncio.CancelledError:
                pass
            except Exception:
                log.exception("node agent: task %s failed while stopping", t.get_name())
        self._tasks.clear()
        workers = list(self.workers.values())
        if self.keep_pods and self.runtime_kind == "process":
            self._save_state()
            for w in workers:
                for t in [*w._supervisors.values(), *([w._task] if w._task else [])]:
                    t.cancel()
            self._save_state()
        elif self.runtime_kind == "simulated":
            # Nothing runs, so nothing is stopped and nothing written: each worker is cancelled
            # before its containers end (an exit 143 written for one container of a two-container
            # restartPolicy-Never Pod made KubeRay delete that head: trial 12 F-2), and at the
            # next start every Pod resumes as it was.
            for w in workers:
                await w.cancel()
            for w in workers:
                await w._cleanup_sandbox()
            self.workers.clear()
        else:
            for w in workers:
                if w._task is not None:
                    w._task.cancel()

            async def stop_one(w: PodWorker) -> None:
                md = w.pod["metadata"]
                try:
                    await w.stop_all(min(self.stop_grace, w._grace()))
                except Exception:
                    log.exception("node agent: stopping the containers of pod %s/%s failed",
                                  md.get("namespace"), md.get("name"))
                try:
                    await w._cleanup_sandbox()
                except Exception:
                    log.exception("node agent: cleaning up the sandbox of pod %s/%s failed",
                                  md.get("namespace"), md.get("name"))

            await asyncio.gather(*(stop_one(w) for w in workers))
            for w in workers:
                await w.cancel()
            if self.runtime_kind == "process":
                # What a node reboot leaves: the Pods' containers ended; at the next start each
                # Pod is run again in a new sandbox that keeps its IP where it can, with its
                # startTime, its restartCounts + 1 and a SandboxChanged event.
                self._state = {w.uid: {**self._worker_state(w), "stopped": True}
                               for w in workers if not w.terminal and not w.deleting()}
                self.workers.clear()
                self._save_state()
                if isinstance(self.network, NetnsNetwork):
                    await self.network.remove_bridge()
                cgroups = getattr(getattr(self, "runtime", None), "cgroups", None)
                if cgroups is not None and cgroups.root is not None:
                    with contextlib.suppress(OSError):
                        cgroups.root.rmdir()  # only when no other agent's Pod cgroup is left
        for t in list(self._bg):
            t.cancel()
        for srv in (self._log_server, self._proxy, self._forwarder):
            if srv is not None:
                await srv.close()
        await self._undo_nat()
        self._started = False

    # -- servers and network ---------------------------------------------------------------------

    async def _start_servers(self) -> None:
        assert self.network is not None
        hosts = ["127.0.0.1"]
        if isinstance(self.network, NetnsNetwork):
            await self.network.ensure_bridge()
            hosts.append(self.network.gateway)
        self._sampler = UsageSampler(self._usage_pods, lambda: list(self.nodes), self.clock.now)
        self._log_server = LogServer(self._log_source, self.clock,
                                     streams=StreamServer(self._exec_target, self._forward_target),
                                     usage=self._sampler.usage)
        self._tasks.append(asyncio.get_running_loop().create_task(self._usage_loop(), name="node-agent usage sampler"))
        self.kubelet_port = await self._log_server.start(hosts)
        if self.apiserver_url_for_pods:
            u = urlsplit(self.apiserver_url_for_pods)
            host = u.hostname or "127.0.0.1"
            port = u.port or (443 if u.scheme == "https" else 80)
            self._kube_host, self._kube_port = host, port
            if isinstance(self.network, NetnsNetwork) and ipaddress.ip_address(
                    socket.gethostbyname(host)).is_loopback:
                self._forwarder = TcpForwarder(host, port)
                # 443 first, the port of the kubernetes Service (clients such as Ray's autoscaler
                # dial https://kubernetes.default:443 whatever KUBERNETES_SERVICE_PORT says)
                for want in (443, port, 0):
                    try:
                        await self._forwarder.start(self.network.gateway, want)
                        break
                    except OSError:
                        if want == 0:
                            raise
                self._kube_host, self._kube_port = self.network.gateway, self._forwarder.port
        if isinstance(self.network, NetnsNetwork):
            if self.pod_egress == "proxy":
                self._proxy = EgressProxy(self.egress_allow or package_index_hosts(), resolver=self._cluster_address)
                try:
                    await self._proxy.start(self.network.gateway, PROXY_PORT)
                except OSError:
                    await self._proxy.start(self.network.gateway, 0)
            elif self.pod_egress == "nat":
                await self._setup_nat()

    async def _setup_nat(self) -> None:
        """Opt-in NAT: ip_forward=1 and a MASQUERADE rule for the Pod CIDR (undone at stop)."""
        if shutil.which("iptables") is None:
            raise AgentError("--pod-egress nat needs iptables, which is not installed")
        fwd = Path("/proc/sys/net/ipv4/ip_forward")
        self._ip_forward_before = fwd.read_text().strip()
        fwd.write_text("1")
        assert isinstance(self.network, NetnsNetwork) and self.pod_cidr
        self._nat_rule = ["-t", "nat", "POSTROUTING", "-s", self.pod_cidr, "!", "-o", self.network.bridge, "-j",
                          "MASQUERADE"]
        rule = self._nat_rule
        await run("iptables", rule[0], rule[1], "-A", *rule[2:])
        log.warning("pod egress nat: set net.ipv4.ip_forward=1 and added a MASQUERADE rule for %s", self.pod_cidr)

    async def _undo_nat(self) -> None:
        if self._nat_rule is not None:
            rule = self._nat_rule
            await run("iptables", rule[0], rule[1], "-D", *rule[2:], check=False)
            self._nat_rule = None
        if self._ip_forward_before is not None:
            with contextlib.suppress(OSError):
                Path("/proc/sys/net/ipv4/ip_forward").write_text(self._ip_forward_before)
            self._ip_forward_before = None

    def _cluster_address(self, host: str, client_ip: str) -> str | None:
        """Where the egress proxy sends a request for ``host`` from the Pod at ``client_ip``: the
        address itself for a Pod CIDR address, the Service's Pod IP for a Service name, else None."""
        try:
            if self.pod_cidr and ipaddress.ip_address(host) in ipaddress.ip_network(self.pod_cidr, strict=False):
                return host
            return None
        except ValueError:
            return self.directory.resolve(host, client_ip)

    async def _exec_target(self, namespace: str, pod: str, container: str) -> ExecTarget | str:
        """Where ``kubectl exec``/``attach`` into a running container go (the kubelet's
        GetExec/GetAttach), or why they cannot."""
        w = next((w for w in self.workers.values() if w.namespace == namespace and w.name == pod), None)
        if w is None:
            return f'pod "{pod}" not found on this node'
        rec = w.records.get(container)
        ephemeral = (w.pod.get("spec") or {}).get("ephemeralContainers") or []
        spec = next((c for c in [*podspec.all_containers(w.pod), *ephemeral] if c.get("name") == container), None)
        if rec is None or spec is None:
            return f'container "{container}" not found in pod "{pod}"'
        cur = rec.current
        if cur is None or w.sandbox is None or not self.runtime.is_alive(cur):
            return f"container {container} is not running (state: {rec.state})"
        env = self.base_env(w.pod, spec)
        try:
            env = podspec.container_env(w.pod_with_ips(), spec, await w._lookup_table(), base=env,
                                        node_allocatable=self.node_allocatable(w.node))
        except Exception as e:
            log.warning("node agent: exec in %s/%s: the container's own environment could not be "
                        "resolved (%s); the command runs with the base environment", namespace, pod, e)
        workdir = spec.get("workingDir") or str(w.pod_dir_path() / "work")
        mode = getattr(self.runtime, "mode", "plain")
        prefix = nsenter_prefix(cur.pid) if mode != "plain" else []

        def running() -> bool:
            c = rec.current
            return c is not None and c is cur

        stdin_path = ""
        if spec.get("stdin") and self.runtime.name == "process":
            stdin_path = str(stdin_socket_path(w.pod_dir_path() / container, cur.restart_count))
        return ExecTarget(prefix, env, workdir, cur.log_path, running, stdin_path)

    def _usage_pods(self) -> list[tuple[str, str, str, str, str, list[int], str]]:
        """Running Pods with their processes and memory cgroup, for the usage sampler."""
        out = []
        for w in list(self.workers.values()):
            if w.sandbox is None:
                continue
            cgroup = str(w.sandbox.extra.get("cgroup") or "")
            pids = MemoryCgroups.pids(cgroup) if cgroup else []
            if not pids:
                groups = set(w.sandbox.extra.get("pgids", []))
                pids = [int(d) for d in os.listdir("/proc") if d.isdigit() and _pgid(int(d)) in groups] if groups else []
            containers = (w.pod.get("spec") or {}).get("containers") or [{}]
            out.append((w.uid, w.namespace, w.name, w.node, str(containers[0].get("name", "")), pids, cgroup))
        return out

    def simulated_usage(self) -> Obj | None:
        """The ``/stats/usage`` document (:mod:`pumice.node.metrics`) of this agent's simulated
        Pods: each running regular container at the Pod's ``pumice.io/sim-cpu-usage`` and
        ``pumice.io/sim-memory-usage`` (Pods with neither are left out), each Node at the sum of
        its Pods. A Pod's ``window`` is the time since its first running container started, at
        most ``usage_period`` (a constant rate holds over any window). None on the process
        runtime. An annotation that is no quantity or is negative counts as absent (the agent
        puts a Warning Event on the Pod when it sees it: :meth:`_check_usage_annotations`)."""
        if self.runtime_kind != "simulated":
            return None
        now = self.clock.now()
        nodes: dict[str, Obj] = {n: {"cpu": 0.0, "memory": 0} for n in self.nodes}
        pods: list[Obj] = []
        for w in sorted(self.workers.values(), key=lambda w: (w.namespace, w.name)):
            ann = (w.pod.get("metadata") or {}).get("annotations") or {}
            if w.sandbox is None or (ANNOTATION_CPU_USAGE not in ann and ANNOTATION_MEMORY_USAGE not in ann):
                continue
            cpu_usage, _ = simulated_usage_annotation(ann, ANNOTATION_CPU_USAGE)
            memory_usage, _ = simulated_usage_annotation(ann, ANNOTATION_MEMORY_USAGE)
            if cpu_usage is None and memory_usage is None:
                continue
            cpu, memory = float(cpu_usage or 0), int(memory_usage or 0)
            running = [r for r in w.records.values() if r.state == "running" and not r.init]
            if not running:
                continue
            started = min(r.started_at for r in running)
            window = max(0.0, min(self.usage_period, now - started))
            pods.append({"namespace": w.namespace, "name": w.name, "node": w.node, "window": window,
                         "containers": [{"name": r.name, "cpu": cpu, "memory": memory} for r in running]})
            if w.node in nodes:
                nodes[w.node]["cpu"] += cpu * len(running)
                nodes[w.node]["memory"] += memory * len(running)
        return {"timestamp": now, "window": self.usage_period, "nodes": nodes, "pods": pods}

    async def _usage_loop(self) -> None:
        """Sample usage at once, after 2 s (so ``kubectl top`` has a window early), then every
        ``usage_period`` s (15 by default)."""
        delay = min(2.0, self.usage_period)
        while True:
            try:
                await asyncio.to_thread(self._sampler.sample)
            except FATAL_TYPES:
                raise  # not carried on: the agent ends (see wait_stopped)
            except Exception as e:  # a /proc read racing a dying process must not stop sampling
                log.warning("usage sampling failed: %s", e)
            await self.clock.sleep(delay)
            delay = self.usage_period

    async def _forward_target(self, namespace: str, pod: str) -> ForwardTarget | str:
        """Where ``kubectl port-forward`` connections into a Pod go (the kubelet's GetPortForward)."""
        w = next((w for w in self.workers.values() if w.namespace == namespace and w.name == pod), None)
        if w is None or w.sandbox is None:
            return f'pod "{pod}" not found on this node'
        running = [r.current for r in w.records.values() if r.current is not None and self.runtime.is_alive(r.current)]
        mode = getattr(self.runtime, "mode", "plain")
        if mode == "netns" and running:
            return ForwardTarget(nsenter_prefix(running[0].pid, network_only=True), w.sandbox.ip, w.uid)
        return ForwardTarget([], w.sandbox.ip, w.uid)

    def _log_source(self, namespace: str, pod: str, container: str, previous: bool) -> Any:
        cands = [w for w in [*self.workers.values(), *(x for x in self.finished.values() if x)]
                 if w.namespace == namespace and w.name == pod]
        if not cands:
            return f'pod "{pod}" not found on this node'
        w = cands[0]
        rec = w.records.get(container)
        if rec is None:
            return f'container "{container}" in pod "{pod}" is not valid'
        n = rec.restart_count
        if previous:
            if n == 0 and rec.state != "terminated":
                return f'previous terminated container "{container}" in pod "{pod}" not found'
            n = n - 1
            if rec.state == "terminated" and rec.current is None and rec.last is None:
                return f'previous terminated container "{container}" in pod "{pod}" not found'
        path = w.pod_dir_path() / container / f"{max(n, 0)}.log"
        if not path.exists() and not previous and n > 0:
            # Waiting to restart (CrashLoopBackOff): the kubelet shows the last instance's log.
            last = w.pod_dir_path() / container / f"{n - 1}.log"
            if last.exists():
                return str(last), lambda: False

        def running() -> bool:
            c = rec.current
            return c is not None and c.restart_count == n and not previous

        # A started instance's log is served even before its shim has created the file (read as
        # empty): the kubelet's runtime creates the file with the container, so a running
        # container always has a log.
        if not path.exists() and not running():
            return f'container "{container}" in pod "{pod}" is waiting to start: {rec.reason or "ContainerCreating"}'

        return str(path), running

    # -- Nodes and Leases ------------------------------------------------------------------------

    def _node_status(self, node: NodeState) -> Obj:
        now = rfc3339(self.clock.now())
        addr = self.host_ip() if self.runtime_kind == "process" else "10.0.0.1"
        if self.runtime_kind == "simulated":
            addr = str(ipaddress.ip_address("10.0.0.0") + 1 + node.index)

        def c(t: str, ok: bool, reason: str, msg: str) -> Obj:
            return {"type": t, "status": "True" if ok else "False", "reason": reason, "message": msg,
                    "lastHeartbeatTime": now, "lastTransitionTime": now}

        return {
            "capacity": dict(node.capacity),
            "allocatable": node.allocatable,
            "conditions": [
                c("MemoryPressure", False, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                c("DiskPressure", False, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                c("PIDPressure", False, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                c("Ready", True, "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": addr}, {"type": "Hostname", "address": node.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.kubelet_port}},
            "nodeInfo": {
                "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": os.uname().release,
                "osImage": "pumice", "containerRuntimeVersion": f"pumice-{self.runtime_kind}://0.1.0",
                "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": KUBELET_VERSION,
                "operatingSystem": "linux", "architecture": "amd64",
            },
        }

    async def _register_node(self, node: NodeState) -> None:
        """Create the Node with its status (the API server keeps a Node's status on create); a
        Node that exists gets our labels and a status patch instead. Runs once, at :meth:`start`:
        a Node deleted later stays deleted (the status updates of :meth:`_heartbeat_loop` fail and
        are logged; the pod garbage collector removes its Pods) until the agent starts again.

        Mirrors: kubernetes pkg/kubelet/kubelet_node_status.go registerWithAPIServer (initialNode
        carries the status; tryRegisterWithAPIServer reconciles an existing Node; once
        registrationCompleted is set it is not called again)."""
        obj = {"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": node.name, "labels": dict(node.labels)},
               "spec": {"taints": node.taints} if node.taints else {},
               "status": self._node_status(node)}
        if await create_unless_exists(self.client, obj):
            return
        await self.client.patch(NODE, node.name, {"metadata": {"labels": dict(node.labels)}})
        await self.client.patch(NODE, node.name, {"status": self._node_status(node)}, subresource="status")

    async def _register_nodes(self) -> None:
        for node in self.nodes.values():
            await self._register_node(node)
        if self.lease_renew_interval:
            await self._ensure_namespace(LEASE_NAMESPACE)
            for node in self.nodes.values():
                await self._renew_lease(node)

    async def _ensure_namespace(self, name: str) -> None:
        try:
            await self.client.get(NAMESPACE, name)
        except ApiError as e:
            if not is_not_found(e):
                raise
            with contextlib.suppress(ApiError):
                await self.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    async def _renew_lease(self, node: NodeState) -> None:
        """Renew the Node's Lease in ``kube-node-lease``, creating it owned by the Node when missing.

        Raises:
            ApiError: the API refused the patch or the create.
            AgentError: the Lease is missing and so is the Node (deleted since the agent started):
                no Lease is created without its owner.

        Mirrors: kubernetes staging/src/k8s.io/component-helpers/apimachinery/lease/controller.go
        ensureLease and pkg/kubelet/util/nodelease.go setNodeOwnerFunc (a Lease is not created
        while the owner reference cannot be set)."""
        now = rfc3339_micro(self.clock.now())
        try:
            await self.client.patch(LEASE, node.name, {"spec": {"renewTime": now, "holderIdentity": node.name}},
                                    LEASE_NAMESPACE)
        except ApiError as e:
            if not is_not_found(e):
                raise
            try:
                owner = await self.client.get(NODE, node.name)
            except ApiError as ge:
                raise AgentError(f"Failed to get node when trying to set owner ref to the node lease: {ge}") from ge
            await self.client.create({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": node.name, "namespace": LEASE_NAMESPACE,
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node.name,
                                                  "uid": meta.uid(owner)}]},
                "spec": {"holderIdentity": node.name, "leaseDurationSeconds": 40, "renewTime": now},
            })

    async def _heartbeat_loop(self) -> None:
        """Renew every Lease each ``lease_renew_interval`` and post every Node's status each 300 s;
        failures are logged and retried at the next period (a deleted Node is not registered
        again: see :meth:`_register_node`).

        Mirrors: kubernetes pkg/kubelet/kubelet_node_status.go syncNodeStatus/updateNodeStatus
        (nodeStatusReportFrequency 5 min; "Error updating node status, will retry")."""
        assert self.lease_renew_interval
        last_status = self.clock.monotonic()
        while True:
            await self.clock.sleep(self.lease_renew_interval)
            for node in self.nodes.values():
                try:
                    await self._renew_lease(node)
                except FATAL_TYPES:
                    raise
                except Exception as e:
                    log.warning("lease renewal for %s failed: %s", node.name, e)
            if self.clock.monotonic() - last_status >= 300:
                last_status = self.clock.monotonic()
                for node in self.nodes.values():
                    try:
                        await self.client.patch(NODE, node.name, {"status": self._node_status(node)},
                                                subresource="status")
                    except FATAL_TYPES:
                        raise
                    except Exception as e:
                        log.error("Error updating node status, will retry: node %s: %s", node.name, e)

    # -- Pods ------------------------------------------------------------------------------------

    def _admit(self, node: NodeState, pod: Obj) -> tuple[str, str] | None:
        """Mirrors: kubernetes pkg/kubelet/lifecycle/predicate.go (resource fit, node selector)."""
        sel = (pod.get("spec") or {}).get("nodeSelector") or {}
        if not from_set(sel).matches(node.labels):
            return "NodeAffinity", "Pod was rejected: Predicate NodeAffinity failed"
        req = podspec.pod_requests(pod)
        units = node.units()
        used: dict[str, int] = {}
        for r in node.admitted.values():
            for k, v in r.items():
                used[k] = used.get(k, 0) + v
        if len(node.admitted) + 1 > units.get("pods", 110):
            return "OutOfpods", (f"Pod was rejected: Node didn't have enough resource: pods, requested: 1, "
                                 f"used: {len(node.admitted)}, capacity: {units.get('pods', 110)}")
        for k in sorted(req):
            v = req[k]
            if v == 0:
                continue
            cap = units.get(k)
            if cap is None and (k in ("cpu", "memory", "ephemeral-storage") or "/" not in k):
                continue
            cap = cap or 0
            if used.get(k, 0) + v > cap:
                return f"OutOf{k}", (f"Pod was rejected: Node didn't have enough resource: {k}, requested: {v}, "
                                     f"used: {used.get(k, 0)}, capacity: {cap}")
        node.admitted[meta.uid(pod)] = req
        return None

    def _on_pod(self, type_: str, pod: Obj) -> None:
        uid = meta.uid(pod)
        if self.runtime_kind == "process" and self.directory.set("pods", pod, deleted=type_ == "DELETED"):
            self._refresh_hosts()
        w = self.workers.get(uid)
        if self.runtime_kind == "simulated":
            self._check_usage_annotations(type_, uid, pod)
        if type_ == "DELETED":
            if w is not None:
                w.removed()
            self.finished.pop(uid, None)
            self._final_deleting.discard(uid)
            if self.runtime_kind == "process":
                self._spawn(self._remove_pod_dir(pod, w))
            return
        if w is not None:
            w.update(pod)
            return
        node_name = (pod.get("spec") or {}).get("nodeName", "")
        node = self.nodes.get(node_name)
        if node is None:
            return
        phase = (pod.get("status") or {}).get("phase", "")
        if uid in self.finished or phase in ("Succeeded", "Failed"):
            if uid not in self.finished and isinstance(self.runtime, SimulatedRuntime):
                # ended before this agent started (a Pod it ran is in finished once its worker ends)
                self._count_ended_pod(self.runtime, pod)
            if meta.is_deleting(pod) and needs_final_delete(pod) and uid not in self._final_deleting:
                self._final_deleting.add(uid)
                self._spawn(self._final_delete(pod))
            return
        restored = self._state.pop(uid, None)
        # the simulated runtime keeps no state file: a Pod with a startTime was admitted before
        sim = self.runtime if isinstance(self.runtime, SimulatedRuntime) else None
        resumed = restored is None and sim is not None and bool((pod.get("status") or {}).get("startTime"))
        if restored is None and not resumed:
            rejected = self._admit(node, pod)
            if rejected is not None:
                self.finished[uid] = None
                self._spawn(self._reject(pod, *rejected))
                return
        else:
            node.admitted[uid] = podspec.pod_requests(pod)
        w = PodWorker(self, pod, node_name)
        if restored is not None:
            self._restore_worker(w, restored)
        elif resumed and sim is not None:
            self._resume_simulated(w, sim)
        self.workers[uid] = w
        w.start()

    def _check_usage_annotations(self, type_: str, uid: str, pod: Obj) -> None:
        """A Warning Event (:data:`REASON_INVALID_SIMULATED_USAGE`) on a Pod of this agent's Nodes,
        once per annotation and value, for a usage annotation that is no quantity or is negative
        (:func:`simulated_usage_annotation`): e.g. ``annotation pumice.io/sim-cpu-usage: '-1' is
        negative; its usage is not reported``."""
        if type_ == "DELETED":
            self._usage_warned.pop(uid, None)
            return
        ann = (pod.get("metadata") or {}).get("annotations")
        if not ann or (ANNOTATION_CPU_USAGE not in ann and ANNOTATION_MEMORY_USAGE not in ann) \
                or (pod.get("spec") or {}).get("nodeName") not in self.nodes:
            return
        for key in (ANNOTATION_CPU_USAGE, ANNOTATION_MEMORY_USAGE):
            _, why = simulated_usage_annotation(ann, key)
            if why is None:
                continue
            warned = self._usage_warned.setdefault(uid, set())
            if f"{key}={ann[key]}" not in warned:
                warned.add(f"{key}={ann[key]}")
                md = pod["metadata"]
                log.warning("Pod %s/%s: %s; its usage is not reported", md.get("namespace"), md.get("name"), why)
                self.event(pod, "Warning", REASON_INVALID_SIMULATED_USAGE, f"{why}; its usage is not reported")

    async def _reject(self, pod: Obj, reason: str, message: str) -> None:
        """Write a rejected Pod's ``phase: Failed`` status. A failed write (an ApiError, a transport
        error) is logged and tried again every :data:`STATUS_SYNC_PERIOD` seconds while the Pod,
        with this uid, is still known (in ``finished``: its DELETED event, or a new uid under the
        name, removes it), as the kubelet's status manager retries a status the API lacks;
        NotFound ends the tries, FATAL_TYPES are raised.

        Mirrors: kubelet status_manager.go SetPodStatus / syncBatch."""
        self.event(pod, "Warning", reason, message)
        status = {"phase": "Failed", "reason": reason, "message": message,
                  "startTime": rfc3339(self.clock.now())}
        uid = meta.uid(pod)
        while True:
            try:
                await self.client.patch(POD, meta.name(pod), {"status": status}, meta.namespace(pod),
                                        subresource="status")
                return
            except FATAL_TYPES:
                raise
            except Exception as e:  # an ApiError, or a transport error (timeout, refused): logged, retried
                if is_not_found(e):  # a Pod gone meanwhile needs no status
                    return
                log.warning("Pod %s/%s rejected (%s) but its status was not written: %s; retrying in %gs",
                            meta.namespace(pod), meta.name(pod), reason, e, STATUS_SYNC_PERIOD)
            await self.clock.sleep(STATUS_SYNC_PERIOD)
            if uid not in self.finished:
                return

    def retry_final_delete(self, pod: Obj) -> None:
        """See :meth:`pumice.node.worker.WorkerHost.retry_final_delete`: :meth:`_final_delete`
        after :data:`STATUS_SYNC_PERIOD` seconds (unless one runs for the uid already)."""
        uid = meta.uid(pod)
        if uid not in self._final_deleting:
            self._final_deleting.add(uid)
            self._spawn(self._final_delete(pod, wait_first=True))

    async def _final_delete(self, pod: Obj, *, wait_first: bool = False) -> None:
        """Remove a terminal Pod that is being deleted (grace 0, only this uid: a new Pod of the
        same name is left alone, as the kubelet's status manager deletes it). A failed delete is
        logged and sent again every :data:`STATUS_SYNC_PERIOD` seconds until the Pod's DELETED
        event comes (the status manager's syncBatch retries it); NotFound or a uid conflict (409)
        end the tries, FATAL_TYPES are raised. One such task per uid (``_final_deleting``)."""
        uid = meta.uid(pod)
        try:
            if wait_first:
                await self.clock.sleep(STATUS_SYNC_PERIOD)
            while uid in self._final_deleting:
                try:
                    await self.client.delete(POD, meta.name(pod), meta.namespace(pod), grace_period_seconds=0,
                                             preconditions={"uid": uid})
                    return
                except FATAL_TYPES:
                    raise
                except Exception as e:  # an ApiError, or a transport error (timeout, refused): logged, retried
                    if is_not_found(e) or (isinstance(e, ApiError) and e.code == 409):
                        return  # gone already, or another Pod of that name now
                    log.warning("final delete of Pod %s/%s failed: %s; retrying in %gs", meta.namespace(pod),
                                meta.name(pod), e, STATUS_SYNC_PERIOD)
                await self.clock.sleep(STATUS_SYNC_PERIOD)
        finally:
            self._final_deleting.discard(uid)

    async def _remove_pod_dir(self, pod: Obj, worker: PodWorker | None = None) -> None:
        """Remove the Pod's files (logs, volumes, private /tmp with e.g. Ray's runtime_env pip
        environments) once the Pod is gone from the API, after its worker has stopped its
        processes (so nothing writes into the tree while it is removed)."""
        if worker is not None and worker._task is not None and not worker._task.done():
            with contextlib.suppress(BaseException):
                await asyncio.shield(worker._task)
        d = self.pod_dir(pod)
        if d.exists():
            await asyncio.to_thread(_rmtree_logged, d)

    # -- Services -> hosts files -----------------------------------------------------------------

    def _on_service(self, type_: str, svc: Obj) -> None:
        if self.directory.set("services", svc, deleted=type_ == "DELETED"):
            self._refresh_hosts()

    def _on_endpoints(self, type_: str, ep: Obj) -> None:
        if self.directory.set("endpoints", ep, deleted=type_ == "DELETED"):
            self._refresh_hosts()

    def _refresh_hosts(self) -> None:
        if self._hosts_pending:
            return
        self._hosts_pending = True

        async def later() -> None:
            await self.clock.sleep(0.02)
            self._hosts_pending = False
            for w in list(self.workers.values()):
                if w.sandbox is not None:
                    content = self.hosts_for(w.pod, w.sandbox)
                    if content is not None:
                        with contextlib.suppress(OSError):
                            self.runtime.update_hosts(w.sandbox, content)

        self._spawn(later())

    # -- state file (adoption after restart) -----------------------------------------------------

    def _state_path(self) -> Path:
        return self.data_dir / "state.json"

    def _load_state(self) -> None:
        p = self._state_path()
        if not p.exists():
            return
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            log.warning("ignoring unreadable state file %s: %s", p, e)
            return
        self._state = dict(data.get("pods") or {})
        for uid, s in self._state.items():
            sb = s.get("sandbox") or {}
            if sb.get("ip") and self.network is not None:
                self.network.ipam.restore(uid, sb["ip"])

    def _worker_state(self, w: PodWorker) -> Obj:
        sb = w.sandbox
        recs = {}
        for name, r in w.records.items():
            cur = r.current
            recs[name] = {
                "state": r.state, "reason": r.reason, "exit_code": r.exit_code, "started_at": r.started_at,
                "finished_at": r.finished_at, "restart_count": r.restart_count, "last": r.last,
                "backoff": r.backoff, "ever_started": r.ever_started,
                "current": None if cur is None else {
                    "pid": cur.pid, "proc_start": cur.proc_start, "started_at": cur.started_at,
                    "log_path": cur.log_path, "exit_path": cur.exit_path, "restart_count": cur.restart_count},
            }
        return {
            "namespace": w.namespace, "name": w.name, "node": w.node, "start_time": w.start_time,
            "initialized": w.initialized,
            "sandbox": None if sb is None else {"ip": sb.ip, "netns": sb.netns, "pod_dir": str(sb.pod_dir),
                                                "extra": sb.extra},
            "records": recs,
        }

    def _restore_worker(self, w: PodWorker, s: Obj) -> None:
        """Adopt a Pod from the state file: running containers (``--keep-pods``) are followed
        again; a Pod the agent stopped at its last stop (``stopped``) gets a new sandbox, its init
        containers run again and its containers restart (restartCount + 1), as after a node reboot.

        Mirrors: kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions
        (podSandboxChanged: "Pod sandbox changed, it will be killed and re-created.")."""
        w.restored = s
        w.start_time = float(s.get("start_time") or 0.0)
        w.initialized = bool(s.get("initialized"))
        stopped = bool(s.get("stopped"))
        sb = s.get("sandbox")
        if sb and not stopped:
            w.sandbox = Sandbox(w.uid, w.namespace, w.name, Path(sb["pod_dir"]), sb["ip"], sb.get("netns", ""),
                                dict(sb.get("extra") or {}))
        for name, r in (s.get("records") or {}).items():
            rec: ContainerRecord | None = w.records.get(name)
            if rec is None:
                continue
            rec.state, rec.reason = r["state"], r["reason"]
            rec.exit_code, rec.started_at, rec.finished_at = r["exit_code"], r["started_at"], r["finished_at"]
            rec.restart_count, rec.last, rec.backoff = r["restart_count"], r["last"], r["backoff"]
            rec.ever_started = r.get("ever_started", False)
            cur = r.get("current")
            if cur:
                rec.current = Container(name, cur["restart_count"], cur["started_at"], pid=cur["pid"],
                                        log_path=cur["log_path"], exit_path=cur["exit_path"],
                                        proc_start=cur["proc_start"])
            if stopped:
                rec.current = None
                if rec.state == "running":  # not seen to end: the agent stopped with it running
                    rec.state, rec.reason, rec.exit_code, rec.finished_at = "terminated", "Unknown", 255, rec.started_at
                if rec.init and not rec.sidecar and rec.ever_started:
                    rec.last = rec.terminated_state()
                    rec.restart_count += 1
                    rec.state, rec.reason = "waiting", "PodInitializing"
                rec.backoff = 0.0
        if stopped:
            w.initialized = False
            self.event(w.pod, "Normal", "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
        w._written = dict(w.pod.get("status") or {})

    def _resume_simulated(self, w: PodWorker, runtime: SimulatedRuntime) -> None:
        """Take up, as it was, a Pod this Node ran before the agent restarted (the simulated
        runtime keeps nothing, so a Pod with a ``startTime`` is one the agent admitted): its status
        is its state. The sandbox keeps its IP, init containers that ended are not run again, a
        running container goes on running from its ``startedAt`` (its duration counts from there,
        :meth:`SimulatedRuntime.resume`), and nothing is written unless something changes.
        Restart counts, last states, readiness and condition times stay as they were."""
        status = w.pod.get("status") or {}
        w.restored = dict(status)
        w.start_time = parse_rfc3339(status["startTime"])
        w.initialized = any(c.get("type") == "Initialized" and c.get("status") == "True"
                            for c in status.get("conditions") or [])
        if status.get("podIP"):
            w.sandbox = runtime.resume_sandbox(w.pod, self.pod_dir(w.pod), status["podIP"])
        for st in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
            rec = w.records.get(st.get("name", ""))
            if rec is None:
                continue
            rec.restart_count = int(st.get("restartCount") or 0)
            rec.last = st.get("lastState") or None
            rec.ready, rec.started = bool(st.get("ready")), bool(st.get("started"))
            rec.ever_started = "containerID" in st
            state = st.get("state") or {}
            if "terminated" in state:
                t = state["terminated"]
                rec.state, rec.reason, rec.message = "terminated", str(t.get("reason", "")), str(t.get("message", ""))
                rec.exit_code = int(t.get("exitCode") or 0)
                rec.started_at = parse_rfc3339(t["startedAt"]) if t.get("startedAt") else 0.0
                rec.finished_at = parse_rfc3339(t["finishedAt"]) if t.get("finishedAt") else 0.0
                if not rec.init and t.get("startedAt"):
                    self._count_ended_gang_member(runtime, w.pod, rec.name, rec.started_at)
            elif "running" in state and w.sandbox is not None:
                rec.state, rec.reason, rec.message = "running", "", ""
                rec.started_at = parse_rfc3339(state["running"]["startedAt"])
                try:
                    rec.current = runtime.resume(w.sandbox, w.pod, w._container_spec(rec.name), rec.restart_count,
                                                 rec.started_at, init=rec.init and not rec.sidecar)
                except RuntimeError_ as e:  # an annotation changed since: started again, and refused
                    log.warning("container %s of Pod %s/%s cannot go on: %s: %s", rec.name, w.namespace, w.name,
                                e.reason, e.message)
            else:
                waiting = state.get("waiting") or {}
                rec.state, rec.reason = "waiting", str(waiting.get("reason") or rec.reason)
                rec.message = str(waiting.get("message") or "")

    def _count_ended_gang_member(self, runtime: SimulatedRuntime, pod: Obj, name: str, started_at: float) -> None:
        """Count the container ``name`` of ``pod``, which ended before the agent restarted, at its
        gang's rendezvous (:meth:`SimulatedRuntime.resume_ended`), so that the members taken up
        running do not wait for it for ever. A bad simulator annotation is logged."""
        spec = next((c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == name), None)
        if spec is None:
            return
        try:
            runtime.resume_ended(pod, spec, started_at)
        except RuntimeError_ as e:
            md = pod.get("metadata") or {}
            log.warning("container %s of Pod %s/%s not counted in its gang: %s: %s", name, md.get("namespace"),
                        md.get("name"), e.reason, e.message)

    def _count_ended_pod(self, runtime: SimulatedRuntime, pod: Obj) -> None:
        """A Pod that had ended before the agent restarted (seen ended, never run by this agent):
        its containers count at their gangs' rendezvous; it is then finished here."""
        self.finished[meta.uid(pod)] = None
        for st in (pod.get("status") or {}).get("containerStatuses") or []:
            t = (st.get("state") or {}).get("terminated") or {}
            if t.get("startedAt"):
                self._count_ended_gang_member(runtime, pod, str(st.get("name", "")), parse_rfc3339(t["startedAt"]))

    def _save_state(self) -> None:
        if self.runtime_kind != "process":
            return
        pods = {uid: self._worker_state(w) for uid, w in self.workers.items() if not w.terminal}
        pods.update({uid: s for uid, s in self._state.items() if uid not in pods})
        p = self._state_path()
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps({"pods": pods}, indent=1, sort_keys=True))
        os.replace(tmp, p)
        self._state_dirty = False

    async def _state_loop(self) -> None:
        while True:
            await self.clock.sleep(0.2)
            if self._state_dirty:
                with contextlib.suppress(OSError):
                    self._save_state()

    async def _gc_orphans(self) -> None:
        """After the first Pod list: clean up Pods of the state file that no longer exist, and
        remove Pod directories of Pods that are gone (deleted while the agent was down)."""
        await self.pods_synced.wait()
        await asyncio.sleep(0)
        live = {self.pod_dir(p).name for p in self._informers[0].store.list()} if self._informers else set()
        pods_dir = self.data_dir / "pods"
        if pods_dir.is_dir():
            for d in sorted(pods_dir.iterdir()):
                uid = d.name.rsplit("_", 1)[-1]
                if d.name not in live and uid not in self.workers and uid not in self._state:
                    log.info("removing files of Pod %s, which no longer exists", d.name)
                    await asyncio.to_thread(_rmtree_logged, d)
        for uid, s in list(self._state.items()):
            if uid in self.workers:
                continue
            self._state.pop(uid, None)
            sb = s.get("sandbox")
            if sb:
                sandbox = Sandbox(uid, s.get("namespace", ""), s.get("name", ""), Path(sb["pod_dir"]), sb["ip"],
                                  sb.get("netns", ""), dict(sb.get("extra") or {}))
                for r in (s.get("records") or {}).values():
                    cur = r.get("current")
                    if cur:
                        sandbox.extra.setdefault("pgids", []).append(cur["pid"])
                with contextlib.suppress(Exception):
                    await self.runtime.remove_sandbox(sandbox)
                await asyncio.to_thread(_rmtree_logged, Path(sb["pod_dir"]))
        self.state_changed()
