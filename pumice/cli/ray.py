"""``pumice ray``: the kubectl-ray plugin's verbs against ``pumice up`` or any kubeconfig.

- ``get cluster [NAME] [-A]``, ``get workergroup [GROUP] [-c CLUSTER] [-A]``,
  ``get node [NODE] [-c CLUSTER] [-A]``: the plugin's tables (same columns);
  ``get token CLUSTER``: the ``auth_token`` of Secret ``CLUSTER`` of a token-auth RayCluster;
- ``create cluster NAME [flags | --file F] [--dry-run] [--wait --timeout 5m]``: a RayCluster with the
  plugin's defaults (head 2 CPU / 4Gi, one worker group ``default-group`` of 1 × 2 CPU / 4Gi, head
  ports 6379 ``gcs-server``, 8265 ``dashboard``, 10001 ``client``), or from the plugin's
  cluster-config file (:mod:`pumice.cli.ray_config`); a cluster that exists is refused, else it
  is server-side applied (field manager ``ray-kubectl-plugin``); ``--dry-run`` prints it as the
  plugin does (go-yaml: keys sorted, :mod:`pumice._util.goyaml`);
  ``create workergroup GROUP -c CLUSTER [flags]``: appends a group (1 replica, min 1, max 10,
  2 CPU / 4Gi) and updates the RayCluster; a GROUP the cluster already has is refused (upstream
  appends it, and the operator then refuses the whole spec); negative replica counts are usage
  errors, as in ``scale cluster``;
- ``scale cluster CLUSTER -w GROUP [-r N] [--min-replicas N] [--max-replicas N]``;
- ``delete RESOURCE... [-y]`` (``NAME`` is a RayCluster, else ``raycluster|rayjob|rayservice/NAME``);
- ``session RESOURCE``: ``kubectl port-forward service/<head service>`` for 8265 + 10001
  (RayCluster), 8265 (RayJob), 8265 + 8000 (RayService), restarted 3 s after a failure; the API
  server relays the tunnel to the node agent, which connects inside the Pod's network namespace;
- ``log RESOURCE [--out-dir D] [--node-type all|head|worker] [--link gke]``: per Ray Pod, the
  first container's log into ``D/<pod>/stdout.log`` and ``/tmp/ray/session_latest/logs/`` through
  ``tar`` run by ``pods/exec`` (the node agent runs it in the Pod's mount namespace), unpacked
  into ``D/<pod>/``;
- ``job submit (--name N [sizing flags] | -f rayjob.yaml) -- ENTRYPOINT``: an InteractiveMode RayJob
  (the plugin's ``--head-cpu/--head-memory/--head-gpu/--worker-cpu/--worker-memory/--worker-gpu/
  --worker-replicas``, defaults 2 CPU / 4Gi, 1 worker), then the local ``ray job submit`` with
  ``--submission-id`` to the cluster's dashboard through ``kubectl port-forward service/<head
  service> :8265`` (the API server's tunnel to the node agent, so it works wherever kubectl does;
  ``--address`` overrides it). Refused at once when every Node runs the simulated runtime (no
  kubelet endpoint); a timeout names the Pod that holds the cluster back; the generated RayJob is
  server-side applied, one from ``-f`` created, both as field manager ``ray-kubectl-plugin``; a
  submission id not given is generated as the plugin does (``raysubmit_`` + 16 characters) and
  printed first;
- ``version``: pumice's version and the KubeRay operator's (image tag of the Deployment labelled
  ``app.kubernetes.io/name in (kuberay-operator,kuberay)``, else pumice's own
  ``pumice-controller-manager`` from ``pumice install``).

Errors print one line (``Error: ...``) and exit 1; usage errors exit 2.

Mirrors: kuberay kubectl-plugin/pkg/cmd (get/get_cluster.go, get_workergroup.go, get_nodes.go,
get_token.go, create/create_cluster.go, create_workergroup.go, scale/scale_cluster.go,
delete/delete.go, session/session.go, log/log.go, job/job_submit.go, version/version.go),
pkg/util/client/client.go (GetRayHeadSvcName, GetKubeRayOperatorVersion) and
pkg/util/conditions.go RelevantRayClusterCondition.

Deviates: ``job submit`` runs the real ``kubectl port-forward`` (kubectl-ray uses client-go's in
its own process) to a free local port (kubectl-ray: 8265) and does not require
``--working-dir``; ``session`` also takes
``--address`` (kubectl port-forward's bind address) and refuses at once, instead of retrying, when
the resource has no head Service in its status yet; ``-n`` defaults to ``default``, not the
kubeconfig context's namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import click
import yaml

from pumice._util import goyaml
from pumice._util.clock import default_clock, parse_rfc3339
from pumice._util.duration import go_duration_string
from pumice._util.files import InputFileError
from pumice.api import Obj, scheme, yamlsafe
from pumice.api.ray.constants import DEFAULT_MAX_REPLICAS, TERMINAL_JOB_STATUSES, RayClusterConditionType
from pumice.cli._duration import GoDuration
from pumice.client.base import ApiError, ExecError, KubeClient, get_or_none
from pumice.client.kube import Client

logger = logging.getLogger(__name__)

FIELD_MANAGER = "ray-kubectl-plugin"
"""The field manager of what kubectl-ray applies (kubectl-plugin pkg/util constant.go FieldManager)."""

DEFAULT_RAY_VERSION = "2.52.0"
DEFAULT_IMAGE = f"rayproject/ray:{DEFAULT_RAY_VERSION}"
_CONDITION_PRECEDENCE = tuple(str(t) for t in (
    RayClusterConditionType.RAY_CLUSTER_PROVISIONED, RayClusterConditionType.HEAD_POD_READY,
    RayClusterConditionType.RAY_CLUSTER_REPLICA_FAILURE, RayClusterConditionType.RAY_CLUSTER_SUSPENDED,
    RayClusterConditionType.RAY_CLUSTER_SUSPENDING))
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

    from pumice.api.quantity import resource_string
    from pumice.controllers.ray.common import resources as res

    rl = res.pod_resources(pod_spec)
    gpus = res.sum_gpus(rl)

    def cell(name: str, amount: Fraction | None) -> str:
        return resource_string(name, amount) if amount else "0"
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
                  labels: dict[str, str], annotations: dict[str, str], autoscaler: str | None,
                  head_ephemeral_storage: str = "", head_ray_start_params: dict[str, str] | None = None,
                  head_node_selectors: dict[str, str] | None = None, worker_ephemeral_storage: str = "",
                  worker_tpu: str = "0", worker_ray_start_params: dict[str, str] | None = None,
                  worker_node_selectors: dict[str, str] | None = None, num_of_hosts: int | None = 1) -> Obj:
    """The RayCluster ``create cluster`` makes from its flags: the flags as a cluster config (one
    worker group ``default-group``) given to the one generator the ``--file`` path uses
    (:func:`pumice.cli.ray_config.build_cluster_from_config`): CPU a request only; memory,
    ephemeral storage, GPU and TPU (workers only) requests and limits; a zero or empty quantity and
    empty ``rayStartParams`` left out; node selectors in the Pod templates; ``numOfHosts`` on the
    worker group unless None (``job submit`` leaves it out). No minReplicas / maxReplicas, as the
    plugin: the CRD defaults them to 0 and 2147483647, so ``scale cluster -r N`` works right after.

    Mirrors: kubectl-plugin create/create_cluster.go Run (the flags made into a RayClusterConfig)
    and util/generation/generation.go GenerateRayClusterApplyConfig.
    """
    from pumice.cli import ray_config

    head: Obj = {"cpu": head_cpu, "memory": head_memory, "ephemeral-storage": head_ephemeral_storage,
                 "gpu": head_gpu, "ray-start-params": dict(head_ray_start_params or {}),
                 "node-selectors": dict(head_node_selectors or {})}
    group: Obj = {"name": "default-group", "replicas": worker_replicas, "cpu": worker_cpu, "memory": worker_memory,
                  "ephemeral-storage": worker_ephemeral_storage, "gpu": worker_gpu, "tpu": worker_tpu,
                  "ray-start-params": dict(worker_ray_start_params or {}),
                  "node-selectors": dict(worker_node_selectors or {})}
    if num_of_hosts is not None:
        group["num-of-hosts"] = num_of_hosts
    config: Obj = {"ray-version": ray_version, "image": image, "labels": dict(labels),
                   "annotations": dict(annotations), "head": head, "worker-groups": [group],
                   "autoscaler": {"version": autoscaler or ""}}
    return ray_config.build_cluster_from_config(config, name, namespace)


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
    # absent fields read as the plugin reads them: min 0, max MaxInt32, replicas 0
    cur_min, cur, cur_max = int(g.get("minReplicas") or 0), int(g.get("replicas") or 0), int(
        DEFAULT_MAX_REPLICAS if g.get("maxReplicas") is None else g["maxReplicas"])
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
    parts = arg.split("/")
    if len(parts) == 1:
        return "raycluster", arg
    if len(parts) != 2 or not parts[1]:
        raise RayCliError(f"invalid resource type/name: {arg}")
    kind = parts[0].lower()
    if kind not in _KINDS:
        raise RayCliError(f"unsupported resource type: {parts[0]}")
    return kind, parts[1]


# --- click wiring ----------------------------------------------------------------------------------

def _run(kubeconfig: str | None, context: str | None, fn: Callable[[KubeClient], Awaitable[None]]) -> None:
    from pumice.client.kube import client_go_user_agent
    from pumice.client.kubeconfig import connect

    async def main() -> None:
        # as kubectl-ray's client-go clients: its User-Agent, and no fieldManager unless the
        # plugin names one (util.FieldManager), so the server records manager kubectl-ray
        client = connect(kubeconfig, context=context, field_manager="", user_agent=client_go_user_agent("kubectl-ray"))
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
    """The kubectl-ray verbs: get, create, scale, delete, session, log, job submit, version."""


@command.group(name="get")
def get_group() -> None:
    """Show RayClusters, worker groups, Ray nodes or a cluster's auth token."""


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
    """Create a RayCluster, or a worker group in one."""


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
@click.option("--worker-replicas", default=1, show_default=True, type=click.IntRange(min=0))
@click.option("--worker-cpu", default="2", show_default=True)
@click.option("--worker-memory", default="4Gi", show_default=True)
@click.option("--worker-gpu", default="0", show_default=True)
@click.option("--head-ephemeral-storage", default="", help="Ephemeral storage of the Ray head (default: none).")
@click.option("--head-ray-start-params", multiple=True, help="k=v[,k=v] for the head's 'ray start', repeatable.")
@click.option("--head-node-selectors", multiple=True, help="k=v[,k=v] node selectors of the head Pod, repeatable.")
@click.option("--worker-ephemeral-storage", default="", help="Ephemeral storage of each worker (default: none).")
@click.option("--worker-tpu", default="0", show_default=True, help="TPUs of each worker (google.com/tpu).")
@click.option("--worker-ray-start-params", multiple=True, help="k=v[,k=v] for the workers' 'ray start', repeatable.")
@click.option("--worker-node-selectors", multiple=True, help="k=v[,k=v] node selectors of the worker Pods, repeatable.")
@click.option("--num-of-hosts", default=1, show_default=True, type=click.IntRange(min=0),
              help="Hosts per replica of the default worker group.")
@click.option("--labels", multiple=True, help="key=value, repeatable.")
@click.option("--annotations", multiple=True, help="key=value, repeatable.")
@click.option("--autoscaler", type=click.Choice(["v1", "v2"]), default=None)
@click.option("--dry-run", is_flag=True, help="Print the RayCluster YAML instead of creating it.")
@click.option("--wait", is_flag=True, help="Wait until RayClusterProvisioned or state ready.")
@click.option("--timeout", default="5m0s", show_default=True, type=GoDuration(),
              help="The timeout for --wait (a duration: 5m, 60s).")
@click.option("--file", "config_file", default="",
              help="Path to a YAML file containing Ray cluster configuration (the plugin's format; with it only "
                   "--namespace, --context, --kubeconfig, --dry-run, --wait and --timeout).")
@_conn
def create_cluster(name: str, ray_version: str, image: str | None, head_cpu: str, head_memory: str, head_gpu: str,
                   worker_replicas: int, worker_cpu: str, worker_memory: str, worker_gpu: str,
                   labels: tuple[str, ...], annotations: tuple[str, ...], autoscaler: str | None, dry_run: bool,
                   wait: bool, timeout: float, namespace: str, kubeconfig: str | None, context: str | None,
                   head_ephemeral_storage: str = "", head_ray_start_params: tuple[str, ...] = (),
                   head_node_selectors: tuple[str, ...] = (), worker_ephemeral_storage: str = "",
                   worker_tpu: str = "0", worker_ray_start_params: tuple[str, ...] = (),
                   worker_node_selectors: tuple[str, ...] = (), num_of_hosts: int = 1, config_file: str = "") -> None:
    """Create RayCluster NAME with the plugin's defaults and these flags, or from the plugin's
    cluster-config file (``--file``, see :mod:`pumice.cli.ray_config`)."""
    if config_file:
        cluster = _cluster_from_file(click.get_current_context(), config_file, name, namespace)
        _create_cluster(cluster, dry_run=dry_run, wait=wait, timeout=timeout, kubeconfig=kubeconfig, context=context)
        return
    head_params = _kv_map(head_ray_start_params, "--head-ray-start-params")
    head_selectors = _kv_map(head_node_selectors, "--head-node-selectors")
    worker_params = _kv_map(worker_ray_start_params, "--worker-ray-start-params")
    worker_selectors = _kv_map(worker_node_selectors, "--worker-node-selectors")
    try:
        for value, flag in ((head_cpu, "head-cpu"), (head_gpu, "head-gpu"), (head_memory, "head-memory"),
                            (head_ephemeral_storage, "head-ephemeral-storage"), (worker_cpu, "worker-cpu"),
                            (worker_gpu, "worker-gpu"), (worker_tpu, "worker-tpu"), (worker_memory, "worker-memory"),
                            (worker_ephemeral_storage, "worker-ephemeral-storage")):
            if value != "" or flag.endswith(("cpu", "gpu", "memory", "tpu")):
                _check_quantity(value, flag)
        validate_tpu(worker_tpu, num_of_hosts, worker_selectors)
    except RayCliError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(1)
    cluster = build_cluster(name, namespace, ray_version=ray_version, image=image or f"rayproject/ray:{ray_version}",
                            head_cpu=head_cpu, head_memory=head_memory, head_gpu=head_gpu,
                            worker_replicas=worker_replicas, worker_cpu=worker_cpu, worker_memory=worker_memory,
                            worker_gpu=worker_gpu, labels=_kv(labels), annotations=_kv(annotations),
                            autoscaler=autoscaler, head_ephemeral_storage=head_ephemeral_storage,
                            head_ray_start_params=head_params, head_node_selectors=head_selectors,
                            worker_ephemeral_storage=worker_ephemeral_storage, worker_tpu=worker_tpu,
                            worker_ray_start_params=worker_params, worker_node_selectors=worker_selectors,
                            num_of_hosts=num_of_hosts)
    _create_cluster(cluster, dry_run=dry_run, wait=wait, timeout=timeout, kubeconfig=kubeconfig, context=context)


_ALLOWED_WITH_FILE = frozenset({"file", "context", "namespace", "dry-run", "wait", "timeout", "kubeconfig"})
"""The flags ``create cluster --file`` takes besides it (the plugin's list; ``--kubeconfig``
too, which the plugin refuses with the file as it does any flag not listed)."""


def _cluster_from_file(ctx: click.Context, path: str, name: str, namespace: str) -> Obj:
    """``create cluster NAME --file F``: refuse the flags that would set the cluster, read and check
    the file, resolve the name and namespace; errors print one line and exit 1.

    Mirrors: kubectl-plugin create/create_cluster.go Validate and Run (the config-file path)."""
    from click.core import ParameterSource

    from pumice.cli import ray_config

    given = sorted(_flag_name(p) for p in ctx.command.params
                   if isinstance(p, click.Option) and ctx.get_parameter_source(p.name or "") == ParameterSource.COMMANDLINE)
    try:
        bad = [f for f in given if f not in _ALLOWED_WITH_FILE]
        if bad:
            raise RayCliError(f"the following flags are incompatible with --file: [{' '.join(bad)}]")
        try:
            config = ray_config.parse_config_file(path, DEFAULT_RAY_VERSION)
        except ray_config.ConfigError as e:
            raise RayCliError(f"failed to parse config file: {e}") from None
        try:
            ray_config.validate_config(config, _check_quantity, validate_tpu)
        except (ray_config.ConfigError, RayCliError) as e:
            raise RayCliError(f"failed to validate config file: {e}") from None
        try:
            name = ray_config.resolve_name(config, name)
            namespace = ray_config.resolve_namespace(
                config, namespace, ctx.get_parameter_source("namespace") == ParameterSource.COMMANDLINE)
        except ray_config.ConfigError as e:
            raise RayCliError(str(e)) from None
    except RayCliError as e:
        click.echo(f"Error: {' '.join(str(e).split())}", err=True)
        sys.exit(1)
    return ray_config.build_cluster_from_config(config, name, namespace)


def _flag_name(p: click.Option) -> str:
    """An option's long name without dashes (``--head-cpu`` -> ``head-cpu``; ``config_file`` -> ``file``)."""
    longs = [o for o in p.opts if o.startswith("--")]
    return (longs[0] if longs else p.opts[0]).lstrip("-")


def _create_cluster(cluster: Obj, *, dry_run: bool, wait: bool, timeout: float, kubeconfig: str | None,
                    context: str | None) -> None:
    """Print ``cluster`` (``--dry-run``, as sigs.k8s.io/yaml prints it: keys sorted) or create it
    with a server-side apply (field manager ``ray-kubectl-plugin``), refusing one that exists with
    the plugin's text, and with ``--wait`` wait until it is provisioned or ``timeout`` seconds
    passed.

    Mirrors: kubectl-plugin create/create_cluster.go Run (RayClusters().Apply after
    clusterExists; generation.ConvertRayClusterApplyConfigToYaml)."""
    name, namespace = cluster["metadata"]["name"], cluster["metadata"]["namespace"]
    if dry_run:
        click.echo(goyaml.dump(cluster))
        return

    async def fn(client: KubeClient) -> None:
        if await get_or_none(client, scheme.RAY_CLUSTER, name, namespace) is not None:
            raise RayCliError(f"the Ray cluster {name} in namespace {namespace} already exists")
        try:
            created = await client.patch(scheme.RAY_CLUSTER, name, cluster, namespace, patch_type="apply",
                                         field_manager=FIELD_MANAGER)
        except ApiError as e:
            raise RayCliError(f"failed to create Ray cluster: {e.message}") from None
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
        raise RayCliError(f"timed out after {go_duration_string(timeout)} waiting for Ray cluster {name} to be "
                          "provisioned")
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


def node_runs_processes(node: Obj) -> bool:
    """Whether ``node``'s agent has a kubelet endpoint (a runtime with processes, so its Pod IPs are
    reachable from the host in ``pumice up``); the simulated runtime publishes none."""
    port = (((node.get("status") or {}).get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    return bool(port)


def not_ready_reason(cluster: str, pods: list[Obj]) -> str:
    """One line saying why RayCluster ``cluster`` is not ready, from its Pods: the first Pending Pod
    with the scheduler's reason (its ``PodScheduled`` condition), else the first Pod that is not
    Running / not Ready, else that no Pod exists. Head Pods are looked at first."""
    if not pods:
        return f"RayCluster {cluster} has no Pods yet"

    def order(p: Obj) -> tuple[int, str]:
        node_type = ((p.get("metadata") or {}).get("labels") or {}).get("ray.io/node-type", "")
        return (0 if node_type == "head" else 1, str(p["metadata"].get("name", "")))

    for p in sorted(pods, key=order):
        st = p.get("status") or {}
        name = p["metadata"].get("name", "")
        node_type = ((p.get("metadata") or {}).get("labels") or {}).get("ray.io/node-type", "")
        what = f"{node_type} Pod {name}" if node_type else f"Pod {name}"
        phase = st.get("phase") or "Pending"
        conds = {c.get("type"): c for c in st.get("conditions") or []}
        sched = conds.get("PodScheduled") or {}
        if phase == "Pending" and sched.get("status") == "False":
            why = ": ".join(x for x in (sched.get("reason"), sched.get("message")) if x)
            return f"{what} is Pending ({why})" if why else f"{what} is Pending (not scheduled)"
        if phase != "Running":
            waiting = next((((cs.get("state") or {}).get("waiting") or {}).get("reason")
                            for cs in st.get("containerStatuses") or []
                            if ((cs.get("state") or {}).get("waiting") or {}).get("reason")), None)
            return f"{what} is {phase}" + (f" ({waiting})" if waiting else "")
        if (conds.get("Ready") or {}).get("status") != "True":
            return f"{what} is Running but not Ready"
    return f"RayCluster {cluster}'s Pods are Running but its state is not ready yet"


def run_ray_submit(argv: list[str]) -> None:
    """Run ``ray job submit`` (``argv``) with stdout passed through; its stderr is held back and
    written out after a success, and reduced to its last line on a failure.

    Raises:
        RayCliError: "ray job submit exited with N: <last line of its stderr>".
    """
    proc = subprocess.run(argv, stderr=subprocess.PIPE, text=True, errors="replace", check=False)
    if proc.returncode != 0:
        last = next((ln.strip() for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "")
        raise RayCliError(f"ray job submit exited with {proc.returncode}" + (f": {last}" if last else ""))
    if proc.stderr:
        sys.stderr.write(proc.stderr)


async def submit_and_report(ray: str, address: str, submission_id: str, extra: list[str],
                            entrypoint: tuple[str, ...], *,
                            fallback: Callable[[], Awaitable[str | None]] | None = None) -> None:
    """``ray job submit --address ADDRESS --submission-id ID EXTRA -- ENTRYPOINT`` (through
    :func:`run_ray_submit`); when it fails and the dashboard knows the job, the error says the
    job's status and its status message (``GET /api/jobs/<id>``: what ``ray job submit`` prints on
    stdout as "Job '<id>' failed" and "Status message: ..."), instead of stderr's last line, which
    for a job that ran is Ray's log of its log stream closing. When the dashboard cannot be asked
    (the port-forward ended), ``fallback`` (:func:`rayjob_failure`) says it instead.

    Raises:
        RayCliError: "ray job <id> FAILED: <status message>", or run_ray_submit's error when the
            dashboard has no such job, or neither it nor ``fallback`` can say.
    """
    argv = [ray, "job", "submit", "--address", address, "--submission-id", submission_id, *extra, "--", *entrypoint]
    try:
        await asyncio.to_thread(run_ray_submit, argv)
    except RayCliError as e:
        why = await ray_job_failure(address, submission_id, fallback=fallback)
        if why is None:
            raise
        raise RayCliError(why) from e


def _failure_line(submission_id: str, job_status: str, status_message: str) -> str:
    lines = [ln.strip() for ln in status_message.splitlines() if ln.strip()]
    message = lines[0] + (f" ... {lines[-1]}" if len(lines) > 1 else "") if lines else "no status message"
    return f"ray job {submission_id} {job_status}: {message}"


async def ray_job_failure(address: str, submission_id: str, *,
                          fallback: Callable[[], Awaitable[str | None]] | None = None) -> str | None:
    """One line naming the Ray job's status and status message ("ray job <id> FAILED: Job
    entrypoint command failed with exit code 3, last available logs (truncated to 20,000 chars):
    ... <last log line>"), from the dashboard at ``address``; None when the dashboard does not know
    the job (``ray job submit`` failed before submitting it), or the job did not end badly (e.g.
    still RUNNING). When the dashboard cannot be asked, that reason is logged and ``fallback``
    answers (None without one)."""
    from pumice.controllers.ray.dashboard import DashboardError, HttpDashboardClient

    try:
        info = await HttpDashboardClient(address, timeout=10.0).get_job_info(submission_id)
    except DashboardError as e:
        logger.warning("ray job %s: cannot read its status from the dashboard: %s%s", submission_id, e,
                       "; reading the RayJob's status" if fallback is not None else "")
        return None if fallback is None else await fallback()
    if info is None or info.job_status in ("PENDING", "RUNNING", "SUCCEEDED"):
        return None
    return _failure_line(submission_id, info.job_status, info.message)


async def rayjob_failure(client: KubeClient, name: str, namespace: str, submission_id: str,
                         timeout: float) -> str | None:
    """:func:`ray_job_failure`'s line from RayJob ``namespace/name``'s status (``jobId``,
    ``jobStatus``, ``message``: the operator copies them from the dashboard, which it reaches
    without the CLI's port-forward), waiting up to ``timeout`` seconds (polled each second) for a
    terminal ``jobStatus`` of job ``submission_id``. None when it ended SUCCEEDED, or it did not
    end within ``timeout``, the RayJob is gone or cannot be read (each reason is logged)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    st: Obj = {}
    while True:
        try:
            job = await get_or_none(client, scheme.RAY_JOB, name, namespace)
        except ApiError as e:
            logger.warning("ray job %s: cannot read RayJob %s/%s: %s", submission_id, namespace, name, e.message)
            return None
        if job is None:
            logger.warning("ray job %s: RayJob %s/%s is gone", submission_id, namespace, name)
            return None
        st = job.get("status") or {}
        if st.get("jobId") == submission_id and st.get("jobStatus") in TERMINAL_JOB_STATUSES:
            break
        if loop.time() >= deadline:
            logger.warning("ray job %s: RayJob %s/%s's jobStatus is %r after %gs, not a final one", submission_id,
                           namespace, name, st.get("jobStatus") or "", timeout)
            return None
        await asyncio.sleep(1)
    if st["jobStatus"] == "SUCCEEDED":
        return None
    return _failure_line(submission_id, str(st["jobStatus"]), str(st.get("message") or ""))


def load_rayjob_file(path: str) -> Obj:
    """The RayJob of ``-f FILE`` (kubectl-ray's checks: InteractiveMode, no backoffLimit > 0).

    Raises:
        RayCliError: missing / not a regular file, not YAML, not a RayJob, or those checks.
    """
    p = Path(path)
    if not p.exists():
        raise RayCliError(f"Ray Job file does not exist. Failed with: stat {path}: no such file or directory")
    if not p.is_file():
        raise RayCliError("Filename given is not a regular file")
    try:
        job = yamlsafe.read_yaml_document(p)
    except (OSError, InputFileError) as e:
        raise RayCliError(f"Failed to decode RayJob Yaml: {str(e).splitlines()[0]}") from None
    if not isinstance(job, dict) or job.get("kind") != "RayJob":
        raise RayCliError("Failed to decode RayJob Yaml: the file does not hold a RayJob")
    spec = job.get("spec") or {}
    if spec.get("submissionMode") != "InteractiveMode":
        raise RayCliError("Submission mode of the Ray Job must be set to 'InteractiveMode'")
    if int(spec.get("backoffLimit") or 0) > 0:
        raise RayCliError("BackoffLimit is incompatible with InteractiveMode")
    return job


def ray_submit_args(*, headers: str, verify: str, entrypoint_resources: str, metadata_json: str, log_style: str,
                    log_color: str, entrypoint_num_cpus: float, entrypoint_num_gpus: float, entrypoint_memory: int,
                    verbose: bool) -> list[str]:
    """The ``ray job submit`` flags ``job submit`` passes through, each only when set (non-empty,
    positive), numbers printed as Go's ``%f`` / ``%d``.

    Mirrors: kubectl-plugin cmd/job/job_submit.go Run (raySubmitCmd). Deviates: the entrypoint
    resources go as Ray's ``--entrypoint-resources`` (the plugin writes ``--entrypoint-resource``,
    which ``ray job submit`` does not have).
    """
    out: list[str] = []
    for flag, number, text in (("--entrypoint-num-cpus", entrypoint_num_cpus, f"{entrypoint_num_cpus:f}"),
                               ("--entrypoint-num-gpus", entrypoint_num_gpus, f"{entrypoint_num_gpus:f}"),
                               ("--entrypoint-memory", entrypoint_memory, f"{entrypoint_memory:d}")):
        if number > 0:
            out += [flag, text]
    for flag, value in (("--entrypoint-resources", entrypoint_resources), ("--metadata-json", metadata_json),
                        ("--headers", headers), ("--verify", verify), ("--log-style", log_style),
                        ("--log-color", log_color)):
        if value:
            out += [flag, value]
    if verbose:
        out.append("--verbose")
    return out


@job_group.command(name="submit", context_settings={"ignore_unknown_options": True})
@click.option("-f", "--filename", default="", help="Path and name of the Ray Job YAML file")
@click.option("--name", default="", help="Ray job name")
@click.option("--address", default=None, help="Ray dashboard address (default: `kubectl port-forward` to the head "
              "Service's dashboard port 8265, through the API server).")
@click.option("--submission-id", default="", help="ID to specify for the Ray job. If not provided, one will be "
              "generated")
@click.option("--ray-version", default=DEFAULT_RAY_VERSION, show_default=True, help="Ray version to use")
@click.option("--image", default=None, help="container image to use (default: rayproject/ray:<ray-version>)")
@click.option("--head-cpu", default="2", show_default=True, help="number of CPUs in the Ray head")
@click.option("--head-memory", default="4Gi", show_default=True, help="amount of memory in the Ray head")
@click.option("--head-gpu", default="0", show_default=True, help="number of GPUs in the Ray head")
@click.option("--worker-replicas", default=1, show_default=True, type=click.IntRange(min=0), help="desired worker group replicas")
@click.option("--worker-cpu", default="2", show_default=True, help="number of CPUs in each worker group replica")
@click.option("--worker-memory", default="4Gi", show_default=True,
              help="amount of memory in each worker group replica")
@click.option("--worker-gpu", default="0", show_default=True, help="number of GPUs in each worker group replica")
@click.option("--dry-run", is_flag=True, help="print the generated YAML instead of creating the cluster. Only works "
              "when filename is not provided")
@click.option("--runtime-env", default=None)
@click.option("--runtime-env-json", default=None)
@click.option("--working-dir", default=None)
@click.option("--no-wait", is_flag=True)
@click.option("--timeout", default=120, show_default=True, type=int, help="Seconds to wait for the cluster.")
@click.option("--head-node-selectors", multiple=True, help="k=v[,k=v] node selectors of the head Pod, repeatable.")
@click.option("--worker-node-selectors", multiple=True, help="k=v[,k=v] node selectors of the worker Pods, repeatable.")
@click.option("--ttl-seconds-after-finished", type=int, default=None,
              help="TTL seconds after finished (sets shutdownAfterJobFinishes).")
@click.option("--headers", default="", help="Headers for the Ray dashboard, as JSON (passed to `ray job submit`).")
@click.option("--verify", default="", help="Verify the dashboard's TLS certificate: a boolean or a CA path "
              "(passed to `ray job submit`).")
@click.option("--entrypoint-resources", default="", help="JSON dictionary of resource name to quantity reserved "
              "for the entrypoint (passed to `ray job submit`).")
@click.option("--metadata-json", default="", help="JSON dictionary of job metadata (passed to `ray job submit`).")
@click.option("--log-style", default="", help="auto | record | pretty (passed to `ray job submit`).")
@click.option("--log-color", default="", help="auto | false | true (passed to `ray job submit`).")
@click.option("--entrypoint-num-cpus", type=float, default=0.0, help="CPUs reserved for the entrypoint.")
@click.option("--entrypoint-num-gpus", type=float, default=0.0, help="GPUs reserved for the entrypoint.")
@click.option("--entrypoint-memory", type=int, default=0, help="Memory (bytes) reserved for the entrypoint.")
@click.option("-v", "--verbose", is_flag=True, help="Pass --verbose to `ray job submit`.")
@click.argument("entrypoint", nargs=-1)
@_conn
def job_submit(filename: str, name: str, address: str | None, submission_id: str, ray_version: str,
               image: str | None, head_cpu: str, head_memory: str, head_gpu: str, worker_replicas: int,
               worker_cpu: str, worker_memory: str, worker_gpu: str, dry_run: bool, runtime_env: str | None,
               runtime_env_json: str | None, working_dir: str | None, no_wait: bool, timeout: int,
               entrypoint: tuple[str, ...], namespace: str, kubeconfig: str | None, context: str | None,
               head_node_selectors: tuple[str, ...] = (), worker_node_selectors: tuple[str, ...] = (),
               ttl_seconds_after_finished: int | None = None, headers: str = "", verify: str = "",
               entrypoint_resources: str = "", metadata_json: str = "", log_style: str = "", log_color: str = "",
               entrypoint_num_cpus: float = 0.0, entrypoint_num_gpus: float = 0.0, entrypoint_memory: int = 0,
               verbose: bool = False) -> None:
    """Create an InteractiveMode RayJob (``--name`` with the sizing flags, or ``-f rayjob.yaml``), wait
    for its cluster, then run ``ray job submit`` with the RayJob's submission id (so the RayJob
    follows the job)."""
    try:
        _job_submit(filename, name, address, submission_id, ray_version, image, head_cpu, head_memory, head_gpu,
                    worker_replicas, worker_cpu, worker_memory, worker_gpu, dry_run, runtime_env, runtime_env_json,
                    working_dir, no_wait, timeout, entrypoint, namespace, kubeconfig, context,
                    head_selectors=_kv_map(head_node_selectors, "--head-node-selectors"),
                    worker_selectors=_kv_map(worker_node_selectors, "--worker-node-selectors"),
                    ttl=ttl_seconds_after_finished,
                    ray_args=ray_submit_args(headers=headers, verify=verify, entrypoint_resources=entrypoint_resources,
                                             metadata_json=metadata_json, log_style=log_style, log_color=log_color,
                                             entrypoint_num_cpus=entrypoint_num_cpus,
                                             entrypoint_num_gpus=entrypoint_num_gpus,
                                             entrypoint_memory=entrypoint_memory, verbose=verbose))
    except RayCliError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(1)


def _job_submit(filename: str, name: str, address: str | None, submission_id: str, ray_version: str,
                image: str | None, head_cpu: str, head_memory: str, head_gpu: str, worker_replicas: int,
                worker_cpu: str, worker_memory: str, worker_gpu: str, dry_run: bool, runtime_env: str | None,
                runtime_env_json: str | None, working_dir: str | None, no_wait: bool, timeout: int,
                entrypoint: tuple[str, ...], namespace: str, kubeconfig: str | None, context: str | None, *,
                head_selectors: dict[str, str] | None = None, worker_selectors: dict[str, str] | None = None,
                ttl: int | None = None, ray_args: list[str] | None = None) -> None:
    """``ray_args`` go to ``ray job submit`` as they are (:func:`ray_submit_args`). ``ttl`` (``--ttl-seconds-after-finished``, None when not given) sets the RayJob's
    ttlSecondsAfterFinished and shutdownAfterJobFinishes, as kubectl-ray's job_submit.go.

    Deviates: the RayCluster that the RayJob's ``status.rayClusterName`` names is waited for while
    it does not exist yet (the operator writes the name first), up to ``timeout`` with the other
    not-ready states; the plugin's wait loop fails on that Get. A failed job whose dashboard cannot
    be asked any more is reported from the RayJob's status (:func:`rayjob_failure`)."""
    from pumice.controllers.ray import association as assoc

    if not entrypoint:  # the plugin refuses a missing entrypoint first, --dry-run too
        raise click.UsageError("missing the entrypoint: pumice ray job submit ... -- ENTRYPOINT")
    if ttl is not None and ttl < 0:
        raise RayCliError("--ttl-seconds-after-finished must be greater than or equal to 0")

    if not filename and not name.strip():
        raise RayCliError("Must set either yaml file (--filename) or set Ray job name (--name)")
    for value, flag in ((head_cpu, "head-cpu"), (head_gpu, "head-gpu"), (head_memory, "head-memory"),
                        (worker_cpu, "worker-cpu"), (worker_gpu, "worker-gpu"), (worker_memory, "worker-memory")):
        _check_quantity(value, flag)
    if address is not None and not address.strip():
        raise RayCliError("--address was provided but is empty")
    if filename:
        job = load_rayjob_file(filename)
        job.setdefault("metadata", {}).setdefault("namespace", namespace)
        name = str(job["metadata"].get("name", ""))
        ns = str(job["metadata"]["namespace"])
        if not runtime_env and not runtime_env_json and job["spec"].get("runtimeEnvYAML"):
            import json

            runtime_env_json = json.dumps(yaml.safe_load(job["spec"]["runtimeEnvYAML"]))
        if ttl is not None:
            job["spec"]["ttlSecondsAfterFinished"], job["spec"]["shutdownAfterJobFinishes"] = ttl, True
        if int(job["spec"].get("ttlSecondsAfterFinished") or 0) < 0:
            raise RayCliError("ttlSecondsAfterFinished must be greater than or equal to 0")
        if not job["spec"].get("shutdownAfterJobFinishes") and int(job["spec"].get("ttlSecondsAfterFinished") or 0) > 0:
            raise RayCliError("ttlSecondsAfterFinished is only supported when shutdownAfterJobFinishes is set to true")
    sid = submission_id
    if not sid:
        sid = generate_submission_id()
        click.echo(f"Generated submission ID for Ray job: {sid}")
    if filename:
        job["spec"]["jobId"] = sid
    else:
        ns = namespace
        cl = build_cluster(f"{name}-cluster", namespace, ray_version=ray_version,
                           image=image or f"rayproject/ray:{ray_version}", head_cpu=head_cpu,
                           head_memory=head_memory, head_gpu=head_gpu, worker_replicas=worker_replicas,
                           worker_cpu=worker_cpu, worker_memory=worker_memory, worker_gpu=worker_gpu, labels={},
                           annotations={}, autoscaler=None, num_of_hosts=None, head_node_selectors=head_selectors,
                           worker_node_selectors=worker_selectors)
        # the plugin's RayJobYamlObject sets every one of these (kuberay < 1.2.2 needs the entrypoint)
        job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name, "namespace": namespace},
               "spec": {"submissionMode": "InteractiveMode", "entrypoint": " ".join(entrypoint),
                        "ttlSecondsAfterFinished": 0 if ttl is None else ttl,
                        "shutdownAfterJobFinishes": ttl is not None, "jobId": sid, "rayClusterSpec": cl["spec"]}}
        if dry_run:
            click.echo(goyaml.dump(job))
            return
    # the `ray` installed beside this Python (a venv not on PATH) before the one on PATH
    beside = Path(sys.executable).parent / "ray"
    ray = str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which("ray")
    if ray is None:
        raise click.UsageError(f"the `ray` command is neither beside {sys.executable} nor on PATH "
                               "(pip install 'ray[default]')")

    kubectl = None if address else kubectl_binary()
    if not address and kubectl is None:
        raise RayCliError(f"job submit reaches the Ray dashboard with `kubectl port-forward` (as kubectl-ray does), "
                          f"and kubectl is neither beside {sys.executable} nor on PATH; install it or pass --address")

    async def fn(client: KubeClient) -> None:
        if not address:
            try:
                nodes = (await client.list(scheme.NODE)).items
            except ApiError:
                nodes = []  # no right to list Nodes: let the port-forward decide
            if nodes and not any(node_runs_processes(n) for n in nodes):
                raise RayCliError("job submit needs a Ray dashboard to submit to: the Nodes run the simulated runtime "
                                  "(no Ray processes, nothing to port-forward to); pass --address to use another "
                                  "dashboard")
        if filename:  # job_submit.go: RayJobs().Create with util.FieldManager
            try:
                await client.create(job, field_manager=FIELD_MANAGER)
            except ApiError as e:
                raise RayCliError(f"Error when creating RayJob CR: {e.message}") from None
        else:  # the generated RayJob is applied (job_submit.go: RayJobs().Apply, util.FieldManager)
            try:
                await client.patch(scheme.RAY_JOB, name, job, ns, patch_type="apply", field_manager=FIELD_MANAGER)
            except ApiError as e:
                raise RayCliError(f"Failed to apply generated YAML: {e.message}") from None
        click.echo(f"Submitted RayJob {name}.")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        ready: Obj | None = None
        cname = ""
        cluster_seen = False
        while loop.time() < deadline:
            st = (await client.get(scheme.RAY_JOB, name, ns)).get("status") or {}
            cname = st.get("rayClusterName") or ""
            if cname:
                # the operator writes the name into the RayJob's status before it creates the
                # RayCluster: one not there yet is waited for, as a cluster that is not ready
                found = await get_or_none(client, scheme.RAY_CLUSTER, cname, ns)
                cluster_seen = found is not None
                if found is not None and (found.get("status") or {}).get("state") == "ready":
                    ready = found
                    break
            await asyncio.sleep(2)
        if ready is None:  # also with --address: the job runs on this RayJob's cluster, which is not ready
            if cname and not cluster_seen:
                why = f"RayCluster {cname} of RayJob {name} does not exist yet"
            elif cname:
                pods = (await client.list(scheme.POD, ns, label_selector=f"ray.io/cluster={cname}")).items
                why = not_ready_reason(cname, pods)
            else:
                why = f"RayJob {name} has no RayCluster yet"
            await client.delete(scheme.RAY_JOB, name, ns)
            raise RayCliError(f"timed out after {timeout}s waiting for the RayCluster of RayJob {name}: {why}; "
                              "deleted the RayJob")
        extra: list[str] = []
        for flag, val in (("--runtime-env", runtime_env), ("--runtime-env-json", runtime_env_json),
                          ("--working-dir", working_dir)):
            if val:
                extra += [flag, val]
        if no_wait:
            extra.append("--no-wait")
        extra += ray_args or []

        def from_rayjob() -> Awaitable[str | None]:
            return rayjob_failure(client, name, ns, sid, timeout)

        if address:
            await submit_and_report(ray, address, sid, extra, entrypoint, fallback=from_rayjob)
            return
        assert kubectl is not None
        service = head_service_name("raycluster", ready) or assoc.head_service_name(ready)
        async with dashboard_port_forward(kubectl, ns, service, kubeconfig=kubeconfig, context=context) as port:
            await submit_and_report(ray, f"http://127.0.0.1:{port}", sid, extra, entrypoint, fallback=from_rayjob)
    _run(kubeconfig, context, fn)


_SUBMISSION_ID_CHARS = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ123456789"
"""ASCII letters and digits but the easily confused I, l, O, 0 and o."""


def generate_submission_id() -> str:
    """A new Ray submission id, ``raysubmit_`` and 16 characters drawn from a cryptographic source.

    Mirrors: kubectl-plugin cmd/job/job_submit.go generateSubmissionID."""
    return "raysubmit_" + "".join(secrets.choice(_SUBMISSION_ID_CHARS) for _ in range(16))


DASHBOARD_PORT = 8265
PORT_FORWARD_TIMEOUT = 60.0
"""Seconds ``job submit`` waits for ``kubectl port-forward`` to listen (kubectl-ray waits 60 s)."""


def kubectl_binary() -> str | None:
    """The kubectl installed beside this Python (pumice's venv) before the one on PATH; None: neither."""
    beside = Path(sys.executable).parent / "kubectl"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which("kubectl")


@contextlib.asynccontextmanager
async def dashboard_port_forward(kubectl: str, namespace: str, service: str, *, kubeconfig: str | None,
                                 context: str | None) -> AsyncIterator[int]:
    """``kubectl port-forward service/<service> :8265`` for the body of the ``async with``: the
    API server relays the tunnel to the node agent of the head Pod, so it works wherever kubectl
    does. Yields the local port kubectl chose on 127.0.0.1; stops kubectl (SIGTERM) at the end.
    kubectl's output is drained all along (it writes a line per connection); when kubectl ended on
    its own while in use (it ends the port-forward on any forwarding error), its exit status and
    last stderr line are logged as a warning.

    Raises:
        RayCliError: kubectl ended, or did not listen within :data:`PORT_FORWARD_TIMEOUT`, with
            the last line of its stderr.
    """
    argv = [kubectl, *(["--kubeconfig", kubeconfig] if kubeconfig else []), *(["--context", context] if context else []),
            "port-forward", "-n", namespace, f"service/{service}", f":{DASHBOARD_PORT}"]
    proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    err: list[str] = []
    port_seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    prefix = "Forwarding from 127.0.0.1:"

    async def read_stdout(stream: asyncio.StreamReader) -> None:
        while line := (await stream.readline()).decode(errors="replace"):
            if line.startswith(prefix) and not port_seen.done():
                port_seen.set_result(int(line[len(prefix):].split()[0]))

    async def read_stderr(stream: asyncio.StreamReader) -> None:
        while raw := await stream.readline():
            if line := raw.decode(errors="replace").strip():
                err[:] = [*err[-20:], line]

    readers = [asyncio.create_task(read_stdout(proc.stdout)), asyncio.create_task(read_stderr(proc.stderr))]
    try:
        exited = asyncio.create_task(proc.wait())
        done, _ = await asyncio.wait([port_seen, exited], timeout=PORT_FORWARD_TIMEOUT,
                                     return_when=asyncio.FIRST_COMPLETED)
        if port_seen not in done:
            exited.cancel()
            if proc.returncode is not None:
                await asyncio.gather(*readers, return_exceptions=True)
            why = err[-1] if err else (f"exit status {proc.returncode}" if proc.returncode is not None
                                       else f"not listening after {PORT_FORWARD_TIMEOUT:g}s")
            raise RayCliError(f"kubectl port-forward to service/{service} port {DASHBOARD_PORT} failed: {why}")
        exited.cancel()
        yield port_seen.result()
    finally:
        if proc.returncode is not None and port_seen.done():  # it ended on its own while in use: say why
            await asyncio.gather(*readers, return_exceptions=True)
            logger.warning("kubectl port-forward to service/%s ended (exit status %d): %s", service, proc.returncode,
                           err[-1] if err else "no message")
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        for t in readers:
            t.cancel()
        await asyncio.gather(*readers, return_exceptions=True)


# --- get token -------------------------------------------------------------------------------------



def _api_text(e: BaseException) -> str:
    from pumice.cli.main import one_line

    return one_line(e)


async def cluster_auth_token(client: KubeClient, namespace: str, cluster: str) -> str:
    """The ``auth_token`` of Secret ``cluster`` for a RayCluster with ``authOptions.mode: token``.

    Raises:
        RayCliError: no such RayCluster, not token mode, no Secret, or no key (upstream's texts).
    """
    import base64

    try:
        cl = await client.get(scheme.RAY_CLUSTER, cluster, namespace)
    except ApiError as e:
        raise RayCliError(f"failed to get RayCluster {namespace}/{cluster}: {_api_text(e)}") from None
    if ((cl.get("spec") or {}).get("authOptions") or {}).get("mode") != "token":
        raise RayCliError(f"RayCluster {namespace}/{cluster} was not configured to use authentication tokens")
    try:
        secret = await client.get(scheme.SECRET, cluster, namespace)
    except ApiError as e:
        raise RayCliError(f"failed to get secret {namespace}/{cluster}: {_api_text(e)}") from None
    from pumice.controllers.ray.common.pod import RAY_AUTH_TOKEN_SECRET_KEY

    data = (secret.get("data") or {}).get(RAY_AUTH_TOKEN_SECRET_KEY)
    if data is None:
        raise RayCliError(f"secret {namespace}/{cluster} does not have an auth_token")
    return base64.b64decode(data).decode(errors="replace")


@get_group.command(name="token")
@click.argument("cluster")
@_conn
def get_token(cluster: str, namespace: str, kubeconfig: str | None, context: str | None) -> None:
    """Print the auth token of RayCluster CLUSTER (authOptions.mode: token), without a newline."""
    async def fn(client: KubeClient) -> None:
        click.echo(await cluster_auth_token(client, namespace, cluster), nl=False)
    _run(kubeconfig, context, fn)


# --- create workergroup ----------------------------------------------------------------------------

NODE_SELECTOR_GKE_TPU_ACCELERATOR = "cloud.google.com/gke-tpu-accelerator"
NODE_SELECTOR_GKE_TPU_TOPOLOGY = "cloud.google.com/gke-tpu-topology"
_TPU_DOC_URL = "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus#availability"


def _kv_map(values: tuple[str, ...], flag: str) -> dict[str, str]:
    """pflag's StringToString: ``k=v,k2=v2``, repeatable."""
    out: dict[str, str] = {}
    for v in values:
        for item in (x for x in v.split(",") if x):
            k, sep, val = item.partition("=")
            if not sep:
                raise click.BadParameter(f"{item} must be formatted as key=value", param_hint=flag)
            out[k] = val
    return out


def _check_quantity(value: str, name: str) -> None:
    from pumice.api.quantity import parse_quantity

    try:
        q = parse_quantity(value)
    except (ValueError, TypeError):
        raise RayCliError(f"{name} is not a valid resource quantity: {value!r}") from None
    if q < 0:
        raise RayCliError(f"{name} cannot be negative")


def validate_tpu(tpu: str, num_of_hosts: int, node_selectors: dict[str, str]) -> None:
    """kubectl-plugin util.ValidateTPU: a TPU group needs hosts and the two GKE TPU selectors.

    Raises:
        RayCliError: with upstream's text.
    """
    if tpu in ("", "0"):
        return
    if num_of_hosts == 0:
        raise RayCliError("numOfHosts cannot be 0 when using TPU")
    for key in (NODE_SELECTOR_GKE_TPU_ACCELERATOR, NODE_SELECTOR_GKE_TPU_TOPOLOGY):
        if key not in node_selectors:
            raise RayCliError(f"{key} is not set in --worker-node-selectors. See {_TPU_DOC_URL} for supported values")


def build_worker_group(name: str, *, image: str, replicas: int, num_of_hosts: int, min_replicas: int,
                       max_replicas: int, cpu: str, gpu: str, tpu: str, memory: str,
                       ray_start_params: dict[str, str], node_selectors: dict[str, str]) -> Obj:
    """The worker group ``create workergroup`` appends (requests = limits for CPU and memory; GPU
    and TPU added only when non-zero).

    Mirrors: kubectl-plugin create/create_workergroup.go createWorkerGroupSpec.
    """
    from pumice.api.quantity import parse_quantity

    requests: Obj = {"cpu": cpu, "memory": memory}
    for key, amount in (("nvidia.com/gpu", gpu), ("google.com/tpu", tpu)):
        if parse_quantity(amount) != 0:
            requests[key] = amount
    pod_spec: Obj = {"containers": [{"name": "ray-worker", "image": image,
                                     "resources": {"requests": requests, "limits": dict(requests)}}]}
    if node_selectors:
        pod_spec["nodeSelector"] = node_selectors
    return {"groupName": name, "replicas": replicas, "numOfHosts": num_of_hosts, "minReplicas": min_replicas,
            "maxReplicas": max_replicas, "rayStartParams": ray_start_params, "template": {"spec": pod_spec}}


@create_group.command(name="workergroup")
@click.argument("group")
@click.option("-c", "--ray-cluster", required=True, help="Ray cluster to add a worker group to.")
@click.option("--ray-version", default=DEFAULT_RAY_VERSION, show_default=True)
@click.option("--image", default=None, help="Default: rayproject/ray:<ray-version>.")
@click.option("--worker-replicas", default=1, show_default=True, type=click.IntRange(min=0))
@click.option("--num-of-hosts", default=1, show_default=True, type=click.IntRange(min=0))
@click.option("--worker-min-replicas", default=1, show_default=True, type=click.IntRange(min=0))
@click.option("--worker-max-replicas", default=10, show_default=True, type=click.IntRange(min=0))
@click.option("--worker-cpu", default="2", show_default=True)
@click.option("--worker-gpu", default="0", show_default=True)
@click.option("--worker-tpu", default="0", show_default=True)
@click.option("--worker-memory", default="4Gi", show_default=True)
@click.option("--worker-ray-start-params", multiple=True, help="k=v[,k=v], repeatable.")
@click.option("--worker-node-selectors", multiple=True, help="k=v[,k=v], repeatable.")
@_conn
def create_workergroup(group: str, ray_cluster: str, ray_version: str, image: str | None, worker_replicas: int,
                       num_of_hosts: int, worker_min_replicas: int, worker_max_replicas: int, worker_cpu: str,
                       worker_gpu: str, worker_tpu: str, worker_memory: str,
                       worker_ray_start_params: tuple[str, ...], worker_node_selectors: tuple[str, ...],
                       namespace: str, kubeconfig: str | None, context: str | None) -> None:
    """Append worker group GROUP to RayCluster CLUSTER."""
    selectors = _kv_map(worker_node_selectors, "--worker-node-selectors")
    params = _kv_map(worker_ray_start_params, "--worker-ray-start-params")
    try:
        validate_tpu(worker_tpu, num_of_hosts, selectors)
        for value, flag in ((worker_cpu, "worker-cpu"), (worker_gpu, "worker-gpu"), (worker_tpu, "worker-tpu"),
                            (worker_memory, "worker-memory")):
            _check_quantity(value, flag)
    except RayCliError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(1)
    spec = build_worker_group(group, image=image or f"rayproject/ray:{ray_version}", replicas=worker_replicas,
                              num_of_hosts=num_of_hosts, min_replicas=worker_min_replicas,
                              max_replicas=worker_max_replicas, cpu=worker_cpu, gpu=worker_gpu, tpu=worker_tpu,
                              memory=worker_memory, ray_start_params=params, node_selectors=selectors)

    async def fn(client: KubeClient) -> None:
        try:
            cl = await client.get(scheme.RAY_CLUSTER, ray_cluster, namespace)
        except ApiError as e:
            raise RayCliError(f"error getting Ray cluster: {_api_text(e)}") from None
        groups = cl.setdefault("spec", {}).setdefault("workerGroupSpecs", [])
        if any(g.get("groupName") == group for g in groups):
            # upstream appends anyway and the operator then refuses the whole cluster's spec
            # (InvalidRayClusterSpec: worker group names must be unique)
            raise RayCliError(f"worker group {group} already exists in Ray cluster {namespace}/{ray_cluster}")
        groups.append(spec)
        try:
            updated = await client.update(cl, field_manager=FIELD_MANAGER)  # create_workergroup.go
        except ApiError as e:
            raise RayCliError(f"error updating Ray cluster with new worker group: {_api_text(e)}") from None
        click.echo(f"Updated Ray cluster {updated['metadata'].get('namespace', namespace)}/"
                   f"{updated['metadata']['name']} with new worker group")
    _run(kubeconfig, context, fn)


# --- session ---------------------------------------------------------------------------------------

#: (name, port) forwarded per resource kind (kubectl-plugin session.go)
SESSION_PORTS: dict[str, list[tuple[str, int]]] = {
    "raycluster": [("Ray Dashboard", 8265), ("Ray Interactive Client", 10001)],
    "rayjob": [("Ray Dashboard", 8265)],
    "rayservice": [("Ray Dashboard", 8265), ("Ray Serve", 8000)],
}
SESSION_RECONNECT_DELAY = 3.0  # seconds


def head_service_name(kind: str, obj: Obj) -> str:
    """The head Service a session forwards to: ``status.head.serviceName`` (RayCluster),
    ``status.rayClusterStatus.head.serviceName`` (RayJob), the active cluster's (RayService);
    ``""`` while the status does not name one."""
    st = obj.get("status") or {}
    if kind == "rayjob":
        st = st.get("rayClusterStatus") or {}
    elif kind == "rayservice":
        st = (st.get("activeServiceStatus") or {}).get("rayClusterStatus") or {}
    return str((st.get("head") or {}).get("serviceName") or "")


def session_kubectl_args(kind: str, namespace: str, service: str, *, kubeconfig: str | None, context: str | None,
                         address: str | None) -> list[str]:
    """kubectl's arguments (without the binary) for the session's port-forward."""
    args: list[str] = []
    if kubeconfig:
        args += ["--kubeconfig", kubeconfig]
    if context:
        args += ["--context", context]
    args += ["port-forward", "-n", namespace, f"service/{service}"]
    if address:
        args += ["--address", address]
    return args + [f"{port}:{port}" for _, port in SESSION_PORTS[kind]]


@command.command(name="session")
@click.argument("resource")
@click.option("-v", "--verbose", is_flag=True, help="Print the kubectl command line.")
@click.option("--address", default=None,
              help="Local address to listen on (kubectl port-forward --address; default localhost).")
@_conn
def session(resource: str, verbose: bool, address: str | None, namespace: str, kubeconfig: str | None,
            context: str | None) -> None:
    """Forward local ports to the head of RESOURCE (NAME or raycluster|rayjob|rayservice/NAME) with
    ``kubectl port-forward``, restarted 3 s after it fails; Ctrl-C stops it."""
    try:
        kind, name = parse_resource(resource)
    except RayCliError as e:
        raise click.UsageError(str(e)) from None
    kubectl = kubectl_binary()
    if kubectl is None:
        click.echo(f"Error: kubectl is neither beside {sys.executable} nor on PATH (session runs `kubectl "
                   "port-forward`, as kubectl-ray does)", err=True)
        sys.exit(1)
    found: list[str] = []

    async def fn(client: KubeClient) -> None:
        title = {"raycluster": "RayCluster", "rayjob": "RayJob", "rayservice": "RayService"}[kind]
        try:
            obj = await client.get(_KINDS[kind], name, namespace)
        except ApiError as e:
            raise RayCliError(f"unable to find {title} {name}: {_api_text(e)}") from None
        svc = head_service_name(kind, obj)
        if not svc:
            raise RayCliError(f"{title} {name} has no head service in its status yet")
        found.append(svc)
    _run(kubeconfig, context, fn)
    svc = found[0]
    click.echo(f"Forwarding ports to service {svc}")
    host = address or "localhost"
    for label, port in SESSION_PORTS[kind]:
        click.echo(f"{label}: http://{host}:{port}")
    click.echo()
    argv = [kubectl, *session_kubectl_args(kind, namespace, svc, kubeconfig=kubeconfig, context=context,
                                           address=address)]
    _port_forward_until_stopped(argv, verbose)


def _port_forward_until_stopped(argv: list[str], verbose: bool) -> None:
    """Run ``argv`` until it exits 0; restart it ``SESSION_RECONNECT_DELAY`` after a failure;
    SIGINT/SIGTERM stop it (and the child) and exit 0."""
    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    proc: subprocess.Popen[bytes] | None = None
    try:
        while True:
            if verbose:
                click.echo(f"Running: {' '.join(argv)}")
            proc = subprocess.Popen(argv)
            code = proc.wait()
            proc = None
            if code == 0:
                return
            why = f"exit status {code}" if code > 0 else f"signal: {(signal.strsignal(-code) or str(-code)).lower()}"
            click.echo(f"failed to port-forward: {why}. Retrying in {SESSION_RECONNECT_DELAY:g}s ...\n")
            time.sleep(SESSION_RECONNECT_DELAY)
    except KeyboardInterrupt:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# --- log -------------------------------------------------------------------------------------------

#: the Ray logs directory inside a Ray container (kubectl-plugin log.go filePathInPod)
RAY_LOGS_IN_POD = "/tmp/ray/session_latest/logs/"
_NODE_TYPE_MESSAGES = {"all": "Command set to retrieve both head and worker node logs.",
                       "head": "Command set to retrieve only head node logs.",
                       "worker": "Command set to retrieve only worker node logs."}


def log_selector(cluster: str, node_type: str) -> str:
    """The Pod label selector for ``--node-type``."""
    if node_type == "all":
        return f"ray.io/cluster={cluster}"
    return f"ray.io/node-type={node_type},ray.io/cluster={cluster}"


def gke_logs_link(namespace: str, cluster: str, node_type: str, context_name: str) -> tuple[str, bool]:
    """The Cloud Logging query URL for a cluster's Pods; the bool says whether the kubeconfig
    context looks like a GKE one (``gke_PROJECT_LOCATION_NAME``, whose project goes into the URL)."""
    lines = ['resource.type="k8s_container"', f'resource.labels.namespace_name="{namespace}"',
             f'labels."k8s-pod/ray_io/cluster"="{cluster}"']
    if node_type in ("head", "worker"):
        lines.append(f'labels."k8s-pod/ray_io/node-type"="{node_type}"')
    else:
        lines.append('labels."k8s-pod/ray_io/is-ray-node"="yes"')
    url = f"https://console.cloud.google.com/logs/query;query={quote_plus(chr(10).join(lines))}"
    if context_name.startswith("gke_"):
        project = context_name.split("_", 2)[1]
        return f"{url}?project={quote_plus(project)}", True
    return url, False


def extract_logs(archive: Path, dest: Path) -> list[str]:
    """Unpack the tar stream ``archive`` into ``dest``: directories and regular files only (links
    and special files are skipped, as kubectl-ray skips every other type), each member's name
    checked by :func:`_member_target`; a file's mode keeps its owner's bits, loses group and
    other write, and is at least 0o600 (tarfile's ``data`` filter's rule). Returns a line for each
    member skipped.

    The checks are our own, not ``tarfile.data_filter``: that exists only from CPython 3.11.4 on
    (Debian 12's 3.11.2 has none), and the behaviour must not depend on the interpreter.

    Mirrors: kuberay kubectl-plugin/pkg/cmd/log/log.go downloadRayLogFiles.

    Raises:
        RayCliError: the archive is not a tar stream, or a member would land outside ``dest``.
    """
    skipped = []
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(archive, mode="r:") as tar:
            for member in tar:
                if member.isdir():
                    _member_target(member.name, dest).mkdir(parents=True, exist_ok=True)
                elif member.isfile():
                    target = _member_target(member.name, dest)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    src = tar.extractfile(member)
                    assert src is not None
                    with open(target, "wb") as out:
                        shutil.copyfileobj(src, out, 1 << 20)
                    mode = member.mode & 0o755 | 0o600
                    os.chmod(target, mode if mode & 0o100 else mode & ~0o111)
                else:
                    skipped.append(f"Ignoring unsupported file type of {member.name}")
    except tarfile.ReadError as e:
        raise RayCliError(f"Error reading tar archive: {e}") from None
    return skipped


def _member_target(name: str, dest: Path) -> Path:
    """Where the tar member ``name`` lands under ``dest``: leading slashes dropped (an absolute name
    goes under ``dest``, as Go's filepath.Join puts it), the path resolved, symlinks already in
    ``dest`` included.

    Raises:
        RayCliError: the resolved path is outside ``dest`` (``..``, or a link in ``dest`` out of it).
    """
    root = os.path.realpath(dest)
    target = os.path.realpath(os.path.join(root, name.lstrip("/")))
    if os.path.commonpath([root, target]) != root:
        raise RayCliError(f"error while extracting tar file with error: {name!r} would be extracted "
                          f"to {target!r}, which is outside the destination")
    return Path(target)


async def download_node_logs(client: Client, pod: Obj, out_dir: Path) -> None:
    """The first container's log into ``out_dir/<pod>/stdout.log``, then the Ray logs directory
    through ``tar`` in that container, unpacked into ``out_dir/<pod>/`` (stderr of tar goes to
    stderr).

    Raises:
        RayCliError: the log or exec request failed, or tar did not produce an archive.
    """
    name, ns = pod["metadata"]["name"], pod["metadata"].get("namespace", "default")
    container = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("name")
    node_dir = out_dir / name
    fresh = not node_dir.exists()
    node_dir.mkdir(parents=True, exist_ok=True)
    try:
        with open(node_dir / "stdout.log", "wb") as f:
            async for chunk in client.logs(ns, name, container=container):
                f.write(chunk)
    except ApiError as e:
        # nothing was downloaded: leave no empty file or directory behind (e.g. the simulated runtime)
        with contextlib.suppress(OSError):
            (node_dir / "stdout.log").unlink()
            if fresh:
                node_dir.rmdir()
        raise RayCliError(f"Error retrieving log for Ray cluster node {name}: {_api_text(e)}") from None
    with tempfile.TemporaryFile() as archive:
        try:
            async for channel, data in client.exec(ns, name, ["tar", "--warning=no-file-changed", "-cf", "-", "-C",
                                                              RAY_LOGS_IN_POD, "."], container=container):
                if channel == 1:
                    archive.write(data)
                else:
                    sys.stderr.buffer.write(data)
                    sys.stderr.flush()
        except (ApiError, ExecError, ConnectionError) as e:
            raise RayCliError(f"Error occurred while calling remote command: {_api_text(e)}") from None
        archive.flush()
        click.echo(f"Downloading log for Ray Node {name}")
        archive.seek(0)
        with tempfile.NamedTemporaryFile() as named:
            shutil.copyfileobj(archive, named)
            named.flush()
            for line in extract_logs(Path(named.name), node_dir):
                click.echo(line)


def _current_context(kubeconfig: str | None, context: str | None) -> str:
    if context:
        return context
    from pumice.client.kubeconfig import default_kubeconfig_path

    path = Path(kubeconfig) if kubeconfig else default_kubeconfig_path()
    try:
        doc = yamlsafe.read_yaml_document(path) or {}
    except (OSError, InputFileError):
        return ""
    return str(doc.get("current-context") or "") if isinstance(doc, dict) else ""


async def _log_cluster_name(client: KubeClient, kind: str, name: str, namespace: str) -> str:
    if kind == "raycluster":
        return name
    what = "Ray job" if kind == "rayjob" else "Ray service"
    try:
        obj = await client.get(_KINDS[kind], name, namespace)
    except ApiError as e:
        raise RayCliError(f"failed to retrieve {what} info for {name}: {_api_text(e)}") from None
    st = obj.get("status") or {}
    if kind == "rayjob":
        return str(st.get("rayClusterName") or "")
    return str((st.get("activeServiceStatus") or {}).get("rayClusterName") or "")


@command.command(name="log")
@click.argument("resource")
@click.option("--out-dir", default="", help="Directory to save the logs to (default: ./<resource name>).")
@click.option("--node-type", default="all", show_default=True,
              help="Type of Ray node from which to download logs: all, head or worker.")
@click.option("--link", default="", help="Print a link to a cloud console to view the logs instead: gke.")
@_conn
def log(resource: str, out_dir: str, node_type: str, link: str, namespace: str, kubeconfig: str | None,
        context: str | None) -> None:
    """Download the Ray logs of RESOURCE's Pods (NAME or raycluster|rayjob|rayservice/NAME)."""
    try:
        kind, name = parse_resource(resource)
    except RayCliError as e:
        raise click.UsageError(str(e)) from None
    node_type = node_type.lower()
    if node_type not in _NODE_TYPE_MESSAGES:
        raise click.BadParameter('must be one of "all", "head", or "worker"', param_hint="--node-type")
    click.echo(_NODE_TYPE_MESSAGES[node_type])

    def fail(message: str) -> None:
        click.echo(f"Error: {message}", err=True)
        sys.exit(1)

    created_dir = False
    if link:
        if link != "gke":
            fail(f'unsupported link type "{link}", only "gke" is supported')
        if out_dir:
            fail("--out-dir is incompatible with --link")
    else:
        if not out_dir:
            click.echo("No output directory specified, creating dir under current directory using resource name.")
            out_dir = name
            created_dir = not os.path.exists(out_dir)
            try:
                os.makedirs(out_dir, exist_ok=True)
            except OSError as e:
                fail(f"could not create directory with cluster name {out_dir}: {e.strerror or e}")
        if not os.path.exists(out_dir):
            fail(f"Directory does not exist. Failed with: stat {out_dir}: no such file or directory")
        if not os.path.isdir(out_dir):
            fail("Path is not a directory. Please input a directory and try again")

    async def fn(client: KubeClient) -> None:
        cluster = await _log_cluster_name(client, kind, name, namespace)
        if link:
            heads = (await client.list(scheme.POD, namespace,
                                       label_selector=f"ray.io/node-type=head,ray.io/cluster={cluster}")).items
            containers = ((heads[0].get("spec") or {}).get("containers") or []) if heads else []
            if heads and not any(c.get("name") == "fluentbit" for c in containers):
                click.echo("Warning: The head pod does not have a 'fluentbit' container. Logs might not be "
                           "exported to Google Cloud Logging.", err=True)
            url, gke = gke_logs_link(namespace, cluster, node_type, _current_context(kubeconfig, context))
            if not gke:
                click.echo("Warning: The current kubectl context does not appear to be a GKE cluster. The generated "
                           "link may not work.", err=True)
            click.echo(url)
            return
        pods = (await client.list(scheme.POD, namespace, label_selector=log_selector(cluster, node_type))).items
        if not pods:
            if created_dir:
                with contextlib.suppress(OSError):
                    os.rmdir(out_dir)
            raise RayCliError(f"No Ray nodes found for resource {cluster}")
        assert isinstance(client, Client)
        try:
            for pod in pods:
                await download_node_logs(client, pod, Path(out_dir))
        except RayCliError:
            if created_dir:  # the directory made for this run, still empty: remove it
                with contextlib.suppress(OSError):
                    os.rmdir(out_dir)
            raise
    _run(kubeconfig, context, fn)


command.add_command(log, name="logs")


# --- version ---------------------------------------------------------------------------------------

KUBERAY_OPERATOR_SELECTOR = "app.kubernetes.io/name in (kuberay-operator,kuberay)"
PUMICE_OPERATOR_SELECTOR = "app.kubernetes.io/name=pumice-controller-manager"


def image_version(image: str) -> str:
    """The version part of an image reference: the tag (``latest`` when absent), ``tag@sha256:…``
    when both are given, the digest alone when only it is given.

    Mirrors: kubectl-plugin pkg/util/client/client.go GetKubeRayOperatorVersion.
    """
    ref, at, digest = image.partition("@")
    last = ref.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    if at and tag:
        return f"{tag}@{digest}"
    if at:
        return digest
    return tag or "latest"


async def operator_version(client: KubeClient) -> str:
    """``KubeRay operator version: …`` or upstream's warning when no operator Deployment is found
    (first KubeRay's labels, then pumice's own controller manager from ``pumice install``)."""
    for selector, prefix in ((KUBERAY_OPERATOR_SELECTOR, ""), (PUMICE_OPERATOR_SELECTOR, "pumice ")):
        items = (await client.list(scheme.DEPLOYMENT, None, label_selector=selector)).items
        if not items:
            continue
        containers = ((((items[0].get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
        if not containers:
            return ('warning: KubeRay operator installation cannot be found: no containers found in KubeRay operator '
                    'deployment. Did you install it with the name "kuberay-operator"?')
        return f"KubeRay operator version: {prefix}{image_version(str(containers[0].get('image') or ''))}"
    return ('warning: KubeRay operator installation cannot be found: no KubeRay operator deployments found in any '
            'namespace. Did you install it with the name "kuberay-operator"?')


@command.command(name="version")
@click.option("--context", default=None, help="Kubeconfig context.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help="Kubeconfig file.")
def version(kubeconfig: str | None, context: str | None) -> None:
    """Print pumice's version (the plugin's) and the KubeRay operator's."""
    from pumice import __version__

    click.echo(f"kubectl ray plugin version: pumice {__version__}")

    async def fn(client: KubeClient) -> None:
        try:
            click.echo(await operator_version(client))
        except ApiError as e:
            click.echo('warning: KubeRay operator installation cannot be found: failed to get KubeRay operator '
                       f'deployment: {_api_text(e)}. Did you install it with the name "kuberay-operator"?')
    _run(kubeconfig, context, fn)
