"""``pumice explain <kind>/<name>``: which gate holds a PodGroup, vcjob, RayJob or Pod, and what
would let it run, computed by running the Volcano scheduler's session on the current objects.

Kinds: ``podgroup``/``pg``, ``vcjob``/``vj``, ``rayjob``, ``raycluster``, ``pod``. The scheduler configuration is
``--scheduler-conf`` when given, else the one the running scheduler runs, as it records it on the
ConfigMap ``volcano-system/volcano-scheduler-configmap`` (annotation ``scheduling.pumice.io/conf-in-use``;
its ``volcano-scheduler.conf`` key for upstream's scheduler), else the scheduler's built-in
default, with a one-line warning on stderr.

Errors: a bad target, a missing object or an unreachable API server prints one line to stderr and
exits 1.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import click

from pumice.api.scheme import ResourceKind
from pumice.cli._files import FileOptionsCommand
from pumice.scheduler.volcano.explain import (
    SESSION_KINDS,
    ExplainError,
    Explanation,
    explain,
    target_resource,
)

DEFAULT_CONF_WARNING = ("Warning: no ConfigMap volcano-system/volcano-scheduler-configmap; replaying the built-in "
                        "default scheduler configuration (pass --scheduler-conf FILE if the scheduler runs another)")


async def gather_objects(client: Any, kind: str, name: str, namespace: str) -> list[dict[str, Any]]:
    """The objects a session needs (:data:`~pumice.scheduler.volcano.explain.SESSION_KINDS`: Nodes,
    HyperNodes, Pods, PodGroups, Queues, PriorityClasses, Namespaces) plus the target itself when it
    is not one of those (:func:`~pumice.scheduler.volcano.explain.target_resource`), listed through
    ``client``."""
    objects: list[dict[str, Any]] = []
    for rk in SESSION_KINDS:
        objects.extend(_with_kind(rk, (await client.list(rk)).items))
    target = target_resource(kind)
    if target is not None:
        objects.extend(_with_kind(target, [await client.get(target, name, namespace)]))
    return objects


def _with_kind(rk: ResourceKind, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for o in items:
        o.setdefault("apiVersion", rk.api_version)
        o.setdefault("kind", rk.kind)
    return items


async def scheduler_conf(client: Any, path: str | None, warn: Any = None) -> Any:
    """The configuration to replay: ``path`` when given, else the one the running scheduler runs,
    from ``volcano-system/volcano-scheduler-configmap`` (see ``read_published_conf``: pumice's
    scheduler annotates it with what it runs; on upstream's install the key is the mounted file),
    else the built-in default, after calling ``warn(message)``.

    Raises:
        ConfigError: the file or the ConfigMap's text is not a valid configuration.
        ApiError: the ConfigMap could not be read (other than 404).
    """
    from pumice.scheduler.volcano import default_conf, load_conf
    from pumice.scheduler.volcano.scheduler import read_published_conf

    if path:
        return load_conf(Path(path))
    conf = await read_published_conf(client, warn)
    if conf is not None:
        return conf
    if warn is not None:
        warn(DEFAULT_CONF_WARNING)
    return default_conf()


def parse_target(target: str) -> tuple[str, str]:
    """``kind/name`` -> (kind, name).

    Raises:
        ExplainError: not of that form.
    """
    kind, sep, name = target.partition("/")
    if not sep or not kind or not name:
        raise ExplainError(f"target must be <kind>/<name>, got {target!r}")
    return kind, name


async def explain_live(client: Any, target: str, namespace: str, conf_path: str | None = None,
                       now: float | None = None, warn: Any = None) -> Explanation:
    """Explain ``target`` (``kind/name``) against a live API server through ``client``; ``warn``
    (a function of one line) is told when the built-in default configuration is replayed.

    Raises:
        ExplainError: a malformed target or a missing object.
        ConfigError: see :func:`scheduler_conf`.
    """
    from pumice.client.base import is_not_found

    kind, name = parse_target(target)
    try:
        objects = await gather_objects(client, kind, name, namespace)
    except Exception as e:
        if is_not_found(e):
            raise ExplainError(f"{kind} {namespace}/{name} not found") from e
        raise
    conf = await scheduler_conf(client, conf_path, warn)
    if now is None:
        from pumice._util.clock import default_clock

        now = default_clock().now()
    return explain(objects, kind, name, namespace, conf, now=now)


@click.command(name="explain", cls=FileOptionsCommand)
@click.argument("target")
@click.option("-n", "--namespace", default="default", show_default=True, help="Namespace of the target.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help="Kubeconfig file.")
@click.option("--context", default=None, help="Kubeconfig context.")
@click.option("--scheduler-conf", type=click.Path(exists=True, dir_okay=False), default=None,
              help="volcano-scheduler.conf to run the session with.")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(target: str, namespace: str, kubeconfig: str | None, context: str | None,
            scheduler_conf: str | None, output: str) -> None:
    """Say which gate holds TARGET (podgroup/NAME, vcjob/NAME, rayjob/NAME, raycluster/NAME, pod/NAME) and what would
    let it run, by running the Volcano scheduler's session on the cluster's current objects."""
    from pumice.client.kube import component_user_agent
    from pumice.client.kubeconfig import connect

    def warn(line: str) -> None:
        click.echo(line, err=True)

    async def main() -> Explanation:
        client = connect(kubeconfig, context=context, user_agent=component_user_agent("explain"))
        try:
            return await explain_live(client, target, namespace, scheduler_conf, warn=warn)
        finally:
            await client.close()

    try:
        parse_target(target)  # a malformed target is reported before the kubeconfig is read
        ex = asyncio.run(main())
    except ExplainError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(1)
    except Exception as e:  # unreachable server, bad kubeconfig, bad configuration ...
        from pumice.cli.main import one_line

        click.echo(f"Error: {one_line(e)}", err=True)
        sys.exit(1)
    click.echo(json.dumps(ex.to_json(), indent=2) if output == "json" else ex.render())
