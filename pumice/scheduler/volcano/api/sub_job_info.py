"""SubJobInfo: one sub-group of a job (a ``subGroupPolicy`` match, or the job's default sub-job).

A PodGroup's ``spec.subGroupPolicy`` splits its Pods into sub-jobs: a Pod matching a policy's
``labelSelector`` and carrying every ``matchLabelKeys`` label joins the sub-job named by those
label values (``<job>/<policy>-<v1>-<v2>...``); every other Pod joins the default sub-job (uid =
the job's uid). Each sub-job has its own minimum (``subGroupSize``, default 1; the default
sub-job of a job without policies takes the job's ``minMember``) and its own
``networkTopology`` (the default sub-job inherits the job's). Sub-jobs of one policy share a
group id ``<job>/<policy>``; ``minSubGroups`` of them must be ready for the job to be.

Mirrors: volcano pkg/scheduler/api/sub_job_info.go (SubJobInfo, NewSubJobInfo,
getSubJobMatchValues, getSubJobGID, getSubJobID, IsReady/IsPipelined, GetMinResources,
ConvertToHardTopology) and job_info.go getOrCreateSubJob / getOrCreateDefaultSubJob.
Deviates: a sub-job id longer than 128 characters is shortened with a SHA-1 prefix (upstream:
FNV-32 then rand.SafeEncodeString).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pumice.api import Obj
from pumice.api.selectors import SelectorError, from_label_selector
from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import ALLOCATED_STATUSES, TaskStatus

_READY = (TaskStatus.Bound, TaskStatus.Binding, TaskStatus.Running, TaskStatus.Allocated, TaskStatus.Succeeded)


@dataclass
class NetworkTopology:
    """A ``spec.networkTopology`` as the session uses it (``mode`` hard|soft,
    ``highest_tier_allowed`` None when unset, ``highest_tier_name`` "" when unset).

    Mirrors: volcano-sh/apis scheduling/v1beta1 NetworkTopologySpec.
    """

    mode: str = "hard"
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""

    @classmethod
    def from_spec(cls, spec: Obj | None) -> NetworkTopology | None:
        if not spec:
            return None
        hta = spec.get("highestTierAllowed")
        return cls(str(spec.get("mode") or "hard"), int(hta) if hta is not None else None, str(spec.get("highestTierName") or ""))

    def copy(self) -> NetworkTopology:
        return NetworkTopology(self.mode, self.highest_tier_allowed, self.highest_tier_name)


@dataclass(eq=False)
class SubJobInfo:
    """A sub-job: ``gid`` the policy group (``<job>/<policy>``; the job uid for the default
    sub-job), ``uid`` its own id, ``job`` the owning job's uid."""

    gid: str
    uid: str
    job: str
    min_available: int = 1
    match_index: int = 0
    network_topology: NetworkTopology | None = None
    allocated_hypernode: str = ""
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    task_status_index: dict[TaskStatus, dict[str, TaskInfo]] = field(default_factory=dict)

    # ----- topology -----------------------------------------------------------------------
    def is_hard_topology_mode(self) -> tuple[bool, int]:
        nt = self.network_topology
        if nt is None or nt.highest_tier_allowed is None:
            return False, 0
        return nt.mode == "hard", nt.highest_tier_allowed

    def with_network_topology(self) -> bool:
        return self.network_topology is not None

    def convert_to_hard_topology(self, max_tier: int) -> None:
        """Soft mode becomes hard at ``max_tier`` (no HyperNode filtering below it)."""
        nt = self.network_topology
        if nt is None or nt.mode != "soft":
            return
        nt.mode = "hard"
        nt.highest_tier_allowed = max_tier
        nt.highest_tier_name = ""

    # ----- membership ---------------------------------------------------------------------
    @property
    def priority(self) -> int:
        return max((t.priority for t in self.tasks.values()), default=0)

    def add_task(self, t: TaskInfo) -> None:
        self.tasks[t.uid] = t
        self.task_status_index.setdefault(t.status, {})[t.uid] = t

    def delete_task(self, t: TaskInfo) -> None:
        self.tasks.pop(t.uid, None)
        bucket = self.task_status_index.get(t.status)
        if bucket is not None:
            bucket.pop(t.uid, None)
            if not bucket:
                del self.task_status_index[t.status]

    def move_task(self, t: TaskInfo, old: TaskStatus, new: TaskStatus) -> None:
        bucket = self.task_status_index.get(old)
        if bucket is not None:
            bucket.pop(t.uid, None)
            if not bucket:
                del self.task_status_index[old]
        self.task_status_index.setdefault(new, {})[t.uid] = t

    # ----- gang counters ------------------------------------------------------------------
    def ready_task_num(self) -> int:
        return sum(len(self.task_status_index.get(s, ())) for s in _READY)

    def waiting_task_num(self) -> int:
        return len(self.task_status_index.get(TaskStatus.Pipelined, ()))

    def pending_best_effort_task_num(self) -> int:
        return sum(1 for t in self.task_status_index.get(TaskStatus.Pending, {}).values() if t.best_effort)

    def allocated_task_num(self) -> int:
        return sum(len(b) for s, b in self.task_status_index.items() if s in ALLOCATED_STATUSES)

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_task_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_task_num() >= self.min_available

    def min_resources(self) -> Resource:
        """The summed request of the Pending tasks (a sub-job is placed whole)."""
        total = Resource()
        for t in self.task_status_index.get(TaskStatus.Pending, {}).values():
            total = total + t.resreq
        return total


def match_values(policy: Mapping[str, Any], labels: Mapping[str, str]) -> list[str] | None:
    """The values of ``policy``'s ``matchLabelKeys`` on a Pod with ``labels``; None when the Pod
    does not match the policy (selector mismatch, a key missing or empty); ``[]`` when the
    policy has no keys (then the Pod stays in the default sub-job, as upstream).

    Mirrors: sub_job_info.go getSubJobMatchValues.
    """
    sel = policy.get("labelSelector")
    if sel is not None:
        try:
            if not from_label_selector(sel).matches(labels):
                return None
        except SelectorError:
            return None
    keys = policy.get("matchLabelKeys") or []
    out: list[str] = []
    for k in keys:
        v = labels.get(k)
        if not v:
            return None
        out.append(str(v))
    return out


def sub_job_id(job: str, policy: str, values: list[str]) -> str:
    """``<job>/<policy>-<v1>-<v2>...`` (ids over 128 characters are hashed)."""
    ident = "-".join(values)
    if len(ident) > 128:
        ident = hashlib.sha1(ident.encode()).hexdigest()[:16]
    return f"{job}/{policy}-{ident}"


def new_sub_job(gid: str, uid: str, job: str, policy: Mapping[str, Any] | None, values: list[str] | None) -> SubJobInfo:
    """A sub-job from a policy (``subGroupSize`` -> minimum, ``networkTopology`` copied; the
    first match value, when an integer, orders sub-jobs)."""
    sji = SubJobInfo(gid=gid, uid=uid, job=job)
    if policy:
        if policy.get("subGroupSize") is not None:
            sji.min_available = int(policy["subGroupSize"])
        nt = policy.get("networkTopology")
        if isinstance(nt, NetworkTopology):
            sji.network_topology = nt.copy()
        elif nt:
            sji.network_topology = NetworkTopology.from_spec(nt)
    if values:
        try:
            sji.match_index = int(values[0])
        except ValueError:
            sji.match_index = 0
    return sji


def adjust_sub_job_topology(job: Any, hns: Any) -> None:
    """At session open, for a job with sub-group policies (its own topology already adjusted):
    translate each sub-job's ``highestTierName``, turn soft mode into hard at the job's tier
    limit (the root's tier when the job has none), and recover each topology sub-job's
    allocated HyperNode from the nodes its placed tasks run on.

    ``job`` is a :class:`JobInfo`, ``hns`` a :class:`HyperNodesInfo`.
    Mirrors: volcano session.go convertSoftToHardTopology, adjustNetworkTopologySpec and
    recoverAllocatedHyperNode (sub-job part).
    """
    top = hns.root.tier
    jnt = job.network_topology
    sub_max = jnt.highest_tier_allowed if jnt is not None and jnt.highest_tier_allowed is not None else top
    for sub in job.sub_jobs.values():
        nt = sub.network_topology
        if nt is None:
            continue
        if nt.highest_tier_name and nt.highest_tier_allowed is None:
            tier = hns.tier_names.get(nt.highest_tier_name)
            if tier is not None:
                nt.highest_tier_allowed = tier
                nt.highest_tier_name = ""
        sub.convert_to_hard_topology(sub_max)
        if sub.allocated_hypernode and sub.allocated_hypernode not in hns:
            sub.allocated_hypernode = ""
        if not sub.allocated_hypernode:
            placed = [t.node_name for s in ALLOCATED_STATUSES for t in sub.task_status_index.get(s, {}).values() if t.node_name]
            sub.allocated_hypernode = hns.lowest_containing(placed)
