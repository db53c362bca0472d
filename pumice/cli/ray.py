"""``pumice ray``: the kubectl-ray plugin's verbs against ``pumice up`` or any kubeconfig.

- ``get cluster [NAME] [-A]``, ``get workergroup [GROUP] [-c CLUSTER] [-A]``,
  ``get node [NODE] [-c CLUSTER] [-A]``: the plugin's tables (same columns);
- ``create cluster NAME [flags] [--dry-run] [--wait --timeout 5m]``: a RayCluster with the plugin's
  defaults (head 2 CPU / 4Gi, one worker group ``default-group`` of 1 × 2 CPU / 4Gi, head ports
  6379 ``gcs-server``, 8265 ``dashboard``, 10001 ``client``);
- ``scale cluster CLUSTER -w GROUP [-r N] [--min-replicas N] [--max-replicas N]``;
- ``delete RESOURCE... [-y]`` (``NAME`` is a RayCluster, else ``raycluster|rayjob|rayservice/NAME``);
- ``job submit --name N -- ENTRYPOINT``: an InteractiveMode RayJob, then the local ``ray job submit``
  with ``--submission-id`` to the cluster's dashboard (the head Pod IP, which the host reaches in
  ``pumice up``; ``--address`` overrides it).

Errors print one line and exit 1.

Mirrors: kuberay kubectl-plugin/pkg/cmd (get/get_cluster.go, get_workergroup.go, get_nodes.go,
create/create_cluster.go, scale/scale_cluster.go, delete/delete.go, job/job_submit.go) and
pkg/util/conditions.go RelevantRayClusterCondition.

Deviates: ``session`` and ``log`` are not provided (pumice serves no port-forward or exec; the head
Pod IP is reachable from the host in ``pumice up``, and ``kubectl logs`` works); ``job submit``
dials the head Pod IP instead of a port-forward.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import click
import yaml

from pumice._util.clock import default_clock, parse_rfc3339
from pumice.api import Obj, scheme
from pumice.client.base import KubeClient

DEFAULT_RAY_VERSION = "2.52.0"
DEFAULT_IMAGE = f"rayproject/ray:{DEFAULT_RAY_VERSION}"
_CONDITION_PRECEDENCE = ("RayClusterProvisioned", "HeadPodReady", "RayClusterReplicaFailure", "RayClusterSuspended",
                         "RayClusterSuspending")
_KINDS = {"raycluster": scheme.RAY_CLUSTER, "rayjob": scheme.RAY_JOB, "rayservice": scheme.RAY_SERVICE}


class RayCliError(Exception):
    """A user-facing failure: printed as one line."""


def relevant_condition(cluster: Obj) -> str:
    """The first True condition in the plugin's order of precedence, or ``""``."""
    conds = {x.get("type"): x.get("status") for x in (cluster.get("status") or {}).get("conditions") or []}
    return next((t for t in _CONDITION_PRECEDENCE if conds.get(t) == "True"), "")


def human_age(created: str, now: float) -> str:
    """apimachinery HumanDuration-like: ``45s``, ``3m``, ``5h``, ``2d``; ``<unknown>`` without a time."""
    if not created:
        return "<unknown>"
    s = int(max(0.0, now - parse_rfc3339(created)))
    if s < 120:
        return f"{s}s"
    if s < 3600 * 3:
        return f"{s // 60}m"
    if s < 86400 * 2:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """kubectl's plain table: upper-case headers, columns padded with three spaces."""
    cells = [[h.upper() for h in headers], *[[str(v) for v in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join("   ".join(v.ljust(widths[i]) for i, v in enumerate(r)).rstrip() for r in cells)


def _quantity(status: Obj, key: str) -> str:
    return str(status.get(key) or "0")


def cluster_rows(clusters: list[Obj], now: float) -> list[list[Any]]:
    rows = []
    for cl in clusters:
        st = cl.get("status") or {}
        rows.append([cl["metadata"]["name"], cl["metadata"].get("namespace", ""), st.get("desiredWorkerReplicas", 0),
                     st.get("availableWorkerReplicas", 0), _quantity(st, "desiredCPU"), _quantity(st, "desiredGPU"),
                     _quantity(st, "desiredTPU"), _quantity(st, "desiredMemory"), relevant_condition(cl),
                     st.get("state", ""), human_age(cl["metadata"].get("creationTimestamp", ""), now)])
    return rows


def _resource_cells(pod_spec: Obj) -> tuple[str, str, str, str]:
    """CPUs, GPUs (every GPU-like key summed), TPUs and memory of one Pod's containers."""
    from fractions import Fraction

    from pumice.controllers.ray.common import resources as res

    rl = res.pod_resources(pod_spec)
    gpus = sum((v for k, v in rl.items() if res.is_gpu_resource_key(k)), start=Fraction(0))

    def cell(name: str, amount: Fraction | None) -> str:
        return res.format_quantity(name, amount) if amount else "0"
    return (cell("cpu", rl.get("cpu")), cell("nvidia.com/gpu", gpus), cell("google.com/tpu", rl.get("google.com/tpu")),
            cell("memory", rl.get("memory")))


async def workergroup_rows(client: KubeClient, clusters: list[Obj], group: str | None) -> list[list[Any]]:
    from pumice.api.meta import pod_is_ready
    from pumice.controllers.ray.common import resources as res

    rows = []
    for cl in clusters:
        ns, name = cl["metadata"].get("namespace", "default"), cl["metadata"]["name"]
        pods = (await client.list(scheme.POD, ns, label_selector=f"ray.io/cluster={name},ray.io/node-type=worker")).items
        for g in (cl.get("spec") or {}).get("workerGroupSpecs") or []:
            if group and g.get("groupName") != group:
                continue
            ready = sum(1 for p in pods if (p["metadata"].get("labels") or {}).get("ray.io/group") == g.get("groupName")
                        and pod_is_ready(p))
            mn, mx = res.group_min_max(g)
            cpu, gpu, tpu, mem = _resource_cells(((g.get("template") or {}).get("spec")) or {})
            rows.append([g.get("groupName", ""), mn, mx, f"{ready}/{res.group_desired_replicas(g)}", cpu, gpu, tpu,
                         mem, name])
    return rows


async def node_rows(client: KubeClient, namespace: str | None, cluster: str | None, node: str | None,
                    now: float) -> list[list[Any]]:
    sel = "ray.io/is-ray-node=yes" + (f",ray.io/cluster={cluster}" if cluster else "")
    rows = []
    for p in (await client.list(scheme.POD, namespace, label_selector=sel)).items:
        if node and p["metadata"]["name"] != node:
            continue
        labels = p["metadata"].get("labels") or {}
        rows.append([p["metadata"]["name"], *_resource_cells(p.get("spec") or {}),
                     labels.get("ray.io/cluster", ""), labels.get("ray.io/node-type", ""), labels.get("ray.io/group", ""),
                     human_age(p["metadata"].get("creationTimestamp", ""), now)])
    return rows


def build_cluster(name: str, namespace: str, *, ray_version: str, image: str, head_cpu: str, head_memory: str,
                  head_gpu: str, worker_replicas: int, worker_cpu: str, worker_memory: str, worker_gpu: str,
                  labels: dict[str, str], annotations: dict[str, str], autoscaler: str | None) -> Obj:
    """The RayCluster ``create cluster`` makes (the plugin's defaults and flags)."""

    def resources(cpu: str, mem: str, gpu: str) -> Obj:
        r: Obj = {"requests": {"cpu": cpu, "memory": mem}, "limits": {"memory": mem}}
        if gpu and gpu != "0":
            r["requests"]["nvidia.com/gpu"] = gpu
            r["limits"]["nvidia.com/gpu"] = gpu
        return r

    meta: Obj = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    spec: Obj = {
        "rayVersion": ray_version,
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{
            "name": "ray-head", "image": image, "resources": resources(head_cpu, head_memory, head_gpu),
            "ports": [{"name": "gcs-server", "containerPort": 6379}, {"name": "dashboard", "containerPort": 8265},
                      {"name": "client", "containerPort": 10001}]}]}}},
        "workerGroupSpecs": [{"groupName": "default-group", "replicas": worker_replicas, "minReplicas": worker_replicas,
                              "maxReplicas": worker_replicas, "rayStartParams": {}, "template": {"spec": {"containers": [{
                                  "name": "ray-worker", "image": image,
                                  "resources": resources(worker_cpu, worker_memory, worker_gpu)}]}}}],
    }
    if autoscaler:
        spec["enableInTreeAutoscaling"] = True
        spec["autoscalerOptions"] = {"version": autoscaler}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": meta, "spec": spec}


def scale_group(cluster: Obj, group: str, replicas: int | None, min_replicas: int | None,
                max_replicas: int | None) -> str:
    """Apply the scale flags to ``cluster`` in place. Returns the changes ("" when nothing changes).

    Raises:
        RayCliError: unknown group (listing the groups) or an inconsistent final min/replicas/max.
    """
    ns, name = cluster["metadata"].get("namespace", "default"), cluster["metadata"]["name"]
    groups = (cluster.get("spec") or {}).get("workerGroupSpecs") or []
    g = next((x for x in groups if x.get("groupName") == group), None)
    if g is None:
        raise RayCliError(f"worker group {group} not found in Ray cluster {name} in namespace {ns}. Available worker "
                          f"groups: {', '.join(x.get('groupName', '') for x in groups)}")
    changes = []
    cur_min, cur_max, cur = int(g.get("minReplicas") or 0), int(g.get("maxReplicas") or 0), int(g.get("replicas") or 0)
    if min_replicas is not None and min_replicas != cur_min:
        changes.append(f"Scaled minReplicas: {cur_min} to {min_replicas}")
    if max_replicas is not None and max_replicas != cur_max:
        changes.append(f"Scaled maxReplicas: {cur_max} to {max_replicas}")
    if replicas is not None and replicas != cur:
        changes.append(f"Scaled Replicas: {cur} to {replicas}")
    fmin = cur_min if min_replicas is None else min_replicas
    fmax = cur_max if max_replicas is None else max_replicas
    frep = cur if replicas is None else replicas
    if fmin > fmax:
        raise RayCliError(f"cannot set --min-replicas ({fmin}) greater than --max-replicas ({fmax})")
    if frep < fmin:
        raise RayCliError(f"cannot set --replicas ({frep}) less than --min-replicas ({fmin})")
    if frep > fmax:
        raise RayCliError(f"cannot set --replicas ({frep}) greater than --max-replicas ({fmax})")
    g["minReplicas"], g["maxReplicas"], g["replicas"] = fmin, fmax, frep
    return ", ".join(changes)


def parse_resource(arg: str) -> tuple[str, str]:
    """``NAME`` → (raycluster, NAME); ``kind/NAME`` with kind raycluster|rayjob|rayservice.

    Raises:
        RayCliError: another kind.
    """
    if "/" not in arg:
        return "raycluster", arg
    kind, _, name = arg.partition("/")
    kind = kind.lower()
    if kind not in _KINDS or not name:
        raise RayCliError(f"unsupported resource {arg!r}: use NAME or raycluster|rayjob|rayservice/NAME")
    return kind, name


# --- click wiring ----------------------------------------------------------------------------------

def _run(kubeconfig: str | None, context: str | None, fn: Callable[[KubeClient], Awaitable[None]]) -> None:
    from pumice.client.kube import component_user_agent
    from pumice.client.kubeconfig import connect

    async def main() -> None:
        client = connect(kubeconfig, context=context, user_agent=component_user_agent("kubectl-ray"))
        try:
            await fn(client)
        finally:
            await client.close()

    try:
        asyncio.run(main())
    except RayCliError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(1)
    except Exception as e:
        from pumice.cli.main import one_line

        click.echo(f"Error: {one_line(e)}", err=True)
        sys.exit(1)


def _conn(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--context", default=None, help="Kubeconfig context.")(f)
    f = click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help="Kubeconfig file.")(f)
    return click.option("-n", "--namespace", default="default", show_default=True)(f)


@click.group(name="ray")
def command() -> None:
    """The kubectl-ray verbs: get, create, scale, delete, job submit."""


@command.group(name="get")
def get_group() -> None:
    """Show RayClusters, worker groups or Ray nodes."""


@get_group.command(name="cluster")
@click.argument("name", required=False)
@click.option("-A", "--all-namespaces", is_flag=True)
@_conn
def get_cluster(name: str | None, all_namespaces: bool, namespace: str, kubeconfig: str | None,
                context: str | None) -> None:
    """RayClusters: desired/available workers, resources, the relevant condition, state, age."""
    async def fn(client: KubeClient) -> None:
        items = (await client.list(scheme.RAY_CLUSTER, None if all_namespaces else namespace)).items
        if name:
            items = [x for x in items if x["metadata"]["name"] == name]
            if not items:
                raise RayCliError(f"Ray cluster {name} not found in namespace {namespace}")
        click.echo(table(["Name", "Namespace", "Desired Workers", "Available Workers", "CPUs", "GPUs", "TPUs",
                          "Memory", "Condition", "Status", "Age"], cluster_rows(items, default_clock().now())))
    _run(kubeconfig, context, fn)


@get_group.command(name="workergroup")
@click.argument("group", required=False)
@click.option("-c", "--ray-cluster", default=None)
@click.option("-A", "--all-namespaces", is_flag=True)
@_conn
def get_workergroup(group: str | None, ray_cluster: str | None, all_namespaces: bool, namespace: str,
                    kubeconfig: str | None, context: str | None) -> None:
    """Worker groups: min, max, ready/desired replicas, per-replica resources, cluster."""
    async def fn(client: KubeClient) -> None:
        items = (await client.list(scheme.RAY_CLUSTER, None if all_namespaces else namespace)).items
        if ray_cluster:
            items = [x for x in items if x["metadata"]["name"] == ray_cluster]
        click.echo(table(["Name", "Min", "Max", "Replicas", "CPUs", "GPUs", "TPUs", "Memory", "Cluster"],
                         await workergroup_rows(client, items, group)))
    _run(kubeconfig, context, fn)


@get_group.command(name="node")
@click.argument("node", required=False)
@click.option("-c", "--ray-cluster", default=None)
@click.option("-A", "--all-namespaces", is_flag=True)
@_conn
def get_node(node: str | None, ray_cluster: str | None, all_namespaces: bool, namespace: str,
             kubeconfig: str | None, context: str | None) -> None:
    """Ray node Pods: resources, cluster, type, worker group, age."""
    async def fn(client: KubeClient) -> None:
        rows = await node_rows(client, None if all_namespaces else namespace, ray_cluster, node, default_clock().now())
        click.echo(table(["Name", "CPUs", "GPUs", "TPUs", "Memory", "Cluster", "Type", "Worker Group", "Age"], rows))
    _run(kubeconfig, context, fn)


@command.group(name="create")
def create_group() -> None:
    """Create a RayCluster."""


def _kv(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for v in values:
        k, sep, val = v.partition("=")
        if not sep:
            raise click.BadParameter(f"{v!r} is not key=value")
        out[k] = val
    return out


@create_group.command(name="cluster")
@click.argument("name")
@click.option("--ray-version", default=DEFAULT_RAY_VERSION, show_default=True)
@click.option("--image", default=None, help="Default: rayproject/ray:<ray-version>.")
@click.option("--head-cpu", default="2", show_default=True)
@click.option("--head-memory", default="4Gi", show_default=True)
@click.option("--head-gpu", default="0", show_default=True)
@click.option("--worker-replicas", default=1, show_default=True, type=int)
@click.option("--worker-cpu", default="2", show_default=True)
@click.option("--worker-memory", default="4Gi", show_default=True)
@click.option("--worker-gpu", default="0", show_default=True)
@click.option("--labels", multiple=True, help="key=value, repeatable.")
@click.option("--annotations", multiple=True, help="key=value, repeatable.")
@click.option("--autoscaler", type=click.Choice(["v1", "v2"]), default=None)
@click.option("--dry-run", is_flag=True, help="Print the RayCluster YAML instead of creating it.")
@click.option("--wait", is_flag=True, help="Wait until RayClusterProvisioned or state ready.")
@click.option("--timeout", default=300, show_default=True, type=int, help="Seconds to --wait.")
@_conn
def create_cluster(name: str, ray_version: str, image: str | None, head_cpu: str, head_memory: str, head_gpu: str,
                   worker_replicas: int, worker_cpu: str, worker_memory: str, worker_gpu: str,
                   labels: tuple[str, ...], annotations: tuple[str, ...], autoscaler: str | None, dry_run: bool,
                   wait: bool, timeout: int, namespace: str, kubeconfig: str | None, context: str | None) -> None:
    """Create RayCluster NAME with the plugin's defaults and these flags."""
    cluster = build_cluster(name, namespace, ray_version=ray_version, image=image or f"rayproject/ray:{ray_version}",
                            head_cpu=head_cpu, head_memory=head_memory, head_gpu=head_gpu,
                            worker_replicas=worker_replicas, worker_cpu=worker_cpu, worker_memory=worker_memory,
                            worker_gpu=worker_gpu, labels=_kv(labels), annotations=_kv(annotations),
                            autoscaler=autoscaler)
    if dry_run:
        click.echo(yaml.safe_dump(cluster, sort_keys=False).rstrip())
        return

    async def fn(client: KubeClient) -> None:
        created = await client.create(cluster)
        click.echo(f"Created Ray cluster: {created['metadata']['name']}")
        if not wait:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            cl = await client.get(scheme.RAY_CLUSTER, name, namespace)
            if relevant_condition(cl) == "RayClusterProvisioned" or (cl.get("status") or {}).get("state") == "ready":
                click.echo(f"Ray cluster {name} is provisioned")
                return
            await asyncio.sleep(2)
        raise RayCliError(f"timed out after {timeout}s waiting for Ray cluster {name} to be provisioned")
    _run(kubeconfig, context, fn)


@command.group(name="scale")
def scale_cmd() -> None:
    """Scale a worker group."""


@scale_cmd.command(name="cluster")
@click.argument("cluster")
@click.option("-w", "--worker-group", required=True)
@click.option("-r", "--replicas", type=click.IntRange(min=0), default=None)
@click.option("--min-replicas", type=click.IntRange(min=0), default=None)
@click.option("--max-replicas", type=click.IntRange(min=0), default=None)
@_conn
def scale_cluster(cluster: str, worker_group: str, replicas: int | None, min_replicas: int | None,
                  max_replicas: int | None, namespace: str, kubeconfig: str | None, context: str | None) -> None:
    """Set replicas / minReplicas / maxReplicas of worker group GROUP of CLUSTER."""
    if replicas is None and min_replicas is None and max_replicas is None:
        raise click.UsageError("must specify at least one of --replicas, --min-replicas, or --max-replicas "
                               "(non-negative integers)")

    async def fn(client: KubeClient) -> None:
        cl = await client.get(scheme.RAY_CLUSTER, cluster, namespace)
        changes = scale_group(cl, worker_group, replicas, min_replicas, max_replicas)
        if not changes:
            click.echo(f"Worker group {worker_group} in Ray cluster {cluster} in namespace {namespace} already "
                       "matches the requested configuration. Skipping.")
            return
        await client.update(cl)
        click.echo(f"Updated worker group {worker_group} in Ray cluster {cluster} in namespace {namespace} "
                   f"({changes})")
    _run(kubeconfig, context, fn)


@command.command(name="delete")
@click.argument("resources", nargs=-1, required=True)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@_conn
def delete(resources: tuple[str, ...], yes: bool, namespace: str, kubeconfig: str | None, context: str | None) -> None:
    """Delete RayClusters (NAME) or raycluster|rayjob|rayservice/NAME."""
    try:
        targets = [parse_resource(r) for r in resources]
    except RayCliError as e:
        raise click.UsageError(str(e)) from None
    if not yes:
        listing = "".join(f"\n- {k}/{n}" for k, n in targets)
        answer = click.prompt(f"Are you sure you want to delete the following resources?{listing}\n(y/yes/n/no)",
                              default="", show_default=False, prompt_suffix="").strip().lower()
        if answer in ("n", "no"):
            click.echo("Canceled deletion.")
            return
        if answer not in ("y", "yes"):
            raise click.UsageError(f"Unknown input {answer}")

    async def fn(client: KubeClient) -> None:
        for kind, name in targets:
            await client.delete(_KINDS[kind], name, namespace)
            click.echo(f"Deleted {kind} {name}")
    _run(kubeconfig, context, fn)


@command.group(name="job")
def job_group() -> None:
    """Ray jobs on a RayJob's cluster."""


@job_group.command(name="submit", context_settings={"ignore_unknown_options": True})
@click.option("--name", required=True, help="Name of the RayJob to create (InteractiveMode).")
@click.option("--address", default=None, help="Dashboard address (default: the head Pod IP, port 8265).")
@click.option("--ray-version", default=DEFAULT_RAY_VERSION, show_default=True)
@click.option("--runtime-env", default=None)
@click.option("--runtime-env-json", default=None)
@click.option("--working-dir", default=None)
@click.option("--no-wait", is_flag=True)
@click.option("--timeout", default=120, show_default=True, type=int, help="Seconds to wait for the cluster.")
@click.argument("entrypoint", nargs=-1, required=True)
@_conn
def job_submit(name: str, address: str | None, ray_version: str, runtime_env: str | None,
               runtime_env_json: str | None, working_dir: str | None, no_wait: bool, timeout: int,
               entrypoint: tuple[str, ...], namespace: str, kubeconfig: str | None, context: str | None) -> None:
    """Create an InteractiveMode RayJob NAME, wait for its cluster, then run ``ray job submit`` with the
    RayJob's submission id (so the RayJob follows the job)."""
    # the `ray` installed beside this Python (a venv not on PATH) before the one on PATH
    beside = Path(sys.executable).parent / "ray"
    ray = str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which("ray")
    if ray is None:
        raise click.UsageError(f"the `ray` command is neither beside {sys.executable} nor on PATH "
                               "(pip install 'ray[default]')")
    from pumice.controllers.ray import association as assoc

    async def fn(client: KubeClient) -> None:
        import random

        sid = assoc.rayjob_job_id(name, random.Random())
        cl = build_cluster(f"{name}-cluster", namespace, ray_version=ray_version,
                           image=f"rayproject/ray:{ray_version}", head_cpu="2", head_memory="4Gi", head_gpu="0",
                           worker_replicas=1, worker_cpu="2", worker_memory="4Gi", worker_gpu="0", labels={},
                           annotations={}, autoscaler=None)
        job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name, "namespace": namespace},
               "spec": {"submissionMode": "InteractiveMode", "jobId": sid, "rayClusterSpec": cl["spec"]}}
        await client.create(job)
        click.echo(f"Submitted RayJob {name}.")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        ip = ""
        while loop.time() < deadline:
            st = (await client.get(scheme.RAY_JOB, name, namespace)).get("status") or {}
            cname = st.get("rayClusterName")
            if cname:
                cst = (await client.get(scheme.RAY_CLUSTER, cname, namespace)).get("status") or {}
                if cst.get("state") == "ready":
                    ip = (cst.get("head") or {}).get("podIP", "")
                    break
            await asyncio.sleep(2)
        if not ip and not address:
            await client.delete(scheme.RAY_JOB, name, namespace)
            raise RayCliError(f"timed out after {timeout}s waiting for the RayCluster of RayJob {name}; deleted it")
        args = [ray, "job", "submit", "--address", address or f"http://{ip}:8265", "--submission-id", sid]
        for flag, val in (("--runtime-env", runtime_env), ("--runtime-env-json", runtime_env_json),
                          ("--working-dir", working_dir)):
            if val:
                args += [flag, val]
        if no_wait:
            args.append("--no-wait")
        code = await asyncio.to_thread(subprocess.call, [*args, "--", *entrypoint])
        if code != 0:
            raise RayCliError(f"ray job submit exited with {code}")
    _run(kubeconfig, context, fn)
