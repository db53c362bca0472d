"""``pumice node-agent``: run the node agent (kubelet) against a kubeconfig.

    pumice node-agent --kubeconfig K [--runtime process|simulated] [--nodes N] [--node-cpu C]
                      [--node-memory M] [--node-gpus G] [--node-name NAME ...] [--data-dir D]
                      [--network auto|netns|host] [--bridge NAME] [--pod-cidr CIDR]
                      [--pod-egress proxy|nat|none]
                      [--apiserver-url-for-pods URL] [--keep-pods] [--seed S]
                      [--sim-ray-dashboard HOST:PORT]

In netns mode the bridge and Pod range are derived from the API server URL, so that several agents
of one cluster share them while agents of different clusters on one machine do not (see
:func:`pumice.node.network.choose_instance_network`).

With ``--runtime simulated --sim-ray-dashboard HOST:PORT`` the agent also serves the simulated Ray
dashboard of every RayCluster at ``http://HOST:PORT/<namespace>/<name>/`` (the Jobs and Serve API,
see :func:`pumice.simulate.ray_dashboard.asgi_app`), so that a controller manager in another process
(``pumice controller-manager --ray-dashboard-proxy http://HOST:PORT``) runs RayJobs to the end. Its
state lives in this process, as a real dashboard's lives in the head Pod.

Stops cleanly on SIGINT/SIGTERM (Pods stopped and the network removed, unless ``--keep-pods``).
Bad input prints one line and exits non-zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any

import click

from pumice.cli._netopts import bridge_option, node_cpu_option, node_memory_option, pod_cidr_option
from pumice.cli._signals import stop_on_signals


async def _run(kubeconfig: str | None, options: dict[str, Any]) -> None:
    from pumice.client.kube import component_user_agent
    from pumice.client.kubeconfig import connect
    from pumice.node.agent import AgentConfig, AgentError, NodeAgent

    try:
        client = connect(kubeconfig, user_agent=component_user_agent("node-agent"))
    except (OSError, ValueError) as e:
        raise click.ClickException(f"cannot load kubeconfig {kubeconfig or '(default)'}: {e}") from e
    ray_dashboard = options.pop("sim_ray_dashboard")
    url = options.pop("apiserver_url_for_pods")
    if url is None:
        with contextlib.suppress(Exception):
            from pumice.client.kubeconfig import load

            url = str(load(kubeconfig).cluster.server)
    if options.get("network_scope") is None:
        options["network_scope"] = url
    stop = stop_on_signals(grace=45.0)  # Pods get their 30 s terminationGracePeriod
    try:
        agent = NodeAgent(client, AgentConfig(apiserver_url_for_pods=url, **options))
        await agent.start()
    except AgentError as e:
        await client.close()
        raise click.ClickException(str(e)) from e
    click.echo(f"pumice node-agent: nodes {', '.join(agent.nodes)} ({agent.runtime_kind} runtime"
               + (f", {agent.network.mode} network" if agent.network is not None else "")
               + (f", kubelet port {agent.kubelet_port}" if agent.kubelet_port else "") + ")")
    served = None
    try:
        if ray_dashboard is not None:
            served = await _serve_ray_dashboard(client, agent, ray_dashboard)
            click.echo(f"pumice node-agent: simulated Ray dashboards on http://{ray_dashboard}/<namespace>/<name>/")
        await _wait_stopped(agent, stop, served[1] if served is not None else None)
    finally:
        if served is not None:
            await served[0].stop()
            await served[1].stop()
        await agent.stop()
        await client.close()


async def _wait_stopped(agent: Any, stop: asyncio.Event, informers: Any) -> None:
    """Return when ``stop`` is set (:meth:`NodeAgent.wait_stopped`).

    Raises:
        what a task of ``agent`` failed with, or (MemoryError, a FATAL_TYPES error) what an
        informer of ``informers`` (the simulated Ray dashboards' SharedInformerFactory, or None)
        stopped with for good: the process fails rather than serve dashboards from a cache that
        no longer follows the API.
    """
    waits = [asyncio.ensure_future(agent.wait_stopped(stop))]
    if informers is not None:
        waits.append(asyncio.ensure_future(informers.wait_failed()))
    try:
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for t in done:
            t.result()
    finally:
        for t in waits:
            t.cancel()


async def _serve_ray_dashboard(client: Any, agent: Any, address: str) -> tuple[Any, Any]:
    """Serve the simulated Ray dashboards on ``address`` (HOST:PORT); returns (server, informers).

    Raises:
        click.ClickException: the address cannot be bound.
    """
    from pumice._util.clock import default_clock
    from pumice.client.informer import SharedInformerFactory
    from pumice.runtime.health import HealthServer
    from pumice.simulate.ray_dashboard import asgi_app, on_informers

    host, _, port = address.rpartition(":")
    informers = SharedInformerFactory(client)
    dashboard, clusters = on_informers(informers, agent.runtime.finish_pod, default_clock())
    await informers.start()
    server = HealthServer(asgi_app(dashboard, clusters), host=host or "127.0.0.1", port=int(port))
    try:
        await server.start()
    except OSError as e:
        await informers.stop()
        raise click.ClickException(f"cannot serve the simulated Ray dashboard on {address}: {e}") from e
    return server, informers


@click.command(name="node-agent")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help="Kubeconfig of the API server.")
@click.option("--runtime", type=click.Choice(["process", "simulated"]), default="process", show_default=True)
@click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True, help="Logical Nodes to host.")
@click.option("--node-cpu", default=None, callback=node_cpu_option, help="CPU per Node (quantity); default: the machine's.")
@click.option("--node-memory", default=None, callback=node_memory_option, help="Memory per Node (quantity); default: the machine's.")
@click.option("--node-gpus", type=click.IntRange(min=0), default=0, help="nvidia.com/gpu per Node.")
@click.option("--node-name", "node_names", multiple=True, help="Node names (one per --nodes).")
@click.option("--node-name-prefix", default="pumice-node", show_default=True)
@click.option("--data-dir", type=click.Path(file_okay=False), default="pumice-data/node", show_default=True)
@click.option("--network", type=click.Choice(["auto", "netns", "host"]), default="auto", show_default=True)
@click.option("--pod-cidr", default=None, callback=pod_cidr_option,
              help="Pod addresses (netns mode). Default: a free /22 of 10.244.0.0/16 derived from the bridge name.")
@click.option("--bridge", default=None, callback=bridge_option,
              help="Bridge name (netns mode). Default: pumice-<hash of the API server URL>.")
@click.option("--pod-egress", type=click.Choice(["proxy", "nat", "none"]), default="proxy", show_default=True)
@click.option("--apiserver-url-for-pods", default=None,
              help="API server URL Pods should use (default: the kubeconfig's server).")
@click.option("--keep-pods", is_flag=True, help="Leave Pods running when the agent stops; adopt them on restart.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the simulated runtime.")
@click.option("--sim-start-latency", type=float, default=1.0, show_default=True, help="Seconds (simulated).")
@click.option("--sim-ray-dashboard", default=None, metavar="HOST:PORT",
              help="Serve the simulated Ray dashboards (Jobs and Serve API) of every RayCluster at "
                   "http://HOST:PORT/<namespace>/<name>/ (simulated runtime only).")
@click.option("-v", "--verbose", is_flag=True)
def command(kubeconfig: str | None, runtime: str, nodes: int, node_cpu: str | None, node_memory: str | None,
            node_gpus: int, node_names: tuple[str, ...], node_name_prefix: str, data_dir: str, network: str,
            pod_cidr: str | None, bridge: str | None, pod_egress: str, apiserver_url_for_pods: str | None, keep_pods: bool, seed: int,
            sim_start_latency: float, sim_ray_dashboard: str | None, verbose: bool) -> None:
    """Run the node agent (kubelet): register Nodes and run the Pods bound to them."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not verbose:
        for noisy in ("httpx", "httpx2", "httpcore"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    if node_names and len(node_names) != nodes:
        raise click.BadParameter(f"{len(node_names)} --node-name given for --nodes {nodes}")
    if sim_ray_dashboard is not None:
        if runtime != "simulated":
            raise click.BadParameter("--sim-ray-dashboard needs --runtime simulated")
        _, sep, port = sim_ray_dashboard.rpartition(":")
        if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise click.BadParameter(f"--sim-ray-dashboard {sim_ray_dashboard!r}: expected HOST:PORT")
    options: dict[str, Any] = dict(
        runtime=runtime, data_dir=Path(data_dir), nodes=nodes, node_cpu=node_cpu, node_memory=node_memory,
        node_gpus=node_gpus, node_names=list(node_names) or None, node_name_prefix=node_name_prefix,
        network=network, pod_cidr=pod_cidr, bridge=bridge, pod_egress=pod_egress, apiserver_url_for_pods=apiserver_url_for_pods,
        keep_pods=keep_pods, seed=seed, sim_start_latency=sim_start_latency, sim_ray_dashboard=sim_ray_dashboard,
    )
    from pumice.cli._datadir import DataDirInUse, lock_data_dir

    try:
        lock = lock_data_dir(Path(data_dir))
    except (DataDirInUse, OSError) as e:
        raise click.ClickException(str(e)) from None
    try:
        asyncio.run(_run(kubeconfig, options))
    finally:
        lock.close()
