"""``pumice scheduler``: run the default scheduler or the Volcano scheduler against a kubeconfig.

    pumice scheduler --kubeconfig K [--name default-scheduler|volcano|agent-scheduler] [--schedule-period 1s]
                     [--scheduler-conf FILE] [--scheduler-worker-count N]

``--name default-scheduler`` (the default) runs :mod:`pumice.scheduler.default`; ``--name volcano``
runs :func:`pumice.scheduler.volcano.run`; ``--name agent-scheduler`` runs Volcano 1.14's Agent
Scheduler (:mod:`pumice.scheduler.volcano.agent.live`). Bad input prints one line and exits non-zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from typing import Any

import click

from pumice.cli._duration import GoDuration
from pumice.cli._files import FileOptionsCommand
from pumice.cli._signals import stop_on_signals

AGENT = "agent-scheduler"


async def _make_client(kubeconfig: str | None, component: str) -> Any:
    from pumice.client.kube import component_user_agent
    from pumice.client.kubeconfig import connect

    try:
        return connect(kubeconfig, user_agent=component_user_agent(component))
    except (OSError, ValueError) as e:
        raise click.ClickException(f"cannot load kubeconfig {kubeconfig or '(default)'}: {e}") from e


async def _run(kubeconfig: str | None, name: str, period: float, conf: str | None, sharding_mode: str = "none",
               sharding_name: str | None = None, workers: int = 1) -> None:
    component = {"volcano": "volcano-scheduler", AGENT: "agent-scheduler"}.get(name, "scheduler")
    client = await _make_client(kubeconfig, component)
    stop = stop_on_signals()
    try:
        if name == AGENT:
            from pumice.scheduler.volcano.agent.live import run as run_agent

            await run_agent(client, scheduler_name=name, workers=workers, stop_event=stop, sharding_mode=sharding_mode,
                            shard_name=sharding_name)
        elif name == "volcano":
            try:
                volcano = importlib.import_module("pumice.scheduler.volcano")
                run = volcano.run
            except (ModuleNotFoundError, AttributeError) as e:
                raise click.ClickException(f"the Volcano scheduler is not available in this build: {e}") from e
            config_error: type[BaseException] = getattr(volcano, "ConfigError", ValueError)
            try:
                await run(client, conf_path=conf, schedule_period=period, scheduler_name="volcano", stop_event=stop,
                          sharding_mode=sharding_mode, shard_name=sharding_name,
                          # one scheduler per cluster publishes its configuration for explain
                          publish_conf=sharding_mode == "none")
            except config_error as e:
                raise click.ClickException(f"bad --scheduler-conf {conf}: {e}") from e
        else:
            from pumice.scheduler.default.scheduler import run_scheduler

            await run_scheduler(client, scheduler_name=name, stop_event=stop)
    finally:
        with contextlib.suppress(Exception):
            await client.close()


@click.command(name="scheduler", cls=FileOptionsCommand)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help="kubeconfig file")
@click.option("--name", "name", default="default-scheduler", show_default=True,
              help="schedulerName served: default-scheduler (or another name for the default scheduler), volcano, agent-scheduler")
@click.option("--schedule-period", default="1s", show_default=True, type=GoDuration(),
              help="Volcano session period (a Go duration, as vc-scheduler's flag)")
@click.option("--scheduler-conf", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Volcano scheduler configuration (YAML)")
@click.option("--scheduler-sharding-mode", type=click.Choice(["none", "hard", "soft"]), default="none", show_default=True,
              help="Volcano / agent-scheduler: every Node, only this scheduler's NodeShard's Nodes (hard), or "
                   "its Nodes first and the others when they are full (soft)")
@click.option("--scheduler-sharding-name", default=None, help="Volcano: the NodeShard to read (default: volcano)")
@click.option("--scheduler-worker-count", type=click.IntRange(min=1), default=1, show_default=True,
              help="agent-scheduler: parallel workers")
def command(kubeconfig: str | None, name: str, schedule_period: float, scheduler_conf: str | None,
            scheduler_sharding_mode: str, scheduler_sharding_name: str | None, scheduler_worker_count: int) -> None:
    """Run the default, the Volcano or the Volcano Agent scheduler."""
    if schedule_period <= 0:
        raise click.BadParameter("must be positive", param_hint="'--schedule-period'")
    period = schedule_period
    if scheduler_conf and name != "volcano":
        raise click.UsageError("--scheduler-conf applies to --name volcano only")
    if scheduler_sharding_mode != "none" and name not in ("volcano", AGENT):
        raise click.UsageError("--scheduler-sharding-mode applies to --name volcano or agent-scheduler only")
    if scheduler_worker_count != 1 and name != AGENT:
        raise click.UsageError("--scheduler-worker-count applies to --name agent-scheduler only")
    asyncio.run(_run(kubeconfig, name, period, scheduler_conf, scheduler_sharding_mode, scheduler_sharding_name,
                     scheduler_worker_count))
