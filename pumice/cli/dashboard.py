"""``pumice dashboard``: the web UI against any API server a kubeconfig names.

The dashboard lists and watches through the kubeconfig's credentials; people log in with a
bearer token the API server accepts. ``--metrics-url`` (repeatable) adds Prometheus endpoints
whose Volcano, KubeRay and controller metrics are charted.

Errors: an unreadable kubeconfig, a taken port or an API server that does not answer (its first
request, `GET /version`, gets no connection) prints one line and exits 1. SIGTERM or SIGINT stops
it at once, also while it waits for the API server or its first lists.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import click

from pumice.cli._files import FileOptionsCommand
from pumice.cli._signals import stop_on_signals


@click.command(name="dashboard", cls=FileOptionsCommand)
@click.option("--kubeconfig", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Kubeconfig of the API server (default: $KUBECONFIG or ~/.kube/config).")
@click.option("--context", default=None, help="Kubeconfig context.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="Port (0: a free one).")
@click.option("--metrics-url", "metrics_urls", multiple=True,
              help="A Prometheus /metrics URL to chart (e.g. a scheduler's); repeatable.")
@click.option("--scheduler-conf", type=click.Path(exists=True, dir_okay=False), default=None,
              help="volcano-scheduler.conf the 'why is it waiting' panels replay (default: the one the "
                   "running Volcano scheduler runs, from its ConfigMap).")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --host (put TLS in front of it).")
@click.option("-v", "--verbose", is_flag=True)
def command(kubeconfig: Path | None, context: str | None, host: str, port: int, metrics_urls: tuple[str, ...],
            scheduler_conf: str | None, allow_remote: bool, verbose: bool) -> None:
    """Serve the web UI (queues, gangs, Ray clusters, jobs and services, and why each waits)."""
    from pumice.dashboard.server import run_dashboard, url_metric_source

    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        sources = [url_metric_source(u) for u in metrics_urls]
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="'--metrics-url'") from None

    async def main() -> None:
        stop = stop_on_signals()

        def ready(url: str) -> None:
            click.echo(f"dashboard: {url}  (log in with the API server's bearer token)", err=True)
            sys.stderr.flush()

        await run_dashboard(kubeconfig, context=context, host=host, port=port,
                            metric_sources=sources, stop_event=stop,
                            on_ready=ready, scheduler_conf=scheduler_conf, allow_remote=allow_remote)

    try:
        asyncio.run(main())
    except (OSError, ValueError) as e:
        raise click.ClickException(str(e)) from None
