"""Pure builders for what the vcjob controller creates: the PodGroup and the task Pods.

No client, clock or environment here; every function takes wire dicts and returns new ones.

Mirrors: volcano pkg/controllers/job/job_controller_util.go (createJobPod, TasksPriority,
CalcFirstCountResources, CalcPGMinResources) and job_controller_actions.go
(createOrUpdatePodGroup, getMinTaskMember, shouldUpdateExistingPodGroup, createPVC) and
pkg/controllers/job/helpers/helpers.go (GenPVCName, GenRandomStr).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from pumice.api import Obj
from pumice.api.meta import deep_copy, owner_reference
from pumice.api.volcano.constants import PARTITION_ID_LABEL
from pumice.controllers.volcano import keys
from pumice.controllers.volcano.job import resources as res


def pod_name(job_name: str, task_name: str, index: int) -> str:
    """``<job>-<task>-<index>`` (upstream PodNameFmt)."""
    return f"{job_name}-{task_name}-{index}"


#: the characters of upstream's GenRandomStr
_RANDOM_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"


def random_str(rng: random.Random, n: int = 12) -> str:
    """``n`` characters of ``[0-9a-z]`` drawn from ``rng`` (upstream GenRandomStr, which seeds
    from the wall clock; here the caller's seeded generator)."""
    return "".join(rng.choice(_RANDOM_CHARS) for _ in range(n))


def gen_pvc_name(job_name: str, rng: random.Random) -> str:
    """``<job>-pvc-<12 random [0-9a-z]>``, the name of a claim made for a volume of the Job that
    names none (upstream GenPVCName)."""
    return f"{job_name}-pvc-{random_str(rng)}"


def build_pvc(job: Obj, name: str, claim_spec: Obj) -> Obj:
    """The PersistentVolumeClaim ``name`` in the Job's namespace with the spec of a
    ``spec.volumes[].volumeClaim``, controlled by the Job (upstream createPVC)."""
    md = job["metadata"]
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": md.get("namespace", "default"),
                         "ownerReferences": [owner_reference(job)]},
            "spec": deep_copy(claim_spec)}


def pod_volume_name(job_name: str, namespace: str, pod: str, claim: str) -> str:
    """The name of a Pod's volume for the Job's claim ``claim``: ``<job>-<12 random [0-9a-z]>``
    as upstream createJobPod.

    Deviates: upstream draws the suffix from a clock-seeded generator for each Pod; here it is
    derived from the Pod's namespace, name and the claim, so a Pod made again gets the same one."""
    return f"{job_name}-{random_str(random.Random(f'{namespace}/{pod}/{claim}'))}"


def podgroup_name(job: Obj) -> str:
    """``<job>-<job uid>``."""
    return f"{job['metadata']['name']}-{job['metadata'].get('uid', '')}"


def tasks(job: Obj) -> list[Obj]:
    """The Job's ``spec.tasks`` (the list itself, not a copy: read it, never change it)."""
    ts = (job.get("spec") or {}).get("tasks")
    return ts if type(ts) is list else list(ts or [])


def total_replicas(job: Obj) -> int:
    return sum(int(t.get("replicas") or 0) for t in tasks(job))


def total_task_min_available(job: Obj) -> int:
    return sum(int(t["minAvailable"]) if t.get("minAvailable") is not None else int(t.get("replicas") or 0)
               for t in tasks(job))


def min_task_member(task: Obj) -> int:
    if task.get("minAvailable") is not None:
        return int(task["minAvailable"])
    pp = task.get("partitionPolicy") or {}
    if pp.get("minPartitions") and pp.get("partitionSize"):
        return int(pp["minPartitions"]) * int(pp["partitionSize"])
    return int(task.get("replicas") or 0)


def _sorted_by_priority(job: Obj, priority_of: Callable[[str], int | None]) -> list[Obj]:
    prio: list[tuple[int, int, Obj]] = []
    for i, t in enumerate(tasks(job)):
        pc = ((t.get("template") or {}).get("spec") or {}).get("priorityClassName") or ""
        p = (priority_of(pc) if pc else None) or 0
        prio.append((-p, i, t))
    return [t for _, _, t in sorted(prio, key=lambda x: (x[0], x[1]))]


def pg_min_resources(job: Obj, priority_of: Callable[[str], int | None] = lambda _: None) -> dict[str, str]:
    """The PodGroup's ``minResources``: the requests of the first ``minAvailable`` Pods, tasks
    walked highest template priority first (see reference §1.4.2).

    Remembered (a bounded table) by what it is computed from: ``minAvailable`` and, for each task
    in that order, its replicas, minAvailable and the requests of its Pod template's containers
    and init containers; the same shapes recur across the Jobs of a trace. Returns a new dict."""
    job_min = int((job.get("spec") or {}).get("minAvailable") or 0)
    ordered = _sorted_by_priority(job, priority_of)
    try:
        key: Any = (job_min, tuple((t.get("replicas"), t.get("minAvailable"),
                                    _requests_key((t.get("template") or {}).get("spec") or {})) for t in ordered))
        hit = _MIN_RESOURCES.get(key)
    except TypeError:  # an unhashable value somewhere (refused by validation): not remembered
        return _min_resources(job_min, ordered)
    if hit is None:
        if len(_MIN_RESOURCES) >= _MIN_RESOURCES_SIZE:
            _MIN_RESOURCES.clear()
        hit = _MIN_RESOURCES[key] = _min_resources(job_min, ordered)
    return dict(hit)


#: pg_min_resources' table: key -> minResources (cleared when it reaches the size)
_MIN_RESOURCES: dict[Any, dict[str, str]] = {}
_MIN_RESOURCES_SIZE = 4096


def _requests_key(pod_spec: Obj) -> Any:
    """Everything :func:`~pumice.controllers.volcano.job.resources.pod_requests` reads of a Pod
    spec, as a hashable tuple (TypeError when a value is not hashable). Each value goes with its
    type: ``True`` and ``1`` are equal keys but not equal quantities."""
    def reqs(c: Obj) -> tuple[tuple[str, type, Any], ...]:
        return tuple(sorted((k, type(v), v) for k, v in ((c.get("resources") or {}).get("requests") or {}).items()))

    return (tuple(reqs(c) for c in pod_spec.get("containers") or []),
            tuple((c.get("restartPolicy"), reqs(c)) for c in pod_spec.get("initContainers") or []))


def _min_resources(job_min: int, ordered: list[Obj]) -> dict[str, str]:
    """:func:`pg_min_resources` over the tasks in priority order; each task's requests are added
    as quotav1.Add does, so a name keeps the format of the first task that requests it (``1G``
    stays ``1G``, ``2e9`` stays ``2e9``)."""
    total: res.Res = {}
    fmts: res.Formats = {}

    def add(t: Obj, count: int) -> None:
        res.add_task(total, fmts, res.task_requests((t.get("template") or {}).get("spec") or {}, count))

    task_min_total = sum(int(t["minAvailable"]) if t.get("minAvailable") is not None else int(t.get("replicas") or 0)
                         for t in ordered)
    if job_min < task_min_total:
        count = job_min
        for t in ordered:
            reps = int(t.get("replicas") or 0)
            if count <= reps:
                add(t, count)
                break
            add(t, reps)
            count -= reps
        return res.fmt_in(total, fmts)
    pods = 0
    for t in ordered:
        if t.get("minAvailable") is None:
            continue
        valid = min(int(t["minAvailable"]), job_min - pods)
        add(t, valid)
        pods += valid
        if pods >= job_min:
            break
    if pods >= job_min:
        return res.fmt_in(total, fmts)
    left = job_min - pods
    for t in ordered:
        reps = int(t.get("replicas") or 0)
        rest = reps
        if t.get("minAvailable") is not None:
            if int(t["minAvailable"]) == reps:
                continue
            rest = reps - int(t["minAvailable"])
        n = min(left, rest)
        add(t, n)
        left -= n
        if left <= 0:
            break
    return res.fmt_in(total, fmts)


def network_topology(nt: Obj, *, both_tiers: bool) -> Obj:
    """The PodGroup ``networkTopology`` for a job's (or a partition policy's) ``networkTopology``:
    its ``mode`` and ``highestTierAllowed``, and ``highestTierName`` when set; for the job itself
    (``both_tiers=False``) the name only when no tier number is given, as upstream copies them.

    Mirrors: volcano job_controller_actions.go createOrUpdatePodGroup and getSubGroupPolicy.
    """
    out: Obj = {"mode": nt.get("mode")}
    if nt.get("highestTierAllowed") is not None:
        out["highestTierAllowed"] = nt["highestTierAllowed"]
        if not both_tiers:
            return out
    if nt.get("highestTierName"):
        out["highestTierName"] = nt["highestTierName"]
    return out


def scheduling_annotations(source: Mapping[str, str]) -> dict[str, str]:
    """The scheduling annotations a Pod or PodGroup takes from its job or Pod: preemptable,
    cooldown time, revocable zone, and the JDB minAvailable (or else maxUnavailable)."""
    out = {k: source[k] for k in (keys.POD_PREEMPTABLE, keys.COOLDOWN_TIME, keys.REVOCABLE_ZONE) if k in source}
    if keys.JDB_MIN_AVAILABLE in source:
        out[keys.JDB_MIN_AVAILABLE] = source[keys.JDB_MIN_AVAILABLE]
    elif keys.JDB_MAX_UNAVAILABLE in source:
        out[keys.JDB_MAX_UNAVAILABLE] = source[keys.JDB_MAX_UNAVAILABLE]
    return out


def sub_group_policy(task: Obj) -> Obj:
    """The PodGroup ``subGroupPolicy`` entry of a task with a ``partitionPolicy``: one sub-group
    per ``volcano.sh/partition-id`` value among the task's Pods.

    Mirrors: volcano pkg/controllers/job/job_controller_actions.go getSubGroupPolicy.
    """
    pp = task.get("partitionPolicy") or {}
    name = task.get("name", "")
    out: Obj = {
        "name": name,
        "subGroupSize": int(pp.get("partitionSize") or 0),
        "minSubGroups": int(pp.get("minPartitions") or 0),
        "labelSelector": {"matchLabels": {keys.TASK_SPEC_KEY: name}},
        "matchLabelKeys": [PARTITION_ID_LABEL],
    }
    nt = pp.get("networkTopology")
    if nt:
        out["networkTopology"] = network_topology(nt, both_tiers=True)
    return out


def build_podgroup(job: Obj, priority_of: Callable[[str], int | None] = lambda _: None, *,
                   spec: Obj | None = None) -> Obj:
    """The PodGroup of a vcjob, owned by it; annotations and labels copied from the job.

    ``spec``: :func:`podgroup_spec` of the job when the caller has it (copied, never changed)."""
    md = job["metadata"]
    meta: Obj = {
        "name": podgroup_name(job),
        "namespace": md.get("namespace", "default"),
        "ownerReferences": [owner_reference(job)],
    }
    if md.get("annotations"):
        meta["annotations"] = dict(md["annotations"])
    if md.get("labels"):
        meta["labels"] = dict(md["labels"])
    return {"apiVersion": keys.SCHEDULING_API_VERSION, "kind": "PodGroup", "metadata": meta,
            "spec": podgroup_spec(job, priority_of) if spec is None else deep_copy(spec)}


def podgroup_spec(job: Obj, priority_of: Callable[[str], int | None] = lambda _: None) -> Obj:
    """The spec of the vcjob's PodGroup (minMember, minTaskMember, queue, minResources,
    priorityClassName, networkTopology, subGroupPolicy)."""
    spec = job.get("spec") or {}
    pg_spec: Obj = {
        "minMember": int(spec.get("minAvailable") or 0),
        "minTaskMember": {t.get("name", ""): min_task_member(t) for t in tasks(job)},
        "queue": spec.get("queue") or keys.DEFAULT_QUEUE,
        "minResources": pg_min_resources(job, priority_of),
    }
    if spec.get("priorityClassName"):
        pg_spec["priorityClassName"] = spec["priorityClassName"]
    nt = spec.get("networkTopology")
    if nt:
        pg_spec["networkTopology"] = network_topology(nt, both_tiers=False)
    policies = [sub_group_policy(t) for t in tasks(job) if t.get("partitionPolicy")]
    if policies:
        pg_spec["subGroupPolicy"] = policies
    return pg_spec


def podgroup_spec_update(pg: Obj, job: Obj, priority_of: Callable[[str], int | None] = lambda _: None,
                         *, want: Obj | None = None) -> Obj | None:
    """A copy of the PodGroup with its spec brought in line with the job (minMember,
    minResources, minTaskMember, priorityClassName, subGroupPolicy), or None when nothing changes.

    ``want`` is :func:`podgroup_spec` of the job when the caller has it (read, never changed);
    the PodGroup is copied only when something changes."""
    if want is None:
        want = podgroup_spec(job, priority_of)
    spec = pg.get("spec") or {}
    changed: Obj = {}
    for k in ("minMember", "minResources", "priorityClassName"):
        if spec.get(k) != want.get(k) and not (k == "priorityClassName" and not spec.get(k) and not want.get(k)):
            changed[k] = want.get(k)
    mtm = spec.get("minTaskMember") or {}
    if any(mtm.get(t) != n for t, n in want["minTaskMember"].items()):
        changed["minTaskMember"] = {**mtm, **want["minTaskMember"]}
    if (spec.get("subGroupPolicy") or []) != (want.get("subGroupPolicy") or []):
        changed["subGroupPolicy"] = want.get("subGroupPolicy") or None
    if not changed:
        return None
    new = deep_copy(pg)
    nspec = new.setdefault("spec", {})
    for k in ("minMember", "minResources", "priorityClassName"):
        if k not in changed:
            continue
        if changed[k] is None:
            nspec.pop(k, None)
        else:
            nspec[k] = deep_copy(changed[k])
    nspec["minTaskMember"] = deep_copy(changed.get("minTaskMember", mtm))
    if "subGroupPolicy" in changed:
        if changed["subGroupPolicy"] is None:
            nspec.pop("subGroupPolicy", None)
        else:
            nspec["subGroupPolicy"] = deep_copy(changed["subGroupPolicy"])
    return new


def build_pod(job: Obj, task: Obj, index: int) -> Obj:
    """A task Pod ``<job>-<task>-<index>`` with the upstream labels and annotations (before job
    plugins run)."""
    md, spec = job["metadata"], job.get("spec") or {}
    status = job.get("status") or {}
    tmpl = deep_copy(task.get("template") or {})
    tname = task.get("name") or keys.DEFAULT_TASK_SPEC
    tmeta = tmpl.get("metadata") or {}
    pod_spec = tmpl.get("spec") or {}
    if not pod_spec.get("schedulerName"):
        pod_spec["schedulerName"] = spec.get("schedulerName") or keys.DEFAULT_SCHEDULER_NAME
    if not pod_spec.get("priorityClassName") and spec.get("priorityClassName"):
        pod_spec["priorityClassName"] = spec["priorityClassName"]
    ann = dict(tmeta.get("annotations") or {})
    idx = str(index)
    queue = spec.get("queue") or keys.DEFAULT_QUEUE
    ann.update({
        keys.TASK_INDEX: idx,
        keys.TASK_SPEC_KEY: tname,
        keys.KUBE_GROUP_NAME_ANNOTATION_KEY: podgroup_name(job),
        keys.JOB_NAME_KEY: md["name"],
        keys.QUEUE_NAME_KEY: queue,
        keys.JOB_VERSION: str(int(status.get("version") or 0)),
        keys.POD_TEMPLATE_KEY: f"{md['name']}-{tname}",
        keys.JOB_RETRY_COUNT_KEY: str(int(status.get("retryCount") or 0)),
    })
    if task.get("topologyPolicy"):
        ann[keys.NUMA_POLICY_KEY] = str(task["topologyPolicy"])
    ann.update(scheduling_annotations(md.get("annotations") or {}))
    labels = dict(tmeta.get("labels") or {})
    labels.update({
        keys.TASK_INDEX: idx,
        keys.JOB_NAME_KEY: md["name"],
        keys.TASK_SPEC_KEY: tname,
        keys.JOB_NAMESPACE_KEY: md.get("namespace", "default"),
        keys.QUEUE_NAME_KEY: queue,
    })
    jlabels = md.get("labels") or {}
    for k in (keys.POD_PREEMPTABLE, keys.COOLDOWN_TIME):
        if k in jlabels:
            labels[k] = jlabels[k]
    pp = task.get("partitionPolicy")
    if pp:
        size = int(pp.get("partitionSize") or 0)
        labels[PARTITION_ID_LABEL] = str(index // size if size > 0 else 0)
    volumes = spec.get("volumes")
    if volumes:
        _mount_job_volumes(pod_spec, volumes, md["name"], md.get("namespace", "default"),
                           pod_name(md["name"], tname, index))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(md["name"], tname, index),
            "namespace": md.get("namespace", "default"),
            "labels": labels,
            "annotations": ann,
            "ownerReferences": [owner_reference(job)],
        },
        "spec": pod_spec,
    }


def _mount_job_volumes(pod_spec: Obj, volumes: list[Obj], job_name: str, namespace: str, pod: str) -> None:
    """Add the Job's ``spec.volumes`` to ``pod_spec`` (changed in place): one
    ``persistentVolumeClaim`` volume per distinct ``volumeClaimName`` (named by
    :func:`pod_volume_name`), mounted at its ``mountPath`` in every container; a later volume
    naming a claim already added is skipped, mount included (upstream createJobPod). A volume
    without a claim name yet (the controller writes the generated one before it makes Pods) is
    mounted with an empty claim name, as upstream would."""
    added: set[str] = set()
    for vol in volumes:
        claim = str(vol.get("volumeClaimName") or "")
        if claim in added:
            continue
        added.add(claim)
        vname = pod_volume_name(job_name, namespace, pod, claim)
        pod_spec.setdefault("volumes", []).append({"name": vname, "persistentVolumeClaim": {"claimName": claim}})
        for c in pod_spec.get("containers") or []:
            c.setdefault("volumeMounts", []).append({"mountPath": vol.get("mountPath"), "name": vname})
