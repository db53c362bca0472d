"""``pumice webhook``: serve Volcano's admission webhooks over HTTPS
for a real kube-apiserver, with the same plugins ``pumice up`` runs in its API server.

The certificate is the one the webhook configuration's ``caBundle`` trusts (``pumice install
--print`` makes both and mounts them from a Secret).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from pathlib import Path

import click

from pumice._util.tls import key_pair_error
from pumice.cli._files import FileOptionsCommand
from pumice.cli._signals import stop_on_signals


@click.command(name="webhook", cls=FileOptionsCommand)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="kubeconfig (default: in-cluster or ~/.kube/config)")
@click.option("--host", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--port", default=8443, show_default=True, type=int)
@click.option("--tls-cert-file", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option("--tls-private-key-file", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option("--scheduler-name", default="volcano", show_default=True,
              help="schedulerName Volcano Jobs default to and Pod validation applies to.")
@click.option("-v", "--verbose", is_flag=True)
def command(kubeconfig: str | None, host: str, port: int, tls_cert_file: str, tls_private_key_file: str,
            scheduler_name: str, verbose: bool) -> None:
    """Serve the Volcano admission webhooks over HTTPS."""
    import uvicorn

    from pumice.client.kube import component_user_agent
    from pumice.client.kubeconfig import connect
    from pumice.controllers.webhook import build_app, default_webhooks
    from pumice.runtime.health import QuietServer

    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        client = connect(kubeconfig, user_agent=component_user_agent("webhook"))
    except (OSError, ValueError) as e:
        raise click.ClickException(f"cannot load kubeconfig {kubeconfig or '(default)'}: {e}") from None
    try:  # uvicorn would only say "PEM lib": name the files and say what is wrong with them
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(tls_cert_file, tls_private_key_file)
    except ssl.SSLError as e:
        why = key_pair_error(Path(tls_cert_file).read_bytes(), Path(tls_private_key_file).read_bytes(), e)
        raise click.ClickException(f"cannot use --tls-cert-file {tls_cert_file} with --tls-private-key-file "
                                   f"{tls_private_key_file}: {why}") from None
    except OSError as e:
        raise click.ClickException(f"cannot use --tls-cert-file {tls_cert_file} with --tls-private-key-file "
                                   f"{tls_private_key_file}: {e}") from None
    hooks = default_webhooks(scheduler_name=scheduler_name)
    app = build_app(hooks, client)

    async def main() -> None:
        stop = stop_on_signals()
        config = uvicorn.Config(app, host=host, port=port, ssl_certfile=str(Path(tls_cert_file)),
                                ssl_keyfile=str(Path(tls_private_key_file)), log_level="warning", lifespan="off",
                                access_log=False, server_header=False)
        server = QuietServer(config)
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if task.done():
            await task
            raise click.ClickException(f"cannot listen on {host}:{port}")
        click.echo(f"pumice webhook serving {len(hooks)} webhooks on https://{host}:{port}", err=True)
        waiter = asyncio.create_task(stop.wait())
        await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
        server.should_exit = True
        await task
        waiter.cancel()
        await client.close()

    asyncio.run(main())
