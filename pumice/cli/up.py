"""``pumice up``: the embedded control plane on one machine.

Runs, in one process: on one asyncio loop, the API server (HTTP on loopback, so kubectl works,
kubeconfig at ``<data-dir>/kubeconfig``), the controller manager (kube, ray, volcano
controllers), the default scheduler and one node agent (process runtime by default: real
processes, real Ray); on threads of their own, each with its own loop, the Volcano scheduler
(whose sessions are long synchronous Python, as upstream's are one goroutine: on the API
server's loop a session over thousands of Pods would hold every API request for its duration)
and the web UI. Components other than the API server talk to it through the in-process
streaming transport (from the Volcano scheduler's thread, each exchange is run on the API
server's loop): the same client code as against a real cluster, without sockets.

Stops cleanly on SIGINT/SIGTERM: the node agent stops its Pods' processes and removes their
network namespaces before the process exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from pumice.cli._datadir import DataDirInUse, lock_data_dir
from pumice.cli._netopts import bridge_option, node_cpu_option, node_memory_option, pod_cidr_option
from pumice.cli._serviceopts import (
    ADVERTISE_ADDRESS_HELP,
    DEFAULT_NODE_PORT_RANGE,
    DEFAULT_SERVICE_CIDR,
    NODE_PORT_RANGE_HELP,
    SERVICE_CIDR_HELP,
    advertise_address_option,
    check_service_cidr_apart,
    node_port_range_option,
    service_cidr_option,
)
from pumice.cli._signals import stop_on_signals

log = logging.getLogger("pumice.up")

DASHBOARD_ANNOUNCE_WAIT = 20.0
"""Seconds ``pumice up`` waits for the dashboard before printing the API address without it."""

DEFAULT_DATA_DIR = Path.home() / ".local" / "share" / "pumice"

UP_GC_THRESHOLD = (100_000, 10, 10)
"""``gc.set_threshold`` of the ``pumice up`` process (CPython's default is 700, 10, 10).

With tens of thousands of objects in the API store, the informers and the scheduler cache, the
default young-generation threshold promotes the short-lived objects of every scheduling session
and write into the oldest generation, whose full passes (0.2-3 s over the whole heap, every
thread stopped) then came every few seconds: the API's latency spikes once the Volcano scheduler
ran on its own thread (``bench/up_responsive.py --gc-log``: 29 full passes in a 6,000-Pod run
against 1 with this threshold; GET p99 0.88 s -> 98 ms once the Pods existed). Cyclic garbage is
still collected: a young pass every 100,000 net allocations, older ones as before."""


CONTROLLER_STOP_GRACE = 5.0
"""Seconds the controllers' in-flight reconciles have when ``pumice up`` stops, before they are
cancelled (the Manager's ``graceful_shutdown_timeout``, 30 s by default, as controller-runtime's).
A reconcile may be long: the Volcano job controller creates a wide Job's Pods one by one, thousands
while the Job waits for room, and a stop waited for all of them, up to 30 s (trial 14 F-5). A
cancelled reconcile is taken up again at the next start (level-triggered); kube-controller-manager
and vc-controller-manager end their in-flight syncs with the process."""


@dataclass
class UpOptions:
    """What ``pumice up`` runs. Units: cpu in cores (string quantity), memory as a quantity."""

    data_dir: Path = DEFAULT_DATA_DIR
    host: str = "127.0.0.1"
    port: int = 6443
    runtime: str = "process"
    nodes: int = 1
    node_cpu: str | None = None
    node_memory: str | None = None
    batch_scheduler: str | None = "volcano"
    network: str = "auto"
    pod_egress: str = "proxy"
    pod_cidr: str | None = None
    bridge: str | None = None
    keep_pods: bool = False
    scheduler_conf: str | None = None
    agent_scheduler: bool = False
    """Also run Volcano's Agent Scheduler (schedulerName ``agent-scheduler``)."""
    controllers: list[str] = field(default_factory=lambda: ["kube", "ray", "volcano"])
    durability: str = "strict"
    dashboard_host: str = "127.0.0.1"
    dashboard_port: int | None = None
    """Serve the web UI on this port (0: a free one); None: no dashboard."""
    dashboard_port_fallback: bool = False
    """When ``dashboard_port`` is taken, use a free port instead of failing (the CLI's default)."""
    service_cluster_ip_range: str = DEFAULT_SERVICE_CIDR
    """The API server's ``--service-cluster-ip-range`` (IPv4 CIDR)."""
    service_node_port_range: tuple[int, int] = (30000, 32767)
    """The API server's ``--service-node-port-range``."""
    advertise_address: str | None = None
    """The API server's ``--advertise-address`` (the Endpoints ``default/kubernetes``); None: picked
    as kube-apiserver picks it (:func:`pumice.apiserver.kubernetesservice.advertise_address`)."""
    volcano_thread: bool = True
    """Run the Volcano scheduler on its own thread and event loop (see :func:`_start_components`);
    False runs it on the API server's loop, as before session 13 (``bench/up_responsive.py``'s
    baseline)."""


async def run_up(
    opts: UpOptions,
    *,
    stop_event: asyncio.Event | None = None,
    on_ready: Callable[[Path], Awaitable[None] | None] | None = None,
    on_dashboard: Callable[[str], None] | None = None,
) -> None:
    """Run the whole embedded system until ``stop_event`` is set.

    Args:
        opts: what to run.
        stop_event: set it to stop; a new one is made when None.
        on_ready: called with the kubeconfig path once the API server answers.
        on_dashboard: called with the dashboard URL once it serves (when ``opts.dashboard_port``).
    Raises:
        OSError: the port is taken, or the data dir is not writable.
        ConfigError: ``opts.scheduler_conf`` is not a valid configuration (before anything starts).
    """
    from pumice.apiserver.server import APIServer
    from pumice.client.kube import Client, component_user_agent
    from pumice.client.kubeconfig import in_process

    stop = stop_event or asyncio.Event()
    if opts.scheduler_conf is not None:  # refused before anything starts (ConfigError)
        from pumice.scheduler.volcano import load_conf

        load_conf(Path(opts.scheduler_conf))
    lock = lock_data_dir(opts.data_dir)
    try:  # the node agent's directory too, so a `pumice node-agent --data-dir <it>` is refused
        node_lock = lock_data_dir(opts.data_dir / "node")
    except BaseException:
        lock.close()
        raise
    check_port_free(opts.host, opts.port)
    dash_sock = None
    if opts.dashboard_port is not None:
        from pumice.dashboard.server import bind

        try:
            dash_sock = bind(opts.dashboard_host, opts.dashboard_port)
        except OSError as e:
            if not opts.dashboard_port_fallback:
                raise
            log.warning("%s; the dashboard takes a free port instead", e)
            dash_sock = bind(opts.dashboard_host, 0)

    mutating, validating = _volcano_admission()
    server = APIServer(opts.data_dir, durability=opts.durability, admission_plugins=[*mutating, *validating],
                       service_cluster_ip_range=opts.service_cluster_ip_range,
                       service_node_port_range=opts.service_node_port_range,
                       advertise_address=opts.advertise_address)
    ready = asyncio.Event()
    serve_task = asyncio.create_task(server.serve(host=opts.host, port=opts.port, ready=ready), name="apiserver")
    kubeconfig = opts.data_dir / "kubeconfig"
    await _wait_serving(ready, serve_task)
    if on_ready is not None:
        res = on_ready(kubeconfig)
        if asyncio.iscoroutine(res):
            await res

    clients: list[Client] = []
    loop = asyncio.get_running_loop()

    def client(component: str, *, other_thread: bool = False) -> Client:
        """An in-process client of the component's name; ``other_thread``: for use on another
        thread's loop (its exchanges run on this loop), closed by its user there."""
        c = in_process(server.app, scheme=server.scheme, user_agent=component_user_agent(component),
                       loop=loop if other_thread else None)
        if not other_thread:
            clients.append(c)
        return c

    tasks = _start_components(opts, client, server.url, stop, root_ca=_root_ca(server),
                              add_proxy_backend=server.proxy.add_backend, add_usage_source=server.metrics.add_source)
    _report_components(server, tasks)
    if dash_sock is not None:
        tasks.append(asyncio.create_task(_dashboard(kubeconfig, dash_sock, stop, on_dashboard),
                                         name="dashboard"))
    try:
        await _wait_for_stop_or_failure(stop, [serve_task, *tasks])
    finally:
        stop.set()
        # The node agent first: it stops Pods (SIGTERM, grace, SIGKILL) and removes namespaces.
        ended_before = {t for t in tasks if t.done()}  # a failure among them is logged above
        for t in reversed(tasks):
            await _await_stopping(t, log_failure=t not in ended_before)
        for c in clients:
            with contextlib.suppress(Exception):
                await c.close()
        serve_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await serve_task
        node_lock.close()
        lock.close()


#: the component each task of :func:`_start_components` runs, as ``componentstatuses`` names it
_COMPONENT_NAMES = {"controller-manager": "controller-manager", "default-scheduler": "scheduler",
                    "volcano-scheduler": "volcano-scheduler", "agent-scheduler": "agent-scheduler",
                    "node-agent": "node-agent"}


def _report_components(server: Any, tasks: list[asyncio.Task[None]]) -> None:
    """Report each component task's health in the server's ``componentstatuses``: healthy while
    it runs, unhealthy with how it ended once it has (see pumice.apiserver.componentstatus)."""
    from pumice.apiserver.componentstatus import task_probe

    for t in tasks:
        name = _COMPONENT_NAMES.get(t.get_name())
        if name is not None:
            server.add_component(name, task_probe(t))


def _start_components(opts: UpOptions, client: Callable[[str], Any], apiserver_url: str | None,
                      stop: asyncio.Event, *, root_ca: str | None = None,
                      add_proxy_backend: Callable[[Any], Any] | None = None,
                      add_usage_source: Callable[[Any], Any] | None = None) -> list[asyncio.Task[None]]:
    """Start the controller manager, the default (and with ``volcano`` the Volcano) scheduler and
    the node agent as tasks, each with its own in-process client (``client(component)``); the
    node agent is last, so that it is stopped first. The Volcano scheduler (informers, cache and
    sessions) runs on its own thread and loop (``opts.volcano_thread``, see
    :func:`pumice.runtime.thread.run_in_thread`), its client made with
    ``client(component, other_thread=True)``; its task ends when the thread has. With the simulated runtime,
    ``add_proxy_backend`` (the API server's) gets the simulated Ray dashboards, so that
    ``services/<head svc>:dashboard/proxy/...`` reaches them, and ``add_usage_source`` (the
    metrics API's) the simulated Pods' usage, for ``kubectl top`` and the HPA."""
    from pumice.cli._controllers import controller_setups
    from pumice.runtime.run import run_controller_manager
    from pumice.scheduler.default.scheduler import run_scheduler

    tasks: list[asyncio.Task[None]] = []
    ray_options: dict[str, Any] = {}
    agent_holder: list[Any] = []
    if opts.runtime == "simulated":
        dashboard, dash_informers = _simulated_ray_dashboard(client("ray-dashboard"), agent_holder)
        if add_proxy_backend is not None:
            from pumice.simulate.ray_dashboard import proxy_backend

            add_proxy_backend(proxy_backend(dash_informers, dashboard))
        tasks.append(asyncio.create_task(_run_informers(dash_informers, stop), name="ray-dashboard"))
        ray_options["dashboard_client_factory"] = dashboard.factory
        ray_options["serve_proxy_healthy"] = dashboard.serve_proxy_healthy
    tasks.append(asyncio.create_task(
        run_controller_manager(
            client("controller-manager"),
            controller_setups(opts.controllers, batch_scheduler=opts.batch_scheduler, ray_options=ray_options,
                              root_ca=root_ca),
            leader_elect=False, stop_event=stop, graceful_shutdown_timeout=CONTROLLER_STOP_GRACE,
        ),
        name="controller-manager",
    ))
    tasks.append(asyncio.create_task(run_scheduler(client("scheduler"), stop_event=stop), name="default-scheduler"))
    if "volcano" in opts.controllers:
        tasks.append(asyncio.create_task(_volcano_scheduler(opts, client, stop), name="volcano-scheduler"))
        if opts.agent_scheduler:
            from pumice.scheduler.volcano.agent.live import run as run_agent_scheduler

            tasks.append(asyncio.create_task(run_agent_scheduler(client("agent-scheduler"), stop_event=stop),
                                             name="agent-scheduler"))
    agent = _node_agent(opts, client("node-agent"), apiserver_url)
    agent_holder.append(agent)
    if opts.runtime == "simulated" and add_usage_source is not None:
        add_usage_source(agent.simulated_usage)
    tasks.append(asyncio.create_task(agent.run(stop_event=stop), name="node-agent"))
    return tasks


async def _volcano_scheduler(opts: UpOptions, client: Callable[..., Any], stop: asyncio.Event) -> None:
    """The Volcano scheduler until ``stop`` is set: on its own thread and loop with
    ``opts.volcano_thread`` (the API server answers while a session runs), else on this loop.

    Raises:
        whatever the scheduler raised (ConfigError for a bad configuration, ...).
    """
    from pumice.runtime.thread import run_in_thread
    from pumice.scheduler import volcano

    if not opts.volcano_thread:
        await volcano.run(client("volcano-scheduler"), conf_path=opts.scheduler_conf, stop_event=stop,
                          publish_conf=True)
        return

    async def main(stop_here: asyncio.Event) -> None:
        api = client("volcano-scheduler", other_thread=True)
        try:
            await volcano.run(api, conf_path=opts.scheduler_conf, stop_event=stop_here, publish_conf=True)
        finally:
            await api.close()

    await run_in_thread(main, stop_event=stop, name="volcano-scheduler")


def _simulated_ray_dashboard(api: Any, agent_holder: list[Any]) -> tuple[Any, Any]:
    """The simulated Ray dashboard for ``--runtime simulated`` (see pumice.simulate.ray_dashboard):
    a RayJob's Ray job runs for its ``pumice.io/sim-duration-seconds`` once its Pods run, then
    SUCCEEDED, and its submitter Pod exits; a RayService's Serve applications run after their start
    delay and its head Pod's Serve proxy answers the health check. Returns it and the informer
    factory it reads Pods, RayJobs and RayServices from."""
    from pumice._util.clock import default_clock
    from pumice.client.informer import SharedInformerFactory
    from pumice.simulate.ray_dashboard import on_informers

    informers = SharedInformerFactory(api)

    def finish_pod(uid: str, code: int, container: str | None = None, /) -> bool:
        finish = getattr(getattr(agent_holder[0], "runtime", None), "finish_pod", None) if agent_holder else None
        return bool(finish(uid, code, container)) if finish is not None else False

    dashboard, _ = on_informers(informers, finish_pod, default_clock())
    return dashboard, informers


async def _run_informers(informers: Any, stop: asyncio.Event) -> None:
    """Run the informers of ``informers`` (a SharedInformerFactory) until ``stop`` is set.

    Raises:
        MemoryError: (a FATAL_TYPES error) what one of them stopped with for good: ``pumice up``
            ends with it rather than serve from a cache that no longer follows the API.
    """
    await informers.start()
    failed = asyncio.ensure_future(informers.wait_failed())
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({failed, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if failed.done():
            failed.result()
    finally:
        failed.cancel()
        stopped.cancel()
        await informers.stop()


def _node_agent(opts: UpOptions, client: Any, apiserver_url: str | None) -> Any:
    """The node agent ``pumice up`` runs (the options' runtime, network and Node sizes)."""
    from pumice.node.agent import AgentConfig, NodeAgent

    return NodeAgent(client, AgentConfig(
        runtime="simulated" if opts.runtime == "simulated" else "process",
        data_dir=opts.data_dir / "node",
        nodes=opts.nodes,
        node_cpu=opts.node_cpu or None,
        node_memory=opts.node_memory or None,
        network=opts.network,  # type: ignore[arg-type]
        pod_egress=opts.pod_egress,  # type: ignore[arg-type]
        pod_cidr=opts.pod_cidr,
        bridge=opts.bridge,
        network_scope=str(opts.data_dir.resolve()),
        keep_pods=opts.keep_pods,
        apiserver_url_for_pods=apiserver_url,
    ))


async def _await_stopping(task: asyncio.Task[None], *, log_failure: bool, timeout: float = 45.0) -> None:
    """Wait for a component's ``task`` to end after the stop, then cancel it (a no-op when it has
    ended). An error it raises while stopping (the Volcano scheduler's thread re-raises its own,
    e.g. its last writes failing) is logged with the component's name and reason when
    ``log_failure``, and so is a task that has not ended within ``timeout`` seconds; neither is
    raised, so that the components after it still stop."""
    try:
        await asyncio.wait_for(asyncio.shield(task), timeout=timeout)
    except asyncio.CancelledError:
        pass
    except TimeoutError:
        log.warning("%s did not stop within %g s; cancelling it", task.get_name(), timeout)
    except Exception as e:
        if log_failure:
            log.error("%s failed while stopping: %s: %s", task.get_name(), type(e).__name__, e)
    task.cancel()


async def _wait_for_stop_or_failure(stop: asyncio.Event, tasks: list[asyncio.Task[None]]) -> None:
    """Return when ``stop`` is set; re-raise the error of the first task that fails before."""
    stop_waiter = asyncio.create_task(stop.wait(), name="stop")
    try:
        done, _ = await asyncio.wait([stop_waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
        for t in done:
            if t is not stop_waiter and t.exception() is not None:
                log.error("%s failed: %s", t.get_name(), t.exception())
                raise t.exception()  # type: ignore[misc]
    finally:
        stop_waiter.cancel()


async def _dashboard(kubeconfig: Path, sock: socket.socket, stop: asyncio.Event,
                     on_dashboard: Callable[[str], None] | None) -> None:
    """The web UI, on its own thread and loop: a client of the API through the kubeconfig (HTTPS,
    the admin token), with the controllers' and the Volcano scheduler's Prometheus registries of
    this process as charts; its explain panels replay the configuration the scheduler runs (as
    it records it on its ConfigMap), never a copy of their own."""
    import prometheus_client

    from pumice.dashboard.series import MetricSource
    from pumice.dashboard.server import run_dashboard_in_thread
    from pumice.scheduler.volcano import metrics as volcano_metrics

    sources = [MetricSource.from_registry(prometheus_client.REGISTRY, "controllers"),
               MetricSource.from_registry(volcano_metrics.REGISTRY, "volcano-scheduler")]
    await run_dashboard_in_thread(kubeconfig, sock=sock, metric_sources=sources, stop_event=stop,
                                  on_ready=on_dashboard)


async def _wait_serving(ready: asyncio.Event, serve_task: asyncio.Task[None]) -> None:
    waiter = asyncio.create_task(ready.wait())
    done, _ = await asyncio.wait([waiter, serve_task], timeout=30, return_when=asyncio.FIRST_COMPLETED)
    if serve_task in done:
        waiter.cancel()
        serve_task.result()
        raise RuntimeError("the API server stopped during start-up")
    if waiter not in done:
        waiter.cancel()
        raise RuntimeError("the API server did not start within 30 s")


def _root_ca(server: object) -> str | None:
    """The API server's CA for the kube controllers' root-ca-cert-publisher (kube-root-ca.crt)."""
    data_dir = getattr(server, "data_dir", None)
    ca = data_dir / "tls.crt" if data_dir is not None else None
    return ca.read_text() if ca is not None and ca.exists() else None


def _volcano_admission() -> tuple[list[object], list[object]]:
    """Admission plugins of the Volcano webhooks (ray.io objects are validated by the KubeRay
    controllers, as upstream, which has no ray.io webhook by default)."""
    from pumice.controllers.volcano import admission_plugins

    mutating, validating = admission_plugins()
    return list(mutating), list(validating)


def _parse_groups(value: str) -> list[str]:
    from pumice.cli._controllers import CONTROLLER_GROUPS

    names = [c.strip() for c in value.split(",") if c.strip()]
    unknown = [c for c in names if c not in CONTROLLER_GROUPS]
    if unknown:
        raise click.BadParameter(f"unknown controllers {unknown}; choose from {','.join(sorted(CONTROLLER_GROUPS))}",
                                 param_hint="--controllers")
    return names


def check_port_free(host: str, port: int) -> None:
    """Raise OSError with a one-line message when ``host:port`` cannot be bound."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            raise OSError(f"cannot listen on {host}:{port}: {e.strerror}") from None


@click.command(name="up")
@click.option("--data-dir", type=click.Path(path_type=Path), default=DEFAULT_DATA_DIR, show_default=True,
              help="Where the database, kubeconfig, logs and Pod files live.")
@click.option("--host", default="127.0.0.1", show_default=True, help="API server bind address.")
@click.option("--port", type=click.IntRange(0, 65535), default=6443, show_default=True, help="API server port.")
@click.option("--runtime", type=click.Choice(["process", "simulated"]), default="process", show_default=True)
@click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True, help="Number of Nodes the agent hosts.")
@click.option("--node-cpu", default=None, callback=node_cpu_option, help="cpu per Node (default: the machine's).")
@click.option("--node-memory", default=None, callback=node_memory_option, help="memory per Node, e.g. 8Gi (default: the machine's).")
@click.option("--batch-scheduler", type=click.Choice(["volcano", "none"]), default="volcano", show_default=True,
              help="KubeRay's batch scheduler: volcano gives Ray Pods a PodGroup and schedulerName volcano.")
@click.option("--network", type=click.Choice(["auto", "netns", "host"]), default="auto", show_default=True)
@click.option("--pod-cidr", default=None, callback=pod_cidr_option,
              help="Pod addresses (netns mode). Default: a free /22 of 10.244.0.0/16 derived from the data dir.")
@click.option("--bridge", default=None, callback=bridge_option, help="Bridge name (netns mode). Default: pumice-<hash of the data dir>.")
@click.option("--service-cluster-ip-range", default=DEFAULT_SERVICE_CIDR, show_default=True, callback=service_cidr_option,
              help=SERVICE_CIDR_HELP + " Must not overlap the Pod CIDR.")
@click.option("--service-node-port-range", default=DEFAULT_NODE_PORT_RANGE, show_default=True,
              callback=node_port_range_option, help=NODE_PORT_RANGE_HELP)
@click.option("--advertise-address", default=None, callback=advertise_address_option, help=ADVERTISE_ADDRESS_HELP)
@click.option("--pod-egress", type=click.Choice(["proxy", "nat", "none"]), default="proxy", show_default=True)
@click.option("--keep-pods", is_flag=True,
              help="Leave Pod processes running on exit; the next start adopts them as they are. Without it a "
                   "stop and start is a node reboot: containers restart (restartCount + 1, SandboxChanged "
                   "event), Pods keep their IP and startTime.")
@click.option("--scheduler-conf", default=None, help="volcano-scheduler.conf to use instead of the default.")
@click.option("--agent-scheduler", is_flag=True,
              help="Also run Volcano's Agent Scheduler for Pods with schedulerName agent-scheduler (needs the "
                   "volcano controller group).")
@click.option("--durability", type=click.Choice(["strict", "relaxed"]), default="strict", show_default=True,
              help="strict: a write is acknowledged once it is on disk (survives a power cut); relaxed: once "
              "committed (survives a killed process only), for throwaway clusters.")
@click.option("--dashboard-port", type=click.IntRange(0, 65535), default=None,
              help="Port of the web UI on 127.0.0.1 (0: a free one). Default 8080, or a free port when "
                   "8080 is taken.")
@click.option("--no-dashboard", is_flag=True, help="Do not serve the web UI.")
@click.option("--controllers", "controller_groups", default="kube,ray,volcano", show_default=True,
              help="Controller groups to run: kube, ray, volcano (leave out ray to run the real KubeRay operator "
                   "against this pumice instead).")
@click.option("-v", "--verbose", is_flag=True)
def command(data_dir: Path, host: str, port: int, runtime: str, nodes: int, node_cpu: str | None,
            node_memory: str | None, batch_scheduler: str, network: str, pod_cidr: str | None, bridge: str | None,
            service_cluster_ip_range: str, service_node_port_range: tuple[int, int], advertise_address: str | None,
            pod_egress: str, keep_pods: bool, scheduler_conf: str | None, agent_scheduler: bool, durability: str, dashboard_port: int | None,
            no_dashboard: bool, controller_groups: str, verbose: bool) -> None:
    """Run the whole embedded control plane on this machine (Ctrl-C stops it cleanly)."""
    if no_dashboard and dashboard_port is not None:
        raise click.UsageError("--no-dashboard and --dashboard-port contradict each other")
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    check_service_cidr_apart(service_cluster_ip_range, pod_cidr)
    if agent_scheduler and "volcano" not in _parse_groups(controller_groups):
        raise click.UsageError("--agent-scheduler needs the volcano controller group")
    if scheduler_conf is not None:
        from pumice.scheduler.volcano import ConfigError, load_conf

        try:
            load_conf(Path(scheduler_conf))
        except ConfigError as e:
            raise click.ClickException(f"bad --scheduler-conf: {e}") from None
    opts = UpOptions(
        data_dir=data_dir, host=host, port=port, runtime=runtime, nodes=nodes, node_cpu=node_cpu,
        node_memory=node_memory, batch_scheduler=None if batch_scheduler == "none" else batch_scheduler,
        network=network, pod_cidr=pod_cidr, bridge=bridge, pod_egress=pod_egress, keep_pods=keep_pods,
        scheduler_conf=scheduler_conf, agent_scheduler=agent_scheduler, durability=durability,
        dashboard_port=None if no_dashboard else (8080 if dashboard_port is None else dashboard_port),
        dashboard_port_fallback=dashboard_port is None,
        controllers=_parse_groups(controller_groups),
        service_cluster_ip_range=service_cluster_ip_range, service_node_port_range=service_node_port_range,
        advertise_address=advertise_address,
    )

    async def main() -> None:
        stop = stop_on_signals(grace=60.0)  # Pods get their 30 s terminationGracePeriod
        # What a user needs (API address, kubeconfig, dashboard URL) is printed as one block once
        # the dashboard serves, below the components' start-up log lines rather than among them;
        # without a dashboard, or if it is slow to start, as soon as the API answers.
        block: list[str] = []

        def announce(*extra: str) -> None:
            if block:
                click.echo("\n".join([*block, *extra]), err=True)
                block.clear()
            elif extra:
                click.echo("\n".join(extra), err=True)
            sys.stderr.flush()

        def ready(kubeconfig: Path) -> None:
            from pumice.client.kubeconfig import load

            # the kubeconfig names the address really served (with --port 0, the port picked)
            block.extend([f"pumice is up: API at {load(kubeconfig).cluster.server}",
                          f"kubeconfig: {kubeconfig}  (export KUBECONFIG={kubeconfig})"])
            if opts.dashboard_port is None:
                announce()
            else:
                asyncio.get_running_loop().call_later(DASHBOARD_ANNOUNCE_WAIT, announce)

        def dashboard(url: str) -> None:
            announce(f"dashboard: {url}  (log in with the token in {opts.data_dir / 'token'})")

        await run_up(opts, stop_event=stop, on_ready=ready, on_dashboard=dashboard)

    from pumice.node.agent import AgentError

    gc.set_threshold(*UP_GC_THRESHOLD)
    try:
        asyncio.run(main())
        # Everything has stopped and is on disk. What is left in memory (the store, informers,
        # caches: hundreds of MB with thousands of Pods) is only freed at exit; frozen, the
        # interpreter's last collections skip it (they took ~10 s after trial 14 F-5's churn).
        gc.freeze()
    except (OSError, DataDirInUse, AgentError) as e:
        from pumice.cli.main import one_line

        raise click.ClickException(one_line(e)) from None
    except SystemExit as e:  # uvicorn exits when it cannot bind after all
        if e.code not in (0, None):
            raise click.ClickException(f"the API server could not start on {host}:{port}") from None
