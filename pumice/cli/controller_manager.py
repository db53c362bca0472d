"""``pumice controller-manager``: run controllers against any API server named by a kubeconfig.

::

    pumice controller-manager --kubeconfig ~/.local/share/pumice/kubeconfig \\
        --controllers kube,ray,volcano --leader-elect --health-port 10257

Two replicas against one API server elect a leader through the Lease
``kube-system/pumice-controller-manager``; only the leader reconciles, the standby takes over
within the lease duration when the leader dies. SIGTERM/SIGINT stop it gracefully (in-flight
reconciles finish, the Lease is released). Exit status: 0 after a signal, 1 when the Lease was
lost or a controller crashed, 2 on bad usage.

On a real cluster run only ``--controllers ray,volcano`` (the cluster has its own kube
controllers).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from typing import Any

import click

from pumice.cli._controllers import CONTROLLER_GROUPS, controller_setups
from pumice.cli._files import FileOptionsCommand
from pumice.cli._signals import stop_on_signals
from pumice.runtime.manager import CacheSyncTimeout, LeaderElectionLost
from pumice.runtime.run import run_controller_manager

__all__ = ["command", "run_controller_manager"]

log = logging.getLogger("pumice.controller_manager")


def _parse_controllers(value: str) -> list[str]:
    names = [c.strip() for c in value.split(",") if c.strip()]
    unknown = [c for c in names if c not in CONTROLLER_GROUPS]
    if unknown or not names:
        raise click.BadParameter(
            f"unknown controllers {unknown or value!r}; choose from {','.join(sorted(CONTROLLER_GROUPS))}"
        )
    return names


async def _main(kubeconfig: str | None, controllers: list[str], *, leader_elect: bool, health_port: int | None,
                leader_election_namespace: str = "kube-system",
                batch_scheduler: str | None, identity: str | None, lease_duration: float,
                renew_deadline: float, retry_period: float, ray_dashboard_proxy: str | None = None,
                use_kubernetes_proxy: bool = False, kuberay_config: dict[str, Any] | None = None,
                watch_namespace: str = "") -> None:
    from pumice.client.kube import component_user_agent
    from pumice.client.kubeconfig import connect

    try:
        client = connect(kubeconfig, user_agent=component_user_agent("controller-manager"))
    except Exception as e:  # lightkube raises assorted errors for malformed files
        raise click.ClickException(f"cannot use kubeconfig {kubeconfig}: {type(e).__name__}: {e}") from e
    stop = stop_on_signals()
    try:
        await run_controller_manager(
            client, controller_setups(controllers, batch_scheduler=batch_scheduler, root_ca=_root_ca(kubeconfig),
                                      ray_options={**_ray_options(ray_dashboard_proxy, client if use_kubernetes_proxy
                                                                  else None), "watch_namespace": watch_namespace,
                                                   **(kuberay_config or {})}),
            leader_elect=leader_elect, leader_election_namespace=leader_election_namespace,
            stop_event=stop, health_port=health_port, identity=identity,
            lease_duration=lease_duration, renew_deadline=renew_deadline, retry_period=retry_period,
        )
    finally:
        with contextlib.suppress(Exception):
            await client.close()


def _ray_options(ray_dashboard_proxy: str | None, kube_proxy_client: Any = None) -> dict[str, object]:
    """The KubeRay controllers' dashboard seams: ``--use-kubernetes-proxy`` (``kube_proxy_client``:
    the manager's own client, whose credentials reach the API server's service proxy), else
    ``--ray-dashboard-proxy``, else none (the head Pod IP)."""
    if kube_proxy_client is not None:
        from pumice.controllers.ray.dashboard import (
            kubernetes_proxy_dashboard_client_factory,
            kubernetes_proxy_serve_health_check,
        )

        return {"dashboard_client_factory": kubernetes_proxy_dashboard_client_factory(kube_proxy_client.http),
                "serve_proxy_healthy": kubernetes_proxy_serve_health_check(kube_proxy_client.http)}
    if not ray_dashboard_proxy:
        return {}
    from pumice.controllers.ray.dashboard import (
        proxied_dashboard_client_factory,
        proxied_serve_proxy_health_check,
    )

    return {"dashboard_client_factory": proxied_dashboard_client_factory(ray_dashboard_proxy),
            "serve_proxy_healthy": proxied_serve_proxy_health_check(ray_dashboard_proxy)}


def _kuberay_config(path: str) -> dict[str, Any]:
    """The KubeRay ``setup`` keyword arguments of the configuration file at ``path``
    (:class:`~pumice.controllers.ray.options.KubeRayConfiguration`).

    Raises:
        click.BadParameter: unreadable YAML or a configuration pumice cannot use (the reason)."""
    from pathlib import Path

    from pumice._util.files import InputFileError
    from pumice.api.yamlsafe import read_yaml_document
    from pumice.controllers.ray.options import ConfigurationError, KubeRayConfiguration

    try:
        doc = read_yaml_document(Path(path))
        return KubeRayConfiguration.from_document(doc).setup_options()
    except InputFileError as e:  # names the file already
        raise click.BadParameter(str(e), param_hint="'--kuberay-config'") from e
    except (OSError, ConfigurationError) as e:
        raise click.BadParameter(f"{path}: {e}", param_hint="'--kuberay-config'") from e


def _root_ca(kubeconfig: str | None) -> str | None:
    """The kubeconfig's CA (``certificate-authority-data`` or ``certificate-authority``) for the
    root-ca-cert-publisher, as kube-controller-manager's --root-ca-file."""
    import base64
    from pathlib import Path

    from pumice._util.files import read_text_file
    from pumice.api.yamlsafe import read_yaml_document

    if not kubeconfig:
        return None
    try:
        cfg = read_yaml_document(Path(kubeconfig)) or {}
        ctx_name = cfg.get("current-context")
        ctx: dict[str, object] = next((c["context"] for c in cfg.get("contexts") or [] if c.get("name") == ctx_name), {})
        cluster: dict[str, str] = next((c["cluster"] for c in cfg.get("clusters") or [] if c.get("name") == ctx.get("cluster")), {})
        if cluster.get("certificate-authority-data"):
            return base64.b64decode(cluster["certificate-authority-data"]).decode()
        if cluster.get("certificate-authority"):
            return read_text_file(Path(cluster["certificate-authority"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:  # InputFileError is a ValueError
        log.warning("no CA for kube-root-ca.crt from %s: %s", kubeconfig, e)
    return None


@click.command(name="controller-manager", cls=FileOptionsCommand)
@click.option("--kubeconfig", default=None, type=click.Path(exists=True, dir_okay=False),
              help="kubeconfig naming the API server (default: $KUBECONFIG, ~/.kube/config, or in-cluster).")
@click.option("--controllers", default="kube,ray,volcano", show_default=True,
              help="Comma-separated controller groups: kube, ray, volcano.")
@click.option("--leader-elect/--no-leader-elect", default=True, show_default=True,
              help="Act only while holding the Lease <--leader-elect-resource-namespace>/pumice-controller-manager.")
@click.option("--health-port", type=int, default=None,
              help="Serve /healthz, /readyz and /metrics on 127.0.0.1:PORT.")
@click.option("--batch-scheduler",
              type=click.Choice(["volcano", "yunikorn", "scheduler-plugins", "kai-scheduler", "none"]),
              default="none", show_default=True,
              help="KubeRay's batch scheduler, one per operator (volcano: PodGroups and schedulerName volcano; "
                   "yunikorn, scheduler-plugins, kai-scheduler: their labels, annotations and objects).")
@click.option("--leader-elect-resource-namespace", default="kube-system", show_default=True,
              help="Namespace of the leader-election Lease (kube-controller-manager's flag; KubeRay's "
                   "--leader-election-namespace): a namespace-scoped install keeps it in its own namespace.")
@click.option("--identity", default=None, help="Leader-election identity (default hostname_uuid).")
@click.option("--lease-duration", type=float, default=15.0, show_default=True, help="Seconds.")
@click.option("--renew-deadline", type=float, default=10.0, show_default=True, help="Seconds.")
@click.option("--retry-period", type=float, default=2.0, show_default=True, help="Seconds.")
@click.option("--ray-dashboard-proxy", default=None, metavar="URL",
              help="Reach every RayCluster's Ray dashboard at URL/<namespace>/<name>/, and a head Pod's Serve proxy "
                   "health check at URL/serve-proxy/<pod IP>/<port>/-/healthz, instead of the Pod IP "
                   "(for example the simulated dashboards of `pumice node-agent --sim-ray-dashboard`).")
@click.option("--use-kubernetes-proxy", is_flag=True,
              help="Reach every RayCluster's Ray dashboard through the API server's service proxy "
                   "(<server>/api/v1/namespaces/<ns>/services/<head svc>:dashboard/proxy), and each head Pod's "
                   "Serve proxy health check through pods/<pod>:<port>/proxy/-/healthz, with this manager's "
                   "credentials and a 10 s timeout, as KubeRay's flag of the same name.")
@click.option("--watch-namespace", default="", metavar="NS[,NS...]",
              help="KubeRay's flag: the KubeRay controllers reconcile RayClusters, RayJobs and RayServices (and "
                   "their Pods, Services and Jobs) only in these namespaces, separated by commas; empty: all. "
                   "The kube and Volcano controllers still watch every namespace. A --kuberay-config file's "
                   "watchNamespace takes its place.")
@click.option("--kuberay-config", default=None, type=click.Path(exists=True, dir_okay=False),
              help="KubeRay's operator configuration file (its --config; apiVersion config.ray.io/v1alpha1, kind "
                   "Configuration): headSidecarContainers, workerSidecarContainers, defaultContainerEnvs, "
                   "defaultPodAnnotations, defaultPodLabels, deleteRayJobAfterJobFinishes, watchNamespace. Its other "
                   "keys are this "
                   "command's flags or not supported (refused, naming the flag).")
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
def command(kubeconfig: str | None, controllers: str, leader_elect: bool, health_port: int | None,
            leader_elect_resource_namespace: str,
            batch_scheduler: str, identity: str | None, lease_duration: float, renew_deadline: float,
            retry_period: float, ray_dashboard_proxy: str | None, use_kubernetes_proxy: bool,
            watch_namespace: str, kuberay_config: str | None, verbose: bool) -> None:
    """Run controllers against a kubeconfig until SIGTERM/SIGINT."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not verbose:
        for noisy in ("httpx2", "httpx", "httpcore", "uvicorn.access"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    names = _parse_controllers(controllers)
    if use_kubernetes_proxy and ray_dashboard_proxy:
        raise click.UsageError("--use-kubernetes-proxy and --ray-dashboard-proxy contradict each other")
    if not lease_duration > renew_deadline > 1.2 * retry_period > 0:
        raise click.BadParameter("need lease-duration > renew-deadline > 1.2 * retry-period > 0")
    kuberay_options = _kuberay_config(kuberay_config) if kuberay_config else None
    try:
        asyncio.run(_main(
            kubeconfig, names, leader_elect=leader_elect, health_port=health_port,
            leader_election_namespace=leader_elect_resource_namespace,
            batch_scheduler=None if batch_scheduler == "none" else batch_scheduler, identity=identity,
            lease_duration=lease_duration, renew_deadline=renew_deadline, retry_period=retry_period,
            ray_dashboard_proxy=ray_dashboard_proxy, use_kubernetes_proxy=use_kubernetes_proxy,
            kuberay_config=kuberay_options, watch_namespace=watch_namespace,
        ))
    except LeaderElectionLost as e:
        click.echo(f"controller-manager: leader election lost: {e}", err=True)
        sys.exit(1)
    except CacheSyncTimeout as e:
        click.echo(f"controller-manager: {e}", err=True)
        sys.exit(1)
