"""``pumice apiserver``: run the Kubernetes-compatible API server alone.

Writes ``<data-dir>/kubeconfig`` (bearer token; CA data when TLS) and prints where it is. Binding
to a non-loopback ``--host`` turns TLS on (self-signed certificate in the data dir). Takes the data
dir's lock (:mod:`pumice.cli._datadir`) as ``pumice up`` does, and refuses a dir another pumice holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

import click

from pumice.cli._datadir import DataDirInUse, lock_data_dir
from pumice.cli._serviceopts import (
    ADVERTISE_ADDRESS_HELP,
    DEFAULT_NODE_PORT_RANGE,
    DEFAULT_SERVICE_CIDR,
    NODE_PORT_RANGE_HELP,
    SERVICE_CIDR_HELP,
    advertise_address_option,
    node_port_range_option,
    service_cidr_option,
)
from pumice.cli._signals import stop_on_signals

DEFAULT_DATA_DIR = "~/.local/share/pumice"


@click.command(name="apiserver")
@click.option("--data-dir", default=DEFAULT_DATA_DIR, show_default=True, help="Where the database, token and "
              "kubeconfig live.")
@click.option("--port", default=6443, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on (0: any free port).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind; non-loopback needs TLS.")
@click.option("--no-crds", is_flag=True, help="Do not install the built-in ray.io and volcano CRDs.")
@click.option("--durability", type=click.Choice(["strict", "relaxed"]), default="strict", show_default=True,
              help="strict: a write is acknowledged once it is on disk (survives a power cut); relaxed: once "
              "committed (survives a killed process only), for throwaway clusters.")
@click.option("--service-cluster-ip-range", default=DEFAULT_SERVICE_CIDR, show_default=True, callback=service_cidr_option,
              help=SERVICE_CIDR_HELP)
@click.option("--service-node-port-range", default=DEFAULT_NODE_PORT_RANGE, show_default=True, callback=node_port_range_option,
              help=NODE_PORT_RANGE_HELP)
@click.option("--advertise-address", default=None, callback=advertise_address_option, help=ADVERTISE_ADDRESS_HELP)
def command(data_dir: str, port: int, host: str, no_crds: bool, durability: str, service_cluster_ip_range: str,
            service_node_port_range: tuple[int, int], advertise_address: str | None) -> None:
    """Run the Kubernetes-compatible API server alone."""
    from pumice.apiserver.server import APIServer
    from pumice.apiserver.storage import StorageError

    path = Path(data_dir).expanduser()
    try:
        lock = lock_data_dir(path)
    except (DataDirInUse, NotADirectoryError) as e:
        raise click.ClickException(str(e)) from None
    except OSError as e:
        raise click.ClickException(f"cannot open data dir {path}: {e}") from None
    try:
        server = APIServer(path, install_crds=not no_crds, durability=durability,
                           service_cluster_ip_range=service_cluster_ip_range,
                           service_node_port_range=service_node_port_range,
                           advertise_address=advertise_address)
    except (StorageError, OSError) as e:
        lock.close()
        raise click.ClickException(f"cannot open data dir {path}: {e}") from None

    async def main() -> None:
        stop = stop_on_signals()
        ready = asyncio.Event()
        task = asyncio.create_task(server.serve(host, port, ready=ready))
        waiter = asyncio.create_task(ready.wait())
        await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
        if ready.is_set():
            click.echo(f"pumice apiserver listening on {server.url}")
            click.echo(f"kubeconfig: {path / 'kubeconfig'}  (export KUBECONFIG={path / 'kubeconfig'})")
            sys.stdout.flush()
        else:
            waiter.cancel()
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait([task, stopping], return_when=asyncio.FIRST_COMPLETED)
        if not task.done():  # SIGTERM/SIGINT: uvicorn stops gracefully when its task is cancelled
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        stopping.cancel()
        await task if not task.cancelled() else None

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    except (ValueError, RuntimeError, OSError) as e:
        raise click.ClickException(str(e)) from None
    finally:
        with contextlib.suppress(Exception):
            server.close()
        lock.close()
