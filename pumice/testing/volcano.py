"""Keyword builders and a scenario runner for Volcano scheduler tests.

Builders return wire dicts (the same shapes the API server stores), so one scenario can run
in-process (:func:`run_scenario`) or through ``pumice volcano session`` (:func:`write_manifests`).

    pod("p1", group="pg1", requests="1,1Gi")
    node("n1", allocatable="4,8Gi,pods=10")
    podgroup("pg1", min_member=3, queue="q1", phase="Inqueue")
    queue("q1", weight=1)

``requests``/``allocatable`` strings: ``"cpu,memory[,name=value...]"``; a dict is taken as is.

Mirrors: volcano pkg/scheduler/util/test_utils.go (BuildPod, BuildNode, BuildPodGroup,
BuildQueue) and pkg/scheduler/uthelper (TestCommonStruct).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pumice._util import goyaml
from pumice.api import Obj
from pumice.api.volcano.constants import KUBE_GROUP_NAME_ANNOTATION_KEY
from pumice.scheduler.volcano.cache.snapshot import SessionResult, build_snapshot, run_session
from pumice.scheduler.volcano.conf import (
    DEFAULT_SCHEDULER_CONF,
    PluginOption,
    SchedulerConfiguration,
    build_conf,
)

CREATED = "2024-01-01T00:00:00Z"
"""Builders stamp every object with this creation time unless told otherwise, as upstream's
builders leave it unset (equal) so ties fall through to UID order."""


def resource_list(spec: str | Mapping[str, Any] | None) -> Obj:
    """``"1,1Gi,pods=10,nvidia.com/gpu=1"`` -> ``{"cpu": "1", "memory": "1Gi", "pods": "10", ...}``."""
    if spec is None:
        return {}
    if isinstance(spec, Mapping):
        return {k: str(v) for k, v in spec.items()}
    out: Obj = {}
    positional = ["cpu", "memory"]
    for i, part in enumerate(p.strip() for p in spec.split(",") if p.strip()):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
        elif i < 2:
            out[positional[i]] = part
        else:
            raise ValueError(f"resource list {spec!r}: positional part {part!r} after cpu,memory")
    return out


def pod(
    name: str,
    *,
    namespace: str = "c1",
    group: str | None = None,
    requests: str | Mapping[str, Any] | None = None,
    node: str = "",
    phase: str = "Pending",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    priority: int | None = None,
    priority_class: str | None = None,
    role: str | None = None,
    preemptable: bool | None = None,
    tolerations: Sequence[Obj] | None = None,
    affinity: Obj | None = None,
    host_ports: Sequence[int] = (),
    init_requests: str | Mapping[str, Any] | None = None,
    scheduler_name: str = "volcano",
    created: str | None = CREATED,
    uid: str | None = None,
    deleting: bool = False,
    nominated_node: str | None = None,
    preemption_policy: str | None = None,
) -> Obj:
    """A Pod with one container (uid ``<ns>-<name>`` as upstream's BuildPod)."""
    ann = dict(annotations or {})
    if group:
        ann[KUBE_GROUP_NAME_ANNOTATION_KEY] = group
    lab = dict(labels or {})
    if role is not None:
        lab["volcano.sh/task-spec"] = role
    if preemptable is not None:
        lab["volcano.sh/preemptable"] = "true" if preemptable else "false"
    reqs = resource_list(requests)
    resources: Obj = {"requests": reqs}
    extended = {k: v for k, v in reqs.items() if "/" in k or k.startswith("hugepages-")}
    if extended:  # the API wants limits (equal to requests) for resources that cannot be overcommitted
        resources["limits"] = extended
    container: Obj = {"name": "main", "image": "busybox", "resources": resources}
    if host_ports:
        container["ports"] = [{"containerPort": p, "hostPort": p, "protocol": "TCP"} for p in host_ports]
    spec: Obj = {"schedulerName": scheduler_name, "containers": [container]}
    if init_requests is not None:
        spec["initContainers"] = [{"name": "init", "image": "busybox", "resources": {"requests": resource_list(init_requests)}}]
    if node:
        spec["nodeName"] = node
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if affinity:
        spec["affinity"] = affinity
    if preemption_policy:
        spec["preemptionPolicy"] = preemption_policy
    md: Obj = {"name": name, "namespace": namespace, "uid": uid or f"{namespace}-{name}", "labels": lab, "annotations": ann}
    if created:
        md["creationTimestamp"] = created
    if deleting:
        md["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    status: Obj = {"phase": phase}
    if nominated_node:
        status["nominatedNodeName"] = nominated_node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec, "status": status}


def node(
    name: str,
    allocatable: str | Mapping[str, Any] = "4,8Gi,pods=110",
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Obj] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
) -> Obj:
    """A Node with capacity = allocatable (upstream BuildNode)."""
    rl = resource_list(allocatable)
    spec: Obj = {}
    if taints:
        spec["taints"] = list(taints)
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": {
            "allocatable": rl,
            "capacity": dict(rl),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def podgroup(
    name: str,
    *,
    namespace: str = "c1",
    queue: str = "c1",
    min_member: int = 0,
    min_task_member: Mapping[str, int] | None = None,
    min_resources: str | Mapping[str, Any] | None = None,
    phase: str = "Inqueue",
    priority_class: str | None = None,
    annotations: Mapping[str, str] | None = None,
    created: str | None = CREATED,
    topology: str | None = None,
    tier: int | None = None,
    tier_name: str | None = None,
    allocated_hypernode: str | None = None,
    sub_groups: Sequence[Obj] = (),
) -> Obj:
    """A PodGroup; ``topology`` (``hard``/``soft``) with ``tier``/``tier_name`` sets
    ``spec.networkTopology``; ``allocated_hypernode`` the ``volcano.sh/job-allocated-hypernode``
    annotation; ``sub_groups`` the ``spec.subGroupPolicy`` entries (see :func:`sub_group`)."""
    spec: Obj = {"queue": queue, "minMember": min_member}
    if sub_groups:
        spec["subGroupPolicy"] = [dict(g) for g in sub_groups]
    if topology is not None:
        nt: Obj = {"mode": topology}
        if tier is not None:
            nt["highestTierAllowed"] = tier
        if tier_name is not None:
            nt["highestTierName"] = tier_name
        spec["networkTopology"] = nt
    if min_task_member:
        spec["minTaskMember"] = dict(min_task_member)
    if min_resources is not None:
        spec["minResources"] = resource_list(min_resources)
    if priority_class:
        spec["priorityClassName"] = priority_class
    md: Obj = {"name": name, "namespace": namespace, "annotations": dict(annotations or {})}
    if allocated_hypernode is not None:
        md["annotations"]["volcano.sh/job-allocated-hypernode"] = allocated_hypernode
    if created:
        md["creationTimestamp"] = created
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": md,
        "spec": spec,
        "status": {"phase": phase} if phase else {},
    }


def sub_group(
    name: str,
    match_label_keys: Sequence[str],
    *,
    size: int | None = 1,
    min_sub_groups: int | None = 0,
    topology: str | None = None,
    tier: int | None = None,
    selector: Mapping[str, str] | None = None,
) -> Obj:
    """A PodGroup ``subGroupPolicy`` entry (upstream BuildSubGroupPolicyWithMinSubGroups):
    Pods carrying every ``match_label_keys`` label form one sub-group per value combination of
    ``size`` (``subGroupSize``); ``topology``/``tier`` its own ``networkTopology``."""
    out: Obj = {"name": name, "matchLabelKeys": list(match_label_keys)}
    if size is not None:
        out["subGroupSize"] = size
    if min_sub_groups is not None:
        out["minSubGroups"] = min_sub_groups
    if selector is not None:
        out["labelSelector"] = {"matchLabels": dict(selector)}
    if topology:
        nt: Obj = {"mode": topology}
        if tier is not None:
            nt["highestTierAllowed"] = tier
        out["networkTopology"] = nt
    return out


def hypernode(
    name: str,
    tier: int,
    *,
    nodes: Sequence[str] = (),
    hypernodes: Sequence[str] = (),
    regex: str | None = None,
    labels_match: Mapping[str, str] | None = None,
    tier_name: str | None = None,
) -> Obj:
    """A HyperNode whose members are the named Nodes (exactMatch), the named HyperNodes, a
    node-name ``regex`` and/or a node ``labels_match`` selector."""
    members: list[Obj] = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": h}}} for h in hypernodes]
    if regex is not None:
        members.append({"type": "Node", "selector": {"regexMatch": {"pattern": regex}}})
    if labels_match is not None:
        members.append({"type": "Node", "selector": {"labelMatch": {"matchLabels": dict(labels_match)}}})
    spec: Obj = {"tier": tier, "members": members}
    if tier_name is not None:
        spec["tierName"] = tier_name
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name}, "spec": spec}


def queue(
    name: str,
    *,
    weight: int = 1,
    capability: str | Mapping[str, Any] | None = None,
    deserved: str | Mapping[str, Any] | None = None,
    guarantee: str | Mapping[str, Any] | None = None,
    reclaimable: bool | None = None,
    priority: int | None = None,
    parent: str | None = None,
    state: str = "Open",
    hierarchy: str | None = None,
    hierarchy_weights: str | None = None,
    created: str | None = CREATED,
) -> Obj:
    spec: Obj = {"weight": weight}
    if capability is not None:
        spec["capability"] = resource_list(capability)
    if deserved is not None:
        spec["deserved"] = resource_list(deserved)
    if guarantee is not None:
        spec["guarantee"] = {"resource": resource_list(guarantee)}
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    if priority is not None:
        spec["priority"] = priority
    if parent is not None:
        spec["parent"] = parent
    ann: Obj = {}
    if hierarchy:
        ann["volcano.sh/hierarchy"] = hierarchy
    if hierarchy_weights:
        ann["volcano.sh/hierarchy-weights"] = hierarchy_weights
    md: Obj = {"name": name, "annotations": ann}
    if created:
        md["creationTimestamp"] = created
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": md, "spec": spec, "status": {"state": state}}


def priority_class(name: str, value: int, *, global_default: bool = False) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value, "globalDefault": global_default}


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> Obj:
    return {"key": key, "value": value, "effect": effect}


def toleration(key: str, value: str | None = None, effect: str = "", operator: str | None = None) -> Obj:
    t: Obj = {"key": key, "operator": operator or ("Equal" if value is not None else "Exists")}
    if value is not None:
        t["value"] = value
    if effect:
        t["effect"] = effect
    return t


def plugin(name: str, arguments: Mapping[str, Any] | None = None, **switches: bool) -> PluginOption:
    """A plugin entry with exactly the given switches on (as upstream unit tests build tiers);
    ``plugin("gang", all=True)`` applies the loader defaults instead."""
    if switches.pop("all", False):
        return PluginOption.all_on(name, arguments, **switches)
    return PluginOption(name, dict(switches), dict(arguments or {}))


@dataclass
class Scenario:
    """One upstream-style case: objects, actions, tiers (lists of plugin names or options)."""

    objects: list[Obj]
    actions: Sequence[str]
    tiers: Sequence[Sequence[PluginOption | str]]
    configurations: Mapping[str, Mapping[str, Any]] | None = None

    def conf(self) -> SchedulerConfiguration:
        return build_conf(self.actions, self.tiers, self.configurations)


def run_scenario(
    objects: Iterable[Obj],
    *,
    actions: Sequence[str],
    tiers: Sequence[Sequence[PluginOption | str]],
    configurations: Mapping[str, Mapping[str, Any]] | None = None,
    vectorize: bool = True,
) -> SessionResult:
    """Run one session over ``objects`` in-process."""
    conf = build_conf(actions, tiers, configurations)
    return run_session(build_snapshot(list(objects)), conf, vectorize=vectorize)


def conf_yaml(actions: Sequence[str], tiers: Sequence[Sequence[PluginOption | str]], configurations: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The scenario's configuration as volcano-scheduler.conf text. Switches not set explicitly
    are written as false so the loader reproduces exactly the scenario's switches."""
    from pumice.scheduler.volcano.conf import SWITCH_KEYS

    doc: Obj = {"actions": ", ".join(actions), "tiers": []}
    for tier in tiers:
        plugins = []
        for p in tier:
            opt = PluginOption.all_on(p) if isinstance(p, str) else p
            entry: Obj = {"name": opt.name}
            for k in SWITCH_KEYS:
                entry[k] = bool(opt.switches.get(k, False))
            if opt.arguments:
                entry["arguments"] = dict(opt.arguments)
            plugins.append(entry)
        doc["tiers"].append({"plugins": plugins})
    if configurations:
        doc["configurations"] = [{"name": k, "arguments": dict(v)} for k, v in configurations.items()]
    return yaml.safe_dump(doc, sort_keys=False)


def write_manifests(directory: Path, objects: Iterable[Obj]) -> Path:
    """Write the objects as one multi-document YAML file in ``directory`` (file order = list order),
    as Go writes YAML (:func:`pumice._util.goyaml.dump`: a node named ``n`` is ``"n"``, which
    kubectl and pumice's readers take as a string)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "objects.yaml"
    path.write_text("---\n".join(goyaml.dump(o) for o in objects))
    return path


__all__ = [
    "Scenario",
    "conf_yaml",
    "hypernode",
    "node",
    "plugin",
    "pod",
    "podgroup",
    "priority_class",
    "queue",
    "resource_list",
    "run_scenario",
    "sub_group",
    "taint",
    "toleration",
    "write_manifests",
]


@dataclass
class Case:
    """An upstream-style expectation table row (uthelper TestCommonStruct).

    ``binds``: exact ``<ns>/<pod>`` -> node map (None = not checked); ``evictions``: multiset of
    ``<ns>/<pod>``; ``evict_num``: only the count; ``pipelined``: ``<ns>/<podgroup>`` -> allowed
    nodes (every pipelined task of that job must be on one of them); ``phases``:
    ``<ns>/<podgroup>`` -> phase after close.
    """

    name: str
    objects: list[Obj]
    actions: Sequence[str]
    tiers: Sequence[Sequence[PluginOption | str]]
    binds: Mapping[str, str] | None = None
    evictions: Sequence[str] | None = None
    evict_num: int | None = None
    pipelined: Mapping[str, Sequence[str]] | None = None
    phases: Mapping[str, str] | None = None
    configurations: Mapping[str, Mapping[str, Any]] | None = None

    def __str__(self) -> str:
        return self.name


def _job_of(objects: Iterable[Obj]) -> dict[str, str]:
    out = {}
    for o in objects:
        if o.get("kind") == "Pod":
            md = o["metadata"]
            g = (md.get("annotations") or {}).get(KUBE_GROUP_NAME_ANNOTATION_KEY)
            if g:
                out[f"{md['namespace']}/{md['name']}"] = f"{md['namespace']}/{g}"
    return out


def check_case(case: Case, out: Mapping[str, Any]) -> None:
    """Assert a session output (the ``pumice volcano session`` JSON shape) against ``case``.

    Raises:
        AssertionError: with the case name and the differing part.
    """
    if case.binds is not None:
        assert dict(out["binds"]) == dict(case.binds), f"{case.name}: binds {out['binds']} != {dict(case.binds)}"
    if case.evictions is not None:
        assert sorted(out["evictions"]) == sorted(case.evictions), f"{case.name}: evictions {out['evictions']} != {list(case.evictions)}"
    if case.evict_num is not None:
        assert len(out["evictions"]) == case.evict_num, f"{case.name}: {len(out['evictions'])} evictions, want {case.evict_num}"
    if case.pipelined is not None:
        job_of = _job_of(case.objects)
        for job, nodes in case.pipelined.items():
            got = {t: n for t, n in out["pipelined"].items() if job_of.get(t) == job}
            assert got, f"{case.name}: no task of {job} pipelined (pipelined: {out['pipelined']})"
            for t, n in got.items():
                assert n in nodes, f"{case.name}: {t} pipelined to {n}, want one of {list(nodes)}"
    if case.phases is not None:
        for job, phase in case.phases.items():
            got = out["podGroups"].get(job, {}).get("phase")
            assert got == phase, f"{case.name}: {job} phase {got}, want {phase}"


def run_case(case: Case, *, vectorize: bool = True) -> Obj:
    """Run ``case`` in-process; returns the CLI JSON shape."""
    return run_scenario(
        case.objects, actions=case.actions, tiers=case.tiers, configurations=case.configurations, vectorize=vectorize
    ).to_json()


__all__ += ["Case", "check_case", "run_case"]


def default_conf_with_actions(actions: str) -> str:
    """The built-in volcano-scheduler.conf (:data:`DEFAULT_SCHEDULER_CONF`) with another
    ``actions`` line, e.g. ``"enqueue, allocate, preempt, reclaim, backfill"``."""
    head, _, rest = DEFAULT_SCHEDULER_CONF.partition("\n")
    assert head.startswith("actions:"), head
    return f'actions: "{actions}"\n{rest}'
