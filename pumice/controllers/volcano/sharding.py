"""Sharding controller: split the Nodes between schedulers by CPU allocation, as NodeShards.

Configuration: ConfigMap ``volcano-system/volcano-sharding-configmap``, key ``sharding.yaml``:
``schedulerConfigs: [{name, type, cpuUtilizationMin, cpuUtilizationMax, preferWarmupNodes,
minNodes, maxNodes}]`` (the v1.14 form). A Node's utilisation is the CPU its bound, unfinished
Pods request over its allocatable. Schedulers are served in configured order: a scheduler takes
the unassigned Nodes whose utilisation lies in its range, warm-up Nodes first when it prefers them
(label ``node.volcano.sh/warmup=true``), then busiest first, then by name, up to ``maxNodes``; if
that is fewer than ``minNodes`` it tops up from the remaining Nodes nearest its range. Each
scheduler's NodeShard (named after it) gets ``spec.nodesDesired``; no Node is in two shards.

Mirrors: volcano pkg/controllers/sharding (v1.14 allocation-rate assignment, sharding.yaml).
Deviates: Nodes are reassigned on every change (no 50 % utilisation-change threshold), and the
hand-over bookkeeping (``nodesToAdd``/``nodesToRemove``) is left to the schedulers' status.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import yaml

from pumice.api import Obj, quantity
from pumice.api.volcano.constants import SHARD_API_VERSION, WARMUP_NODE_LABEL
from pumice.client.base import KubeClient, is_not_found
from pumice.runtime.reconcile import Request, Result

log = logging.getLogger(__name__)

CONFIG_MAP_NAME = "volcano-sharding-configmap"
CONFIG_MAP_NAMESPACE = "volcano-system"
CONFIG_KEY = "sharding.yaml"
SHARDING_REQUEST = Request("", "node-sharding")


@dataclass(frozen=True)
class SchedulerShardConfig:
    name: str
    type: str = "volcano"
    cpu_min: float = 0.0
    cpu_max: float = 1.0
    prefer_warmup: bool = False
    min_nodes: int = 0
    max_nodes: int = 1 << 30


def parse_config(text: str) -> list[SchedulerShardConfig]:
    """The scheduler configs of ``sharding.yaml``. Raises ValueError naming the bad field."""
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise ValueError(f"{CONFIG_KEY}: invalid YAML: {str(e).splitlines()[0]}") from e
    out = []
    for i, sc in enumerate(doc.get("schedulerConfigs") or []):
        if not isinstance(sc, dict) or not sc.get("name"):
            raise ValueError(f"{CONFIG_KEY}: schedulerConfigs[{i}].name: required")
        try:
            out.append(SchedulerShardConfig(
                str(sc["name"]), str(sc.get("type") or "volcano"), float(sc.get("cpuUtilizationMin", 0.0)),
                float(sc.get("cpuUtilizationMax", 1.0)), bool(sc.get("preferWarmupNodes", False)),
                int(sc.get("minNodes", 0)), int(sc.get("maxNodes", 1 << 30))))
        except (TypeError, ValueError) as e:
            raise ValueError(f"{CONFIG_KEY}: schedulerConfigs[{i}]: {e}") from e
    return out


def cpu_utilization(nodes: list[Obj], pods: list[Obj]) -> dict[str, float]:
    """Node name -> requested CPU of its bound, unfinished Pods over its allocatable CPU (both
    as int64 millicores, saturated: a ``1e400`` Node is nearly idle, not an OverflowError)."""
    used: dict[str, float] = {}
    for p in pods:
        n = (p.get("spec") or {}).get("nodeName")
        if not n or (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for c in (p.get("spec") or {}).get("containers") or []:
            req = ((c.get("resources") or {}).get("requests") or {}).get("cpu")
            if req is not None:
                used[n] = used.get(n, 0.0) + quantity.milli_value_int64(str(req)) / 1000.0
    out = {}
    for node in nodes:
        name = node["metadata"]["name"]
        alloc = ((node.get("status") or {}).get("allocatable") or {}).get("cpu")
        cap = quantity.milli_value_int64(str(alloc)) / 1000.0 if alloc is not None else 0.0
        out[name] = used.get(name, 0.0) / cap if cap > 0 else 1.0
    return out


def assign(nodes: list[Obj], pods: list[Obj], configs: list[SchedulerShardConfig]) -> dict[str, list[str]]:
    """Scheduler name -> its Nodes (sorted), no Node twice (pure; see the module docstring)."""
    util = cpu_utilization(nodes, pods)
    warm = {n["metadata"]["name"] for n in nodes if ((n["metadata"].get("labels") or {}).get(WARMUP_NODE_LABEL)) == "true"}
    free = sorted(util)
    out: dict[str, list[str]] = {}
    for sc in configs:
        in_range = [n for n in free if sc.cpu_min <= util[n] <= sc.cpu_max]
        in_range.sort(key=lambda n: (not (sc.prefer_warmup and n in warm), -util[n], n))
        take = in_range[:sc.max_nodes]
        if len(take) < sc.min_nodes:
            rest = sorted((n for n in free if n not in take),
                          key=lambda n: (min(abs(util[n] - sc.cpu_min), abs(util[n] - sc.cpu_max)), n))
            take += rest[:sc.min_nodes - len(take)]
        out[sc.name] = sorted(take)
        chosen = set(take)
        free = [n for n in free if n not in chosen]
    return out


class ShardingReconciler:
    """Writes every configured scheduler's NodeShard ``spec.nodesDesired``."""

    def __init__(self, client: KubeClient, nodes: Any, pods: Any, shards: Any, configmaps: Any) -> None:
        self.client = client
        self.nodes = nodes
        self.pods = pods
        self.shards = shards
        self.configmaps = configmaps

    async def reconcile(self, req: Request) -> Result:
        cm = self.configmaps.get(CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME)
        text = ((cm or {}).get("data") or {}).get(CONFIG_KEY)
        if not text:
            return Result()
        try:
            configs = parse_config(text)
        except ValueError as e:
            log.error("sharding config in ConfigMap %s/%s not loaded: %s", CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME, e)
            return Result()
        want = assign(self.nodes.list(), self.pods.list(), configs)
        for name, nodes in want.items():
            cur = self.shards.get("", name)
            if cur is None:
                await self.client.create({"apiVersion": SHARD_API_VERSION, "kind": "NodeShard", "metadata": {"name": name},
                                          "spec": {"nodesDesired": nodes}})
            elif (cur.get("spec") or {}).get("nodesDesired") != nodes:
                new = dict(cur)
                new["spec"] = {"nodesDesired": nodes}
                try:
                    await self.client.update(new)
                except Exception as e:
                    if not is_not_found(e):
                        raise
        return Result()


def is_sharding_config(cm: Obj) -> bool:
    md = cm.get("metadata") or {}
    return md.get("name") == CONFIG_MAP_NAME and md.get("namespace") == CONFIG_MAP_NAMESPACE


def sharding_configured(configmaps: Any) -> bool:
    """Whether the cache holds a sharding configuration (the ConfigMap with a non-empty
    ``sharding.yaml``). Without one a reconcile does nothing, so Node and Pod events need not
    enqueue: the ConfigMap's own create or update enqueues once it appears."""
    cm = configmaps.get(CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME)
    return bool(cm is not None and (cm.get("data") or {}).get(CONFIG_KEY))


__all__ = ["ShardingReconciler", "assign", "is_sharding_config", "parse_config", "sharding_configured"]
